"""Simulation against reality, through churn: one scenario through ``kafka-rebalance simulate``
and through serve with real kafka-python consumers running our CooperativeStickyPartitionAssignor,
both on our coordinator. Four join together, one leaves, two join, one is killed without leaving,
the topic grows from 6 to 8 partitions. After each step: one owner per partition among the live
consumers, balanced, nobody traded partitions, and the same generations as the simulator's in
that step; at the end the same assignment as the simulator's, and every keyed record produced
before and during the churn consumed and committed. Steps are far enough apart (in both) that
each settles before the next; docs/clients.md says what timing makes them differ."""

from __future__ import annotations

import pytest

pytest.importorskip("kio")
kafka = pytest.importorskip("kafka")

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic  # noqa: E402

from kafka_rebalance.serve import Broker  # noqa: E402
from kafka_rebalance.sim import load_scenario, run_simulation  # noqa: E402
from tests.serve.workers.harness import Worker, assignments, settled, start, wait_until  # noqa: E402

pytestmark = pytest.mark.broker
TOPIC, GROUP, PARTITIONS, GROWN = "orders", "sim-vs-serve", 6, 8
DELAY_MS = 1000  # group.initial.rebalance.delay.ms, in both
# A poll longer than any join here, so kafka-python 3.0.12 never drops a finished join (it does
# when the join ends between polls: docs/clients.md), which on Kafka's rules costs a generation.
CONFIG = {"session_ms": 6000, "heartbeat_ms": 500, "poll_ms": 3000}
STEP_TIMEOUT_S = 30
QUIET_S = 1.5
STEP_MS = 30000  # the simulator's steps, this far apart
# (step, change made at its start); the changes as the simulator's events, below
STEPS = ("consumer1-4 join", "consumer2 leaves", "consumer5, consumer6 join", "consumer3 killed", "orders grows to 8")


def _generations(workers: list[Worker]) -> set[int]:
    return {g for w in workers for g in w.generations if g >= 0}


def _traded(before: dict[str, list[int]], after: dict[str, list[int]]) -> list[str]:
    """Consumers that both gained and lost partitions in one step (cooperative moves only give
    away or take, never both)."""
    return [name for name, parts in after.items()
            if name in before and not (set(before[name]) <= set(parts) or set(parts) <= set(before[name]))]


def _produce(producer: KafkaProducer, count: int, first: int) -> list[tuple[int, int]]:
    sent = [producer.send(TOPIC, key=f"key-{(first + i) % 37}".encode(), value=str(first + i).encode()) for i in range(count)]
    producer.flush()
    return [(meta.partition, meta.offset) for meta in (future.get(10) for future in sent)]


def _real() -> tuple[list[list[int]], dict[str, list[int]]]:
    """Per step, the generations the members saw; and the final assignment by client id. Checks
    stickiness after every step, and every record consumed and committed at the end."""
    with Broker(group_initial_rebalance_delay_ms=DELAY_MS) as served:
        admin = KafkaAdminClient(bootstrap_servers=served.bootstrap, request_timeout_ms=5000)
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        producer = KafkaProducer(bootstrap_servers=served.bootstrap)
        produced = _produce(producer, 60, 0)
        base = {"bootstrap": served.bootstrap, "group": GROUP, "topic": TOPIC, "assignor": "ours-cooperative-sticky", **CONFIG}
        everyone: dict[str, Worker] = {}

        def join(*names: str) -> list[Worker]:
            made = [Worker("kafka-python", {**base, "client_id": name}) for name in names]
            everyone.update((w.name, w) for w in made)
            start(made)
            return made

        steps: list[list[int]] = []
        try:
            live = join("consumer1", "consumer2", "consumer3", "consumer4")
            partitions, before = PARTITIONS, {}
            for step in STEPS:
                now = settled(live, partitions, QUIET_S, STEP_TIMEOUT_S)
                assert now is not None, (step, assignments(live))
                assert not _traded(before, now), (step, before, now)
                steps.append(sorted(_generations(list(everyone.values())) - {g for seen in steps for g in seen}))
                before = now
                produced += _produce(producer, 30, 30 + 30 * len(steps))
                if step == "consumer1-4 join":
                    everyone["consumer2"].close()
                    live.remove(everyone["consumer2"])
                elif step == "consumer2 leaves":
                    live += join("consumer5", "consumer6")
                elif step == "consumer5, consumer6 join":
                    everyone["consumer3"].kill()
                    live.remove(everyone["consumer3"])
                elif step == "consumer3 killed":
                    admin.create_partitions({TOPIC: NewPartitions(GROWN)})
                    partitions = GROWN
            final = assignments(live)
            consumed = lambda: {r for w in everyone.values() for r in list(w.records)}  # noqa: E731
            assert wait_until(lambda: set(produced) <= consumed(), STEP_TIMEOUT_S), \
                f"{len(set(produced) - consumed())} records never consumed"
            _assert_committed(served.bootstrap, produced)
        finally:
            for w in everyone.values():
                w.kill()
            producer.close()
            admin.close()
    return steps, final


def _assert_committed(bootstrap: str, produced: list[tuple[int, int]]) -> None:
    ends: dict[int, int] = {}
    for partition, offset in produced:
        ends[partition] = max(ends.get(partition, -1), offset + 1)
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    try:
        committed: dict[int, int | None] = {}

        def caught_up() -> bool:
            committed.update({p: reader.committed(TopicPartition(TOPIC, p)) for p in ends})
            return committed == ends
        assert wait_until(caught_up, 15, step_s=0.5), (committed, ends)
    finally:
        reader.close()


def _simulated() -> tuple[list[list[int]], dict[str, list[int]]]:
    consumers = [{"id": f"consumer{i}", "strategies": ["cooperative-sticky"], "subscribe": [TOPIC]} for i in range(1, 7)]
    events = [{"at_ms": 0, "join": f"consumer{i}"} for i in (1, 2, 3, 4)]
    events += [{"at_ms": STEP_MS, "leave": "consumer2"},
               {"at_ms": 2 * STEP_MS, "join": "consumer5"}, {"at_ms": 2 * STEP_MS, "join": "consumer6"},
               {"at_ms": 3 * STEP_MS, "crash": "consumer3"},
               {"at_ms": 4 * STEP_MS, "add_partitions": {"topic": TOPIC, "count": GROWN}}]
    scenario = {
        "name": "sim-vs-serve", "group": GROUP, "topics": {TOPIC: PARTITIONS}, "consumers": consumers, "events": events,
        "end_ms": 5 * STEP_MS, "seed": 1,
        # As the real consumers and broker are configured (kafka_python_worker.py, Broker above).
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 30000,
                   "metadata_max_age_ms": 1000, "enable_auto_commit": False, "group_initial_rebalance_delay_ms": DELAY_MS},
    }
    result = run_simulation(load_scenario(scenario), None).to_json()
    bounds = [*range(0, len(STEPS) * STEP_MS, STEP_MS), 10**9]
    steps = [sorted(r["generation"] for r in result["rebalances"] if lo <= r["start_ms"] < hi)
             for lo, hi in zip(bounds, bounds[1:], strict=False)]
    final = {m: sorted(int(p.rsplit("-", 1)[1]) for p in parts) for m, parts in result["final_assignment"].items() if parts}
    return steps, final


def test_the_simulator_and_serve_agree_through_churn():
    real_steps, real_final = _real()
    sim_steps, sim_final = _simulated()
    assert real_final == sim_final, (real_final, sim_final)
    assert real_steps == sim_steps, (real_steps, sim_steps)
