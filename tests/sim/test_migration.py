"""A rolling upgrade in the simulator: a running classic group whose consumers are restarted one
by one with group.protocol=consumer (``upgrade`` events). Facts from Kafka's
GroupMetadataManagerTest (group-coordinator/src/test/java/org/apache/kafka/coordinator/group/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.protocol.logrecords import (
    AssignmentReceived,
    ConsumerGroupConverted,
    ConsumerGroupEpochBumped,
    ConsumerMemberAssignmentUpdated,
    PreparingRebalance,
)
from kafka_rebalance.sim import load_scenario, run_simulation
from kafka_rebalance.sim.logwriter import log_lines
from tests.sim.helpers import never_two_owners

EXAMPLE = Path(__file__).resolve().parents[2] / "examples/scenarios/consumer-groups/rolling-upgrade.yaml"


def upgrade(strategy: str = "cooperative-sticky", after_ms: int = 5000, ms_per_record: float = 0,
            **fields: Any) -> Any:
    names = ["a", "b", "c"]
    return load_scenario({
        "name": "upgrade", "group": "g", "group_protocol": "classic", "assignor": "uniform", "topics": {"t": 12},
        "consumers": [{"id": n, "subscribe": ["t"], "strategies": [strategy], "processing_ms_per_record": ms_per_record}
                      for n in names],
        "produce": [{"topic": "t", "records_per_s": 120, "keys": 100}],
        "events": [{"at_ms": i * 100, "join": n} for i, n in enumerate(names)]
        + [{"at_ms": 30000 * (i + 1), "upgrade": n, "after_ms": after_ms} for i, n in enumerate(names)],
        "end_ms": 140000, **fields,
    })


def records(run: Any, kind: type) -> list[Any]:
    return [logged.record for logged in run.log_records if isinstance(logged.record, kind)]


def test_first_consumer_heartbeat_converts_the_classic_group() -> None:
    """GroupMetadataManagerTest.testConsumerGroupHeartbeatWithStableClassicGroup: the first
    ConsumerGroupHeartbeat to a stable classic group converts it (convertToConsumerGroup): the
    group epoch starts at the classic generation and the joining member bumps it once; the
    members still on the classic protocol stay in the group and reconcile (their JoinGroup is
    their heartbeat). At the end every consumer runs the consumer protocol, the group is Stable,
    no partition ever had two owners, nothing was lost, and there was no stop-the-world after
    the conversion."""
    run = run_simulation(upgrade())
    result = run.to_json()
    [converted] = records(run, ConsumerGroupConverted)
    classic_generation = max(r.generation for r in records(run, AssignmentReceived) if r.time_ms <= converted.time_ms)
    first_bump = min(records(run, ConsumerGroupEpochBumped), key=lambda r: r.time_ms)
    assert first_bump.time_ms == converted.time_ms and first_bump.epoch == classic_generation + 1
    classic_ids = {a.member_id for r in records(run, AssignmentReceived) for a in r.assignment}
    reconciled = {r.member_id for r in records(run, ConsumerMemberAssignmentUpdated) if r.member_id in classic_ids}
    assert reconciled, "classic members reconcile inside the consumer group"
    assert run.final_group_state == "Stable"
    assert sorted(m.member for m in run.final_assignment if m.partitions) == ["a", "b", "c"]
    assert sorted(p for m in run.final_assignment for p in m.partitions) == sorted(f"t-{p}" for p in range(12))
    never_two_owners(result)
    assert result["metrics"]["records_lost"] == 0 and run.ownership_conflicts == 0
    protocols = [r["protocol"] for r in result["rebalances"]]
    assert protocols[0] == "COOPERATIVE" and protocols[-1] == "CONSUMER"
    assert all(r["stop_the_world_partition_ms"] == 0 for r in result["rebalances"] if r["protocol"] == "CONSUMER")


def test_eager_group_upgraded_during_its_rebalance() -> None:
    """GroupMetadataManagerTest.testConsumerGroupHeartbeatWithPreparingRebalanceClassicGroup: the
    consumer-protocol member arrives while the classic group rebalances (a's LeaveGroup started it
    and slow members have not rejoined): the pending JoinGroups are answered REBALANCE_IN_PROGRESS
    and those members rejoin the consumer group as classic members; the run ends Stable with
    every partition owned once."""
    run = run_simulation(upgrade(strategy="range", after_ms=0, ms_per_record=40))
    [converted] = records(run, ConsumerGroupConverted)
    prepared = [r.time_ms for r in records(run, PreparingRebalance)]
    assigned = [r.time_ms for r in records(run, AssignmentReceived)]
    last_prepare = max(t for t in prepared if t <= converted.time_ms)
    assert not [t for t in assigned if last_prepare <= t <= converted.time_ms], "converted mid-rebalance"
    assert run.final_group_state == "Stable"
    assert sorted(p for m in run.final_assignment for p in m.partitions) == sorted(f"t-{p}" for p in range(12))
    never_two_owners(run.to_json())


def test_mixed_run_writes_both_coordinators_lines() -> None:
    """The broker log of a rolling upgrade: the classic group's lines, then the consumer group's
    (Kafka 4.x's new group coordinator writes both)."""
    lines = log_lines(run_simulation(upgrade()), "modern")
    assert any("Preparing to rebalance group g" in line for line in lines)
    assert any("Computed a new target assignment for epoch" in line for line in lines)


def test_example_rolling_upgrade_runs() -> None:
    """examples/scenarios/consumer-groups/rolling-upgrade.yaml: six consumers upgraded one by one."""
    run = run_simulation(load_scenario(EXAMPLE.read_text()))
    assert run.final_group_state == "Stable"
    assert run.to_json()["metrics"]["records_lost"] == 0
    never_two_owners(run.to_json())


@pytest.mark.parametrize(("fields", "field"), [
    ({"group_protocol": "consumer"}, "events[3].upgrade"),
    ({"events": [{"at_ms": 0, "upgrade": "nobody"}]}, "events[0].upgrade"),
])
def test_bad_upgrade_events_name_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as error:
        upgrade(**fields)
    assert error.value.field == field


NAMES = ["c1", "c2", "c3", "c4"]


@settings(max_examples=25, deadline=None)
@given(st.permutations(NAMES), st.lists(st.integers(0, 90000), min_size=4, max_size=4),
       st.lists(st.tuples(st.integers(0, 150000), st.sampled_from(["crash", "restart", "join"]),
                          st.sampled_from(NAMES)), max_size=5),
       st.sampled_from(["range", "cooperative-sticky"]), st.sampled_from(["uniform", "range"]),
       st.sampled_from([0.0, 2.0]))
def test_random_rolling_upgrades_keep_the_invariants(order: list[str], times: list[int],
                                                     churn: list[tuple[int, str, str]], strategy: str,
                                                     assignor: str, cost: float) -> None:
    """Every consumer upgraded once, in any order and at any time, with crashes, restarts and
    joins in between (policy ``upgrade``: Kafka keeps the consumer group, no downgrade): a
    partition never has two owners, no record is lost, and after a quiet period the group is
    Stable with every partition owned by exactly one member."""
    events: list[dict[str, Any]] = [{"at_ms": 0, "join": n} for n in NAMES]
    events += [{"at_ms": 20000 + t, "upgrade": n, "after_ms": 3000} for n, t in zip(order, sorted(times), strict=True)]
    events += [{"at_ms": at, kind: n} | ({"after_ms": 5000} if kind == "restart" else {}) for at, kind, n in churn]
    events += [{"at_ms": 200000, "join": n} for n in NAMES]  # whoever crashed comes back
    run = run_simulation(load_scenario({
        "name": "random-upgrade", "group": "g", "group_protocol": "classic", "assignor": assignor,
        "topics": {"t0": 5, "t1": 3},
        "consumers": [{"id": n, "subscribe": ["t0", "t1"], "strategies": [strategy],
                       "processing_ms_per_record": cost} for n in NAMES],
        "config": {"revocation_ms": 200, "network_jitter_ms": 3, "migration_policy": "upgrade"},
        "produce": [{"topic": "t0", "records_per_s": 50, "keys": 40}, {"topic": "t1", "records_per_s": 20, "keys": 20}],
        "events": events, "end_ms": 400000,
    }))
    result = run.to_json()
    # Converted once, or (everyone gone before the first upgraded consumer came back) the empty
    # classic group simply replaced (GroupMetadataManagerTest.testConsumerGroupHeartbeatWithEmptyClassicGroup).
    assert len(records(run, ConsumerGroupConverted)) <= 1
    assert any(isinstance(r.record, ConsumerGroupEpochBumped) for r in run.log_records)
    assert run.ownership_conflicts == 0
    never_two_owners(result)
    assert result["metrics"]["records_lost"] == 0
    assert run.final_group_state == "Stable"
    owned = sorted(p for parts in result["final_assignment"].values() for p in parts)
    assert owned == sorted([f"t0-{i}" for i in range(5)] + [f"t1-{i}" for i in range(3)])
