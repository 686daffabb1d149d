"""A coordinator failover during an online migration: the new coordinator replays the group from
``__consumer_offsets``. A classic group (before the conversion, or after a downgrade) reloads from
its GroupMetadata and offset records; a consumer group, its classic members included, from the
consumer group's records, then arms every member's session timeout (Kafka's
GroupMetadataManager.onLoaded, GroupMetadataManagerTest.testOnLoaded)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.protocol.logrecords import (
    ConsumerGroupConverted,
    ConsumerGroupLoaded,
    ConsumerMemberFenced,
    MemberFailed,
)
from kafka_rebalance.sim import load_scenario, run_simulation
from kafka_rebalance.sim.consumer_group import ConsumerGroupSide
from tests.sim.helpers import settled_without_loss

NAMES = ["c1", "c2", "c3", "c4"]


def rolling_upgrade(failovers: list[int], strategy: str = "cooperative-sticky", downgrade: bool = False,
                    cost: float = 1.0) -> dict[str, Any]:
    events: list[dict[str, Any]] = [{"at_ms": i * 500, "join": n} for i, n in enumerate(NAMES)]
    events += [{"at_ms": 30000 + 20000 * i, "upgrade": n, "after_ms": 5000} for i, n in enumerate(NAMES)]
    if downgrade:
        events += [{"at_ms": 130000 + 20000 * i, "downgrade": n, "after_ms": 5000} for i, n in enumerate(NAMES)]
    events += [{"at_ms": at, "coordinator_failover": {}} for at in failovers]
    return {
        "name": "upgrade-failover", "group": "g", "group_protocol": "classic", "assignor": "uniform",
        "topics": {"t": 8},
        "consumers": [{"id": n, "subscribe": ["t"], "strategies": [strategy], "processing_ms_per_record": cost}
                      for n in NAMES],
        "config": {"revocation_ms": 200, "assignment_ms": 100},
        "produce": [{"topic": "t", "records_per_s": 200, "keys": 80}],
        "events": events, "end_ms": 260000 if downgrade else 180000,
    }


def records(run: Any, kind: type) -> list[Any]:
    return [logged.record for logged in run.log_records if isinstance(logged.record, kind)]


def rebalances(run: Any) -> list[tuple[Any, ...]]:
    return [(r.generation, r.protocol_label, tuple(sorted(r.members))) for r in run.rebalances]


def check_invariants(run: Any) -> None:
    settled_without_loss(run, NAMES)


def test_a_mixed_group_reloaded_by_a_new_coordinator_does_not_rebalance() -> None:
    """Mid-upgrade (c1 on the consumer protocol, c2-c4 classic members of the consumer group), the
    coordinator moves: the new one logs "Loaded consumer group g with 4 members." (onLoaded) and
    the group goes on exactly as without the failover: same rebalances, nobody fenced, the classic
    members keep their member ids and epochs."""
    quiet = ConsumerGroupSide(load_scenario(rolling_upgrade([])))
    baseline = quiet.run()
    moved = ConsumerGroupSide(load_scenario(rolling_upgrade([42000])))
    run = moved.run()
    [loaded] = records(run, ConsumerGroupLoaded)
    assert (loaded.time_ms, loaded.members) == (42000 + run.scenario.config.coordinator_load_ms, 4)
    assert rebalances(run) == rebalances(baseline)
    assert not records(run, ConsumerMemberFenced) and not records(run, MemberFailed)
    assert {logged.broker_id for logged in run.log_records if logged.record.time_ms > 42000} == {
        (quiet.broker + 1) % run.scenario.config.brokers}
    check_invariants(run)


def test_a_classic_group_reloaded_before_the_conversion_then_converts() -> None:
    """Before the first ConsumerGroupHeartbeat the group is classic: the new coordinator loads it
    from its GroupMetadata record (Stable, same generation, members and assignments), so no
    rebalance; the upgrade then converts it as usual."""
    baseline = run_simulation(load_scenario(rolling_upgrade([])))
    run = run_simulation(load_scenario(rolling_upgrade([20000])))
    assert rebalances(run) == rebalances(baseline)
    assert [r.direction for r in records(run, ConsumerGroupConverted)] == ["upgrade"]
    check_invariants(run)


@pytest.mark.parametrize("failover_ms", [30001, 30600])
def test_a_leave_the_new_coordinator_never_stored_is_undone_by_the_failover(failover_ms: int) -> None:
    """c1 closes for its upgrade at 30 s. With the failover at 30.001 s its LeaveGroup reaches the
    loading coordinator (COORDINATOR_LOAD_IN_PROGRESS: lost); at 30.6 s the leave was processed but
    the rebalance it started had not stored a new generation (the GroupMetadata record is written
    when a generation's assignment is stored), so the loaded group is generation 1 with c1 in it.
    Either way the old c1 stays a member until its session expires (45 s after the conversion
    armed it, convertToConsumerGroup), and the upgrade completes."""
    run = run_simulation(load_scenario(rolling_upgrade([failover_ms])))
    [converted] = records(run, ConsumerGroupConverted)
    [fenced] = records(run, ConsumerMemberFenced)
    assert fenced.member_id.startswith("c1-") and fenced.reason == "the member session expired."
    assert fenced.time_ms == converted.time_ms + run.scenario.config.session_timeout_ms
    check_invariants(run)


def test_a_failover_after_a_downgrade_reloads_the_classic_group() -> None:
    """After the way back (every consumer downgraded), the classic group's records are the ones
    convertToClassicGroup wrote and the later generations; the new coordinator loads them."""
    baseline = run_simulation(load_scenario(rolling_upgrade([], downgrade=True)))
    run = run_simulation(load_scenario(rolling_upgrade([240000], downgrade=True)))
    assert [r.direction for r in records(run, ConsumerGroupConverted)] == ["upgrade", "downgrade"]
    assert rebalances(run) == rebalances(baseline)
    check_invariants(run)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 240000), min_size=1, max_size=3), st.sampled_from(["range", "cooperative-sticky"]),
       st.booleans(), st.sampled_from([0.0, 1.0]))
def test_failovers_at_any_time_of_a_migration_keep_the_invariants(failovers: list[int], strategy: str,
                                                                   downgrade: bool, cost: float) -> None:
    """Failovers at any moment of a rolling upgrade (and back): a partition never has two owners,
    no record is lost, and the group ends Stable with every consumer."""
    run = run_simulation(load_scenario(rolling_upgrade(failovers, strategy, downgrade, cost)))
    check_invariants(run)
