"""Coordinator failover seen from the consumers: nothing assigned may stay unconsumed."""

from __future__ import annotations

import pytest

from kafka_rebalance.sim import simulate
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
