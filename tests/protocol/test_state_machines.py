from __future__ import annotations

import pytest

from kafka_rebalance.model import RebalanceProtocol
from kafka_rebalance.protocol.consumer import rebalance_protocol
from kafka_rebalance.protocol.coordinator import GroupCoordinator, GroupState, IllegalStateTransition
from kafka_rebalance.protocol.messages import (
    Errors,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Subscription,
    SyncGroupRequest,
)

GROUP = "g"


def join(coordinator, conn, now, member_id="", instance=None, session=10000, rebalance=20000, topics=("t0",)):
    request = JoinGroupRequest(GROUP, member_id, session, rebalance, ("range",), Subscription(tuple(topics)), instance, conn)
    return coordinator.handle(conn, request, now)


def fire_due(coordinator, out_list, until):
    """Fire every armed timer due up to ``until`` in order (a tiny event loop)."""
    timers = sorted(t for out in out_list for t in out.timers)
    fired = []
    while timers and timers[0][0] <= until:
        deadline, key = timers.pop(0)
        out = coordinator.on_timer(key, deadline)
        fired.append(out)
        timers = sorted(timers + out.timers)
    return fired


def stable_group(n=2):
    c = GroupCoordinator(GROUP)
    outs, ids = [], {}
    for i in range(n):
        out = join(c, f"c{i}", 0)
        ids[f"c{i}"] = out.responses[0][1].member_id
        assert out.responses[0][1].error is Errors.MEMBER_ID_REQUIRED
        outs.append(join(c, f"c{i}", 0, ids[f"c{i}"]))
    # The second join during the initial delay extends it once: 3000 + 3000.
    fired = fire_due(c, outs, 6000)
    responses = {conn: r for out in fired for conn, r in out.responses}
    assert c.state is GroupState.COMPLETING_REBALANCE
    leader = c.leader
    for conn, mid in ids.items():
        assignments = {m: (f"t0-{k}",) for k, m in enumerate(ids.values())} if mid == leader else {}
        c.handle(conn, SyncGroupRequest(GROUP, mid, c.generation, None, assignments), 6001)
    assert c.state is GroupState.STABLE
    return c, ids, responses


def test_invalid_transition_raises():
    c = GroupCoordinator(GROUP)
    with pytest.raises(IllegalStateTransition):
        c._transition(GroupState.STABLE)


def test_join_needs_a_member_id_first_and_initial_delay_holds_the_join():
    c, ids, responses = stable_group(2)
    assert c.generation == 1
    leader_response = responses["c0"]
    assert leader_response.leader == ids["c0"] and len(leader_response.members) == 2
    assert responses["c1"].members == ()


def test_invalid_session_timeout():
    c = GroupCoordinator(GROUP)
    out = join(c, "c0", 0, session=1000)
    assert out.responses[0][1].error is Errors.INVALID_SESSION_TIMEOUT


def test_heartbeat_answers_by_state():
    c, ids, _ = stable_group(2)
    mid = ids["c0"]
    ok = c.handle("c0", HeartbeatRequest(GROUP, mid, c.generation), 7000)
    assert ok.responses[0][1].error is Errors.NONE
    assert c.handle("c0", HeartbeatRequest(GROUP, mid, c.generation - 1), 7000).responses[0][1].error is Errors.ILLEGAL_GENERATION
    assert c.handle("c0", HeartbeatRequest(GROUP, "nobody", 1), 7000).responses[0][1].error is Errors.UNKNOWN_MEMBER_ID
    c.handle("c1", LeaveGroupRequest(GROUP, ids["c1"]), 8000)
    assert c.state is GroupState.PREPARING_REBALANCE
    assert c.handle("c0", HeartbeatRequest(GROUP, mid, c.generation), 8001).responses[0][1].error is Errors.REBALANCE_IN_PROGRESS


def test_offset_commits_are_fenced_by_generation_and_member():
    c, ids, _ = stable_group(2)
    mid = ids["c0"]
    good = c.handle("c0", OffsetCommitRequest(GROUP, mid, c.generation, {"t0-0": 5}), 7000)
    assert good.responses[0][1].error is Errors.NONE
    stale = c.handle("c0", OffsetCommitRequest(GROUP, mid, c.generation - 1, {"t0-0": 1}), 7000)
    assert stale.responses[0][1].error is Errors.ILLEGAL_GENERATION
    stranger = c.handle("x", OffsetCommitRequest(GROUP, "zombie", c.generation, {"t0-0": 1}), 7000)
    assert stranger.responses[0][1].error is Errors.UNKNOWN_MEMBER_ID
    fetched = c.handle("c1", OffsetFetchRequest(GROUP, ("t0-0", "t0-1")), 7000)
    assert fetched.responses[0][1].offsets == {"t0-0": 5, "t0-1": -1}


def test_session_expiry_removes_the_member_and_rebalances():
    c, ids, _ = stable_group(2)
    out = c.on_timer(("session", ids["c1"]), 6001 + 10000)
    assert c.state is GroupState.PREPARING_REBALANCE
    assert [r["kind"] for r in out.logs] == ["member_failed", "preparing_rebalance"]
    assert ids["c1"] not in c.members


