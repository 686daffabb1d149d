"""Simulation against reality (issue 34): one scenario (three join together, one leaves, two
join) through ``kafka-rebalance simulate`` and through serve with real kafka-python consumers
(our CooperativeStickyPartitionAssignor), both on our coordinator: the same rebalances per step,
the same generations, the same final assignment. Steps are far enough apart (in both) that each
settles before the next; docs/clients.md says what timing makes them differ."""

from __future__ import annotations

import pytest

pytest.importorskip("kio")
kafka = pytest.importorskip("kafka")

from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from kafka_rebalance.serve import Broker  # noqa: E402
from kafka_rebalance.sim import load_scenario, run_simulation  # noqa: E402
from tests.serve.workers.harness import Worker, assignments, settled, start  # noqa: E402

pytestmark = pytest.mark.broker
TOPIC, GROUP, PARTITIONS = "orders", "sim-vs-serve", 6
DELAY_MS = 1000  # group.initial.rebalance.delay.ms, in both
# A poll longer than any join here, so kafka-python 3.0.12 never drops a finished join (it does
# when the join ends between polls: docs/clients.md), which on Kafka's rules costs a generation.
CONFIG = {"session_ms": 6000, "heartbeat_ms": 500, "poll_ms": 3000}
STEP_TIMEOUT_S = 20
QUIET_S = 1.5


def _generations(workers: list[Worker]) -> set[int]:
    return {g for w in workers for g in w.generations if g >= 0}


def _real() -> tuple[list[list[int]], dict[str, list[int]]]:
    """Per step, the generations the members saw; and the final assignment by client id."""
    with Broker(group_initial_rebalance_delay_ms=DELAY_MS) as served:
        admin = KafkaAdminClient(bootstrap_servers=served.bootstrap, request_timeout_ms=5000)
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        admin.close()
        base = {"bootstrap": served.bootstrap, "group": GROUP, "topic": TOPIC, "assignor": "ours-cooperative-sticky", **CONFIG}
        everyone: list[Worker] = []

        def workers(*names: str) -> list[Worker]:
            made = [Worker("kafka-python", {**base, "client_id": name}) for name in names]
            everyone.extend(made)
            start(made)
            return made

        steps: list[list[int]] = []
        try:
            live = workers("consumer1", "consumer2", "consumer3")
            for change in ("leave", "join", None):
                assert settled(live, PARTITIONS, QUIET_S, STEP_TIMEOUT_S), assignments(live)
                steps.append(sorted(_generations(everyone) - {g for step in steps for g in step}))
                if change == "leave":
                    live[1].close()
                    live.remove(live[1])
                elif change == "join":
                    live += workers("consumer4", "consumer5")
            final = assignments(live)
        finally:
            for w in everyone:
                w.kill()
    return steps, final


def _simulated() -> tuple[list[list[int]], dict[str, list[int]]]:
    consumers = [{"id": f"consumer{i}", "strategies": ["cooperative-sticky"], "subscribe": [TOPIC]} for i in range(1, 6)]
    events = [{"at_ms": 0, "join": f"consumer{i}"} for i in (1, 2, 3)]
    events += [{"at_ms": 30000, "leave": "consumer2"}, {"at_ms": 60000, "join": "consumer4"}, {"at_ms": 60000, "join": "consumer5"}]
    scenario = {
        "name": "sim-vs-serve", "group": GROUP, "topics": {TOPIC: PARTITIONS}, "consumers": consumers, "events": events,
        "end_ms": 90000, "seed": 1,
        # As the real consumers and broker are configured (kafka_python_worker.py, Broker above).
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 30000,
                   "metadata_max_age_ms": 1000, "enable_auto_commit": False, "group_initial_rebalance_delay_ms": DELAY_MS},
    }
    result = run_simulation(load_scenario(scenario), None).to_json()
    bounds = [0, 30000, 60000, 10**9]
    steps = [sorted(r["generation"] for r in result["rebalances"] if lo <= r["start_ms"] < hi)
             for lo, hi in zip(bounds, bounds[1:], strict=False)]
    final = {m: sorted(int(p.rsplit("-", 1)[1]) for p in parts) for m, parts in result["final_assignment"].items() if parts}
    return steps, final


def test_the_simulator_and_serve_agree_on_rebalances_generations_and_the_final_assignment():
    real_steps, real_final = _real()
    sim_steps, sim_final = _simulated()
    assert real_final == sim_final, (real_final, sim_final)
    assert real_steps == sim_steps, (real_steps, sim_steps)
