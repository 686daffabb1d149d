"""Coordinator failover seen from the consumers: nothing assigned may stay unconsumed."""

from __future__ import annotations

import pytest

from kafka_rebalance.sim import run_simulation, simulate
from tests.sim.helpers import SCENARIOS, base


@pytest.mark.parametrize("failover_ms", range(3000, 3020))
def test_offset_fetch_failing_over_a_failover_is_retried(failover_ms):
    """A failover while the consumer's OffsetFetch is in flight fails that fetch; the Java
    consumer retries it (ConsumerCoordinator.refreshCommittedOffsetsIfNeeded runs on every poll
    until the positions are known), so every assigned partition is consumed to the end.
    Before issue 11 the retry timer was armed and never handled: the partitions stayed
    assigned and unconsumed for good."""
    scenario = base(["a"], [{"at_ms": 0, "join": "a"}, {"at_ms": failover_ms, "coordinator_failover": {}}],
                    end_ms=30000)
    result = simulate(scenario)
    assert result["final_assignment"] == {"a": ["t0-0", "t0-1", "t0-2"]}
    owned_at_end = {o["partition"] for o in result["ownership"] if o["end_ms"] == 30000 and o["member"] == "a"}
    assert owned_at_end == {"t0-0", "t0-1", "t0-2"}


def test_a_stable_group_loaded_by_a_new_coordinator_does_not_rebalance():
    """Kafka's GroupCoordinator.onGroupLoaded (3.9) and GroupMetadataManager.onLoaded (4.x) only
    reschedule every member's heartbeat expiration; they prepare a rebalance only for a group over
    group.max.size. The consumers find the new coordinator (FindCoordinator after NOT_COORDINATOR)
    and go on heartbeating in the same generation."""
    result = simulate(SCENARIOS / "trigger-coordinator-change.yaml")
    assert result["metrics"]["rebalances"] == 1
    assert result["metrics"]["records_lost"] == 0
    assert sorted(p for parts in result["final_assignment"].values() for p in parts) == ["t0-0", "t0-1", "t0-2", "t0-3"]
    assert all(o["end_ms"] == 60000 for o in result["ownership"])


def test_repeated_failovers_keep_consumption_going_and_offsets_monotonic():
    """Three failovers in a row (one while the previous new coordinator is still loading): the
    consumers follow NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS to the current coordinator,
    nothing is lost, and the committed offsets, counted over every coordinator, never go back."""
    scenario = base(["a", "b"], [{"at_ms": 0, "join": "a"}, {"at_ms": 0, "join": "b"},
                                 {"at_ms": 20000, "coordinator_failover": {}},
                                 {"at_ms": 20200, "coordinator_failover": {}},
                                 {"at_ms": 40000, "coordinator_failover": {}}], end_ms=70000)
    run = run_simulation(scenario)
    assert run.metrics.records_lost == 0 and run.offset_regressions == 0
    assert run.final_group_state == "Stable"
    accepted = run.commits.error_code == 0
    assert accepted.sum() > 0
    # Commits are accepted again after the last failover, by the third coordinator.
    assert (run.commits.time_ms[accepted] > 41000).any()
    assert {str(p) for p, e in zip(run.ownership.partition, run.ownership.end_ms, strict=True) if e == 70000} == {
        "t0-0", "t0-1", "t0-2"}


def test_offset_regressions_count_commits_of_every_coordinator():
    """The regression count is taken over all accepted commits in time order, not per
    coordinator (before issue 11 only the last two coordinators were summed)."""
    from kafka_rebalance.protocol.classic.coordinator_events import (
        OffsetCommitRequest,
        OffsetCommitResponse,
        PartitionOffset,
        Respond,
    )
    from kafka_rebalance.protocol.errors import ErrorCode
    from kafka_rebalance.sim import ClassicGroupSide, load_scenario

    sim = ClassicGroupSide(load_scenario(base(["a"], [{"at_ms": 0, "join": "a"}])))
    for now, offset in [(1, 10), (2, 5), (3, 7), (4, 2)]:  # as if each came through another coordinator
        sim.now = now
        request = OffsetCommitRequest("test-group", 1, "m", None, (PartitionOffset("t0-0", offset),))
        sim._commit_answered("a#1", request, [Respond("a#1", OffsetCommitResponse(ErrorCode.NONE))])
    assert sim.offset_regressions == 2