def test_sync_purgatory_answers_followers_when_the_leader_syncs():
    c = GroupCoordinator(GROUP)
    ids = {}
    outs = []
    for conn in ("a", "b"):
        ids[conn] = join(c, conn, 0).responses[0][1].member_id
        outs.append(join(c, conn, 0, ids[conn]))
    fire_due(c, outs, 6000)
    follower = "b" if c.leader == ids["a"] else "a"
    leader = "a" if follower == "b" else "b"
    waiting = c.handle(follower, SyncGroupRequest(GROUP, ids[follower], c.generation), 3001)
    assert waiting.responses == []
    done = c.handle(leader, SyncGroupRequest(GROUP, ids[leader], c.generation, None, {ids[follower]: ("t0-0",)}), 3002)
    by_conn = dict(done.responses)
    assert by_conn[follower].assignment == ("t0-0",) and by_conn[leader].assignment == ()


def test_static_member_rejoining_in_stable_causes_no_rebalance_and_fences_the_old_id():
    c = GroupCoordinator(GROUP)
    out = join(c, "s", 0, instance="i1")
    old_id = next(iter(c.members))  # static members get their id without MEMBER_ID_REQUIRED
    fire_due(c, [out], 3000)
    c.handle("s", SyncGroupRequest(GROUP, old_id, c.generation, "i1", {old_id: ("t0-0",)}), 3001)
    assert c.state is GroupState.STABLE
    again = join(c, "s2", 5000, instance="i1")
    response = again.responses[0][1]
    assert response.error is Errors.NONE and response.generation == 1 and c.state is GroupState.STABLE
    assert not again.logs
    fenced = c.handle("s", HeartbeatRequest(GROUP, old_id, 1, "i1"), 5001)
    assert fenced.responses[0][1].error is Errors.FENCED_INSTANCE_ID
    synced = c.handle("s2", SyncGroupRequest(GROUP, response.member_id, 1, "i1"), 5002)
    assert synced.responses[0][1].assignment == ("t0-0",)


def test_rebalance_timeout_removes_members_that_did_not_rejoin():
    c, ids, _ = stable_group(2)
    out = join(c, "c0", 7000, ids["c0"], topics=("t0", "t1"))
    assert c.state is GroupState.PREPARING_REBALANCE
    fired = fire_due(c, [out], 7000 + 20000)
    assert ids["c1"] not in c.members and c.state is GroupState.COMPLETING_REBALANCE
    assert any(r["kind"] == "member_failed" for f in fired for r in f.logs)


@pytest.mark.parametrize("strategies,expected", [
    (("range", "cooperative-sticky"), RebalanceProtocol.EAGER),
    (("cooperative-sticky",), RebalanceProtocol.COOPERATIVE),
    (("sticky",), RebalanceProtocol.EAGER),
])
def test_consumer_protocol_is_the_highest_all_assignors_support(strategies, expected):
    assert rebalance_protocol(strategies) is expected


def test_leader_rejoining_unchanged_in_completing_rebalance_gets_the_member_list_again():
    c = GroupCoordinator(GROUP)
    outs, ids = [], {}
    for i in range(2):
        ids[f"c{i}"] = join(c, f"c{i}", 0).responses[0][1].member_id
        outs.append(join(c, f"c{i}", 0, ids[f"c{i}"]))
    fire_due(c, outs, 6000)
    assert c.state is GroupState.COMPLETING_REBALANCE
    leader_conn = next(conn for conn, mid in ids.items() if mid == c.leader)
    follower_conn = next(conn for conn, mid in ids.items() if mid != c.leader)
    again = join(c, leader_conn, 6100, c.leader).responses[0][1]
    assert again.error is Errors.NONE and sorted(m.member_id for m in again.members) == sorted(ids.values())
    assert join(c, follower_conn, 6100, ids[follower_conn]).responses[0][1].members == ()
    assert c.state is GroupState.COMPLETING_REBALANCE


def test_a_pending_member_that_never_rejoins_expires_after_its_session_timeout():
    c, ids, _ = stable_group(2)
    # A third client learns its member id (KIP-394) and dies before joining with it.
    pending = join(c, "c9", 10000, session=10000, rebalance=300000)
    assert pending.responses[0][1].error is Errors.MEMBER_ID_REQUIRED
    # A known member rejoins with changed metadata: a rebalance waits for every known member.
    changed = join(c, "c0", 11000, ids["c0"], session=10000, rebalance=300000, topics=("t0", "t1"))
    assert c.state is GroupState.PREPARING_REBALANCE
    again = join(c, "c1", 11000, ids["c1"], session=10000, rebalance=300000)
    assert c.state is GroupState.PREPARING_REBALANCE, "still waiting for the pending member"
    fire_due(c, [pending, changed, again], 25000)
    assert c.state is GroupState.COMPLETING_REBALANCE, "the pending member expired at 20000, not at the rebalance timeout"
