"""The classic group coordinator and consumer machines: their basic conversations."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.model import RebalanceProtocol
from kafka_rebalance.protocol.classic.consumer import MEMBER_STATES, ClassicMemberState, rebalance_protocol
from kafka_rebalance.protocol.classic.coordinator import GroupCoordinator
from kafka_rebalance.protocol.classic.coordinator_events import (
    ConsumerProtocolSubscription,
    GroupMetadataRecord,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LoadCompleted,
    MemberIdentity,
    OffsetFetchRequest,
    PartitionOffset,
    PersistedMember,
    RequestReceived,
    Resign,
    Respond,
)
from kafka_rebalance.protocol.classic.group import GROUP_STATES, GroupState
from kafka_rebalance.protocol.errors import ErrorCode, IllegalStateTransition
from tests.protocol.harness import GROUP, Broker, stable_group


def test_invalid_group_transition_raises():
    with pytest.raises(IllegalStateTransition):
        GROUP_STATES.check(GroupState.EMPTY, GroupState.STABLE)
    assert GROUP_STATES.check(GroupState.STABLE, GroupState.PREPARING_REBALANCE) is GroupState.PREPARING_REBALANCE


def test_invalid_member_transition_raises():
    with pytest.raises(IllegalStateTransition):
        MEMBER_STATES.check(ClassicMemberState.UNJOINED, ClassicMemberState.STABLE)


def test_join_needs_a_member_id_first_and_initial_delay_holds_the_join():
    broker = Broker()
    first = broker.join("c0", at=0).responses["c0"]
    assert first.error_code is ErrorCode.MEMBER_ID_REQUIRED and first.member_id.startswith("consumer-")
    broker.join("c0", first.member_id)
    assert broker.state is GroupState.PREPARING_REBALANCE
    broker.advance(2999)
    assert broker.state is GroupState.PREPARING_REBALANCE
    fired = broker.advance(3000)
    response = fired[-1].responses["c0"]
    assert response.error_code is ErrorCode.NONE and response.generation_id == 1
    assert response.leader == first.member_id and [m.member_id for m in response.members] == [first.member_id]


def test_invalid_session_timeout():
    broker = Broker()
    assert broker.join("c0", at=0, session=1000).responses["c0"].error_code is ErrorCode.INVALID_SESSION_TIMEOUT


def test_heartbeat_answers_by_state():
    broker, ids = stable_group(2)
    mid = ids["c0"]
    generation = broker.group.generation
    assert broker.heartbeat("c0", mid, at=7000) is ErrorCode.NONE
    assert broker.heartbeat("c0", mid, generation - 1) is ErrorCode.ILLEGAL_GENERATION
    assert broker.heartbeat("c0", "nobody", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    broker.leave("c1", MemberIdentity(ids["c1"]), at=8000)
    assert broker.state is GroupState.PREPARING_REBALANCE
    assert broker.heartbeat("c0", mid, generation, at=8001) is ErrorCode.REBALANCE_IN_PROGRESS


def test_offset_commits_are_fenced_by_generation_and_member():
    broker, ids = stable_group(2)
    mid, generation = ids["c0"], broker.group.generation
    assert broker.commit("c0", mid, generation, {"t0-0": 5}, at=7000) is ErrorCode.NONE
    assert broker.commit("c0", mid, generation - 1, {"t0-0": 1}) is ErrorCode.ILLEGAL_GENERATION
    assert broker.commit("x", "zombie", generation, {"t0-0": 1}) is ErrorCode.UNKNOWN_MEMBER_ID
    fetched = broker.send("c1", OffsetFetchRequest(GROUP, ("t0-0", "t0-1"))).responses["c1"]
    assert fetched.offsets == (PartitionOffset("t0-0", 5), PartitionOffset("t0-1", -1))


def test_session_expiry_removes_the_member_and_rebalances():
    broker, ids = stable_group(2)
    fired = broker.keep_alive({"c0": ids["c0"]}, broker.now + 10500)
    expired = [f for f in fired if f.kinds]
    assert [f.kinds for f in expired] == [["member_failed", "preparing_rebalance"]]
    assert broker.state is GroupState.PREPARING_REBALANCE
    assert ids["c1"] not in broker.group.members


def test_sync_purgatory_answers_followers_when_the_leader_syncs():
    broker = Broker()
    ids = {conn: broker.join_new(conn, at=0) for conn in ("a", "b")}
    broker.advance(6000)
    leader_id = broker.group.leader
    follower = next(c for c, m in ids.items() if m != leader_id)
    leader = next(c for c, m in ids.items() if m == leader_id)
    assert broker.sync(follower, ids[follower]).responses == {}
    done = broker.sync(leader, ids[leader], assignments={ids[follower]: ("t0-0",)}).responses
    assert done[follower].assignment == ("t0-0",) and done[leader].assignment == ()


def test_static_member_rejoining_in_stable_causes_no_rebalance_and_fences_the_old_id():
    broker = Broker()
    step = broker.join("s", at=0, instance="i1")
    old_id = next(iter(broker.group.members))  # static members get their id without MEMBER_ID_REQUIRED
    assert step.responses == {}
    broker.advance(3000)
    broker.sync("s", old_id, instance="i1", assignments={old_id: ("t0-0",)})
    assert broker.state is GroupState.STABLE
    again = broker.join("s2", at=5000, instance="i1")
    response = again.responses["s2"]
    assert response.error_code is ErrorCode.NONE and response.generation_id == 1 and broker.state is GroupState.STABLE
    assert not again.logs
    assert broker.heartbeat("s", old_id, 1, instance="i1") is ErrorCode.FENCED_INSTANCE_ID
    assert broker.sync("s2", response.member_id, 1, instance="i1").responses["s2"].assignment == ("t0-0",)


def test_rebalance_timeout_removes_members_that_did_not_rejoin():
    broker, ids = stable_group(2)
    broker.join("c0", ids["c0"], at=7000, topics=("t0", "t1"))
    assert broker.state is GroupState.PREPARING_REBALANCE
    fired = broker.keep_alive({"c1": ids["c1"]}, 7000 + 20000)
    assert ids["c1"] not in broker.group.members and broker.state is GroupState.COMPLETING_REBALANCE
    assert any(kind == "member_failed" for f in fired for kind in f.kinds)


@pytest.mark.parametrize("strategies,expected", [
    (("range", "cooperative-sticky"), RebalanceProtocol.EAGER),
    (("cooperative-sticky",), RebalanceProtocol.COOPERATIVE),
    (("sticky",), RebalanceProtocol.EAGER),
])
def test_consumer_protocol_is_the_highest_all_assignors_support(strategies, expected):
    assert rebalance_protocol(strategies) is expected


def test_leader_rejoining_unchanged_in_completing_rebalance_gets_the_member_list_again():
    broker = Broker()
    ids = {f"c{i}": broker.join_new(f"c{i}", at=0) for i in range(2)}
    broker.advance(6000)
    assert broker.state is GroupState.COMPLETING_REBALANCE
    leader = broker.group.leader
    leader_conn = next(conn for conn, mid in ids.items() if mid == leader)
    follower_conn = next(conn for conn, mid in ids.items() if mid != leader)
    again = broker.join(leader_conn, leader, at=6100).responses[leader_conn]
    assert again.error_code is ErrorCode.NONE and sorted(m.member_id for m in again.members) == sorted(ids.values())
    assert broker.join(follower_conn, ids[follower_conn]).responses[follower_conn].members == ()
    assert broker.state is GroupState.COMPLETING_REBALANCE


def test_a_pending_member_that_never_rejoins_expires_after_its_session_timeout():
    broker, ids = stable_group(2, session=10000, rebalance=300000)
    # A third client learns its member id (KIP-394) and dies before joining with it.
    pending = broker.join("c9", at=10000, session=10000, rebalance=300000).responses["c9"]
    assert pending.error_code is ErrorCode.MEMBER_ID_REQUIRED
    # A known member rejoins with changed metadata: a rebalance waits for every known member.
    broker.join("c0", ids["c0"], at=11000, session=10000, rebalance=300000, topics=("t0", "t1"))
    assert broker.state is GroupState.PREPARING_REBALANCE
    broker.join("c1", ids["c1"], session=10000, rebalance=300000)
    assert broker.state is GroupState.PREPARING_REBALANCE, "still waiting for the pending member"
    broker.advance(25000)
    assert broker.state is GroupState.COMPLETING_REBALANCE, "the pending member expired at 20000, not at the rebalance timeout"


_ACTIONS = st.lists(st.tuples(
    st.sampled_from(["join", "rejoin", "static", "sync", "heartbeat", "leave", "wait", "reload"]),
    st.integers(0, 4),
    st.lists(st.sampled_from(["range", "roundrobin", "sticky"]), min_size=1, max_size=4)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(_ACTIONS)
def test_the_groups_counts_are_its_members(actions):
    """``awaiting_join`` and ``supported_protocols`` (Kafka's numMembersAwaitingJoin and
    supportedProtocols) always equal what walking the members gives, whatever members join,
    rejoin with other protocols (a name listed twice included), come back static, sync, leave,
    time out, or are loaded by another coordinator from the stored records."""
    broker = Broker.with_config(group_initial_rebalance_delay_ms=0)
    known: dict[int, str] = {}
    for action, slot, names in actions:
        connection = f"c{slot}-{broker.now}"
        member_id = known.get(slot, "")
        if action == "join":
            known[slot] = broker.join_new(connection, names=tuple(names))
        elif action == "rejoin" and member_id:
            broker.join(connection, member_id, names=tuple(names))
        elif action == "static":
            first = broker.join(connection, member_id, instance=f"i{slot}", names=tuple(names))
            answer = first.responses.get(connection)
            if answer is not None and answer.member_id:
                known[slot] = answer.member_id
        elif action == "sync" and member_id and broker.group is not None:
            broker.sync(connection, member_id)
        elif action == "heartbeat" and member_id:
            broker.heartbeat(connection, member_id)
        elif action == "leave" and member_id:
            broker.leave(connection, MemberIdentity(member_id, None))
        elif action == "wait":
            broker.advance(broker.now + 7_000)
        elif action == "reload":
            partition = broker.coordinator.partition_for(GROUP)
            broker.handle(Resign(partition))
            loaded = Broker.with_config(group_initial_rebalance_delay_ms=0)
            loaded.now = broker.now
            loaded.handle(LoadCompleted(partition, tuple(broker.persisted)))
            loaded.persisted = list(broker.persisted)
            broker = loaded
        group = broker.group
        if group is None:
            continue
        members = group.members.values()
        assert group.awaiting_join == sum(m.join_connection is not None for m in members)
        walked = Counter(name for m in members for name in set(m.protocol_names))
        assert +group.supported_protocols == walked


def test_a_member_stored_twice_is_one_member():
    """A GroupMetadata record listing a member twice loads one member (the last listed), which
    the group's protocol count says: its next JoinGroup is accepted, not refused with
    INCONSISTENT_GROUP_PROTOCOL."""
    coordinator = GroupCoordinator(seed=1)
    subscription = ConsumerProtocolSubscription(("t0",))
    member = PersistedMember("m-1", None, "consumer", 20000, 10000, subscription, ("t0-0",))
    coordinator.handle(LoadCompleted(coordinator.partition_for(GROUP), (
        GroupMetadataRecord(GROUP, "consumer", 3, "range", "m-1", (member, member)),)), 0)
    out = coordinator.handle(RequestReceived("c", JoinGroupRequest(GROUP, 10000, 20000, "m-1", None, "consumer", (
        JoinGroupRequestProtocol("range", subscription),))), 1)
    assert [o.response.error_code for o in out if isinstance(o, Respond)] == [ErrorCode.NONE]
    assert coordinator.group(GROUP).supported_protocols["range"] == 1
