"""Property tests over random event sequences."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.sim import run_simulation

NAMES = ["c1", "c2", "c3", "c4"]
ACTIONS = ["join", "join", "leave", "crash", "pause", "stall", "restart"]


@st.composite
def scenarios(draw):
    strategy = draw(st.sampled_from([["cooperative-sticky"], ["sticky"], ["range"], ["roundrobin", "range"]]))
    static = draw(st.booleans())
    consumers = [{"id": n, "strategies": strategy, "subscribe": ["t0", "t1"],
                  **({"group_instance_id": f"instance-{n}"} if static else {})} for n in NAMES]
    events = [{"at_ms": 0, "join": "c1"}]
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, 60000))
        action = draw(st.sampled_from(ACTIONS))
        event = {"at_ms": at, action: draw(st.sampled_from(NAMES))}
        if action in ("pause", "stall"):
            # A static member stalled for the whole rebalance timeout misses a rebalance while it
            # keeps its partitions: two owners, as in Kafka (test_static_member_missing_a_rebalance...).
            longest = 14000 if static and action == "stall" else 30000
            event["for_ms"] = draw(st.integers(1000, longest))
        if action == "restart":
            event["after_ms"] = draw(st.integers(0, 15000))
        events.append(event)
    last = max(e["at_ms"] + e.get("for_ms", 0) + e.get("after_ms", 0) for e in events)
    return {
        "name": "property",
        "group": "prop-group",
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "max_poll_interval_ms": 15000,
                   "network_latency_ms": draw(st.integers(0, 5)), "network_jitter_ms": draw(st.integers(0, 3)),
                   "group_initial_rebalance_delay_ms": 1000, "auto_commit_interval_ms": 1000},
        "topics": {"t0": 3, "t1": 2},
        "consumers": consumers,
        "produce": [{"topic": "t0", "records_per_s": 200, "keys": 40}, {"topic": "t1", "records_per_s": 50, "keys": 7}],
        "events": events,
        "end_ms": last + 90000,
        "seed": draw(st.integers(0, 1000)),
    }


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_random_event_sequences_keep_the_group_safe_and_converge(scenario):
    run = run_simulation(scenario)
    result = run.to_json()
    # At no instant do two consumers own a partition (cooperative hand-offs included).
    assert run.ownership_conflicts == 0
    by_partition = {}
    for o in result["ownership"]:
        by_partition.setdefault(o["partition"], []).append((o["start_ms"], o["end_ms"], o["member"]))
    for intervals in by_partition.values():
        intervals.sort()
        for (_s1, e1, m1), (s2, e2, m2) in zip(intervals, intervals[1:], strict=False):
            assert s2 >= e1, f"{m1} and {m2} both own a partition during [{s2}, {min(e1, e2)}]"
    # Committed offsets never go backwards; nothing is ever skipped.
    assert run.offset_regressions == 0
    assert result["metrics"]["records_lost"] == 0
    # After the last event and quiet time the group is Stable with every partition assigned.
    alive = [n for n, parts in result["final_assignment"].items() if parts] or run.final_members
    if run.final_members:
        assert run.final_group_state == "Stable"
        owned = sorted(p for parts in result["final_assignment"].values() for p in parts)
        assert owned == sorted(["t0-0", "t0-1", "t0-2", "t1-0", "t1-1"])
        assert result["rebalances"][-1]["end_ms"] is not None
    else:
        assert not alive


@settings(max_examples=25, deadline=None)
@given(scenarios())
def test_same_seed_same_bytes(scenario):
    import json

    assert json.dumps(run_simulation(scenario).to_json()) == json.dumps(run_simulation(scenario).to_json())


def test_static_member_missing_a_rebalance_is_a_window_with_two_owners():
    """Kafka keeps a static member that did not rejoin before the rebalance timeout
    (GroupCoordinatorTest.testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout) and hands the
    leader its metadata from its last JoinGroup. A cooperative static member stalled through the
    whole rebalance therefore still holds partitions the leader gives away, until its own rejoin
    revokes them: the classic protocol's window with two owners (what KIP-848 removes)."""
    consumers = [{"id": n, "strategies": ["cooperative-sticky"], "subscribe": ["t0", "t1"],
                  "group_instance_id": f"instance-{n}"} for n in ("c1", "c2")]
    run = run_simulation({
        "name": "static-stall", "group": "prop-group",
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "max_poll_interval_ms": 15000,
                   "network_latency_ms": 0, "group_initial_rebalance_delay_ms": 1000, "auto_commit_interval_ms": 1000},
        "topics": {"t0": 3, "t1": 2}, "consumers": consumers,
        "produce": [{"topic": "t0", "records_per_s": 200, "keys": 40}],
        "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 1001, "join": "c2"},
                   {"at_ms": 1001, "stall": "c1", "for_ms": 15000}],
        "end_ms": 60000})
    assert run.ownership_conflicts == 2
    assert run.final_group_state == "Stable" and run.metrics.records_lost == 0
