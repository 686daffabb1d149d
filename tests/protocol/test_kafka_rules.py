"""Kafka's classic group coordinator rules, each stated as Kafka's fact (issue 11, sections 2
and 3). The docstring of each test names the Kafka test or source method it comes from:
GroupCoordinatorTest.scala / GroupCoordinator.scala at 3.9.0, GroupMetadataManager(Test).java
on trunk (4.x)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_rebalance.protocol.classic.coordinator import GroupCoordinator
from kafka_rebalance.protocol.classic.coordinator_events import (
    BeginLoading,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    JoinGroupRequestProtocol,
    ListGroupsRequest,
    LoadCompleted,
    MemberIdentity,
    Resign,
)
from kafka_rebalance.protocol.classic.group import NEW_MEMBER_JOIN_TIMEOUT_MS, CoordinatorConfig, GroupState
from kafka_rebalance.protocol.errors import ErrorCode
from tests.protocol.harness import GROUP, Broker, join_request, protocols, stable_group

# ----------------------------------------------------------------------------- section 2


def test_empty_protocol_list_is_inconsistent_group_protocol():
    """GroupCoordinatorTest.testJoinGroupWithEmptyGroupProtocol: JoinGroup with no protocols
    is INCONSISTENT_GROUP_PROTOCOL (GroupMetadata.supportsProtocols on an empty group)."""
    broker = Broker()
    step = broker.join("c0", at=0, protocol_list=())
    assert step.responses["c0"].error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_empty_protocol_type_is_inconsistent_group_protocol():
    """GroupCoordinatorTest.testJoinGroupWithEmptyProtocolType."""
    broker = Broker()
    assert broker.join("c0", at=0, protocol_type="").responses["c0"].error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_a_protocol_type_other_than_the_groups_is_inconsistent():
    """GroupCoordinatorTest.testJoinGroupInconsistentProtocolType: a member of type "connect"
    cannot join a "consumer" group."""
    broker, _ = stable_group(1)
    step = broker.join("x", at=broker.now + 1, protocol_type="connect")
    assert step.responses["x"].error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_no_common_protocol_is_inconsistent():
    """GroupCoordinatorTest.testJoinGroupInconsistentGroupProtocol: a member whose protocols
    share none with the group's members is rejected."""
    broker, _ = stable_group(1)
    step = broker.join("x", at=broker.now + 1, names=("roundrobin",))
    assert step.responses["x"].error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_a_pending_member_rejoining_with_no_protocols_is_rejected_not_a_crash():
    """GroupCoordinator.doCurrentMemberJoinGroup checks supportsProtocols before accepting a
    pending member: an empty protocol list is INCONSISTENT_GROUP_PROTOCOL."""
    broker = Broker()
    pending = broker.join("c0", at=0).responses["c0"].member_id
    step = broker.join("c0", pending, protocol_list=())
    assert step.responses["c0"].error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert broker.group.members == {}


def test_join_completion_restarts_every_members_session():
    """GroupCoordinator.onCompleteJoin: completeAndScheduleNextHeartbeatExpiration for every
    member of the new generation, static members that did not rejoin included
    (GroupCoordinatorTest.testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout keeps
    them)."""
    broker = Broker()
    broker.join("s", at=0, instance="i1", session=25000, rebalance=20000)
    static_id = next(iter(broker.group.members))
    dynamic = broker.join_new("d", session=10000, rebalance=20000)
    broker.advance(6000)  # the second join extended the initial delay once
    assert broker.state is GroupState.COMPLETING_REBALANCE
    leader = broker.group.leader
    broker.sync("s", static_id, instance="i1", assignments={static_id: ("t0-0",), dynamic: ("t0-1",)}
                if leader == static_id else None)
    broker.sync("d", dynamic, assignments={static_id: ("t0-0",), dynamic: ("t0-1",)} if leader == dynamic else None)
    assert broker.state is GroupState.STABLE
    # d rejoins with new metadata at 8000; the static member stays silent; the join phase completes
    # at the rebalance timeout (28000) and must give the static member a fresh session from then.
    broker.heartbeat("s", static_id, instance="i1", at=7000)
    broker.join("d", dynamic, at=8000, topics=("t0", "t1"), session=10000, rebalance=20000)
    broker.advance(28000)
    assert broker.state is GroupState.COMPLETING_REBALANCE
    assert static_id in broker.group.members
    assert broker.group.members[static_id].session_deadline == 28000 + 25000  # not 7000 + 25000


def test_the_only_member_rejoining_completes_the_rebalance_at_once():
    """GroupCoordinator.handleJoinGroup calls rebalancePurgatory.checkAndComplete after every
    JoinGroup (GroupCoordinatorTest.testJoinGroupFromUnchangedLeaderShouldRebalance: the
    leader's rejoin is answered with the next generation right away)."""
    broker, ids = stable_group(1, rebalance=300000)
    generation = broker.group.generation
    step = broker.join("c0", ids["c0"], at=broker.now + 10, rebalance=300000)
    response = step.responses["c0"]
    assert response.error_code is ErrorCode.NONE and response.generation_id == generation + 1
    assert broker.state is GroupState.COMPLETING_REBALANCE


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_offset_commit_checks_member_and_generation_before_the_group_state(state):
    """GroupCoordinator.validateOffsetCommit runs before doCommitOffsets' state switch:
    GroupCoordinatorTest.testCommitOffsetInCompletingRebalanceFromUnknownMemberId and
    ...FromIllegalGeneration give UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION, not
    REBALANCE_IN_PROGRESS; staticMemberCommitOffsetWithInvalidMemberId gives
    FENCED_INSTANCE_ID. A valid commit is stored in Stable and PreparingRebalance and is
    REBALANCE_IN_PROGRESS in CompletingRebalance (testCommitOffsetInCompletingRebalance)."""
    broker = Broker()
    broker.join("s", at=0, instance="i1")
    static_id = next(iter(broker.group.members))
    broker.advance(3000)
    assert broker.state is GroupState.COMPLETING_REBALANCE
    if state != "CompletingRebalance":
        broker.sync("s", static_id, instance="i1", assignments={static_id: ("t0-0",)})
    if state == "PreparingRebalance":
        broker.join("x", at=broker.now + 1)  # a new member's first JoinGroup only learns its id
        broker.join_new("y")
        assert broker.state is GroupState.PREPARING_REBALANCE
    generation = broker.group.generation
    assert broker.commit("z", "unknown", generation, {"t0-0": 1}) is ErrorCode.UNKNOWN_MEMBER_ID
    assert broker.commit("s", static_id, generation + 1, {"t0-0": 1}) is ErrorCode.ILLEGAL_GENERATION
    assert broker.commit("z", "someone-else", generation, {"t0-0": 1}, instance="i1") is ErrorCode.FENCED_INSTANCE_ID
    expected = ErrorCode.REBALANCE_IN_PROGRESS if state == "CompletingRebalance" else ErrorCode.NONE
    assert broker.commit("s", static_id, generation, {"t0-0": 7}) is expected


def test_offset_commit_to_a_dead_or_unmanaged_group():
    """GroupCoordinatorTest.testCommitOffsetFromUnknownGroup (generation >= 0 to an unknown group:
    ILLEGAL_GENERATION) and testCommitOffsetWithDefaultGeneration (generation -1: accepted)."""
    broker = Broker()
    assert broker.commit("a", "m", 1, {"t0-0": 1}, at=0) is ErrorCode.ILLEGAL_GENERATION
    assert broker.commit("a", "", -1, {"t0-0": 1}) is ErrorCode.NONE


def test_static_rejoin_with_changed_protocols_keeping_the_selected_one_is_replaced_in_place():
    """GroupCoordinatorTest.staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged:
    no rebalance, same generation, the follower's old id is fenced and the new id syncs the old
    assignment."""
    broker = Broker()
    broker.join("a", at=0, instance="ia", names=("range", "roundrobin"))
    broker.join("b", instance="ib", names=("range", "roundrobin"))
    a_id, b_id = list(broker.group.members)
    broker.advance(6000)
    assert broker.group.protocol_name == "range"
    broker.sync("a", a_id, instance="ia", assignments={a_id: ("t0-0",), b_id: ("t0-1",)})
    broker.sync("b", b_id, instance="ib")
    generation = broker.group.generation
    step = broker.join("b2", at=7000, instance="ib", names=("range",))
    response = step.responses["b2"]
    assert response.error_code is ErrorCode.NONE and response.generation_id == generation
    assert response.member_id != b_id and response.leader == a_id and not response.skip_assignment
    assert broker.state is GroupState.STABLE and not step.kinds
    assert broker.join("b", b_id, instance="ib", names=("range",)).responses["b"].error_code is ErrorCode.FENCED_INSTANCE_ID
    assert broker.sync("b2", response.member_id, instance="ib").responses["b2"].assignment == ("t0-1",)


def test_static_rejoin_that_changes_the_selected_protocol_rebalances():
    """GroupCoordinatorTest.staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged."""
    broker = Broker()
    broker.join("a", at=0, instance="ia", names=("range", "roundrobin"))
    a_id = next(iter(broker.group.members))
    broker.advance(3000)
    broker.sync("a", a_id, instance="ia", assignments={a_id: ("t0-0",)})
    assert broker.group.protocol_name == "range"
    step = broker.join("a2", at=4000, instance="ia", names=("roundrobin",))
    assert step.kinds[:1] == ["preparing_rebalance"]
    assert "selectedProtocol will change" in step.logs[0].reason
    assert broker.group.protocol_name == "roundrobin"  # the sole member rejoined: completed at once


@pytest.mark.parametrize("version,skip", [(9, True), (8, False)])
def test_static_leader_rejoining_in_stable(version, skip):
    """GroupCoordinatorTest.staticMemberRejoinWithLeaderIdAndUnknownMemberId (KIP-814): v9+ the
    leader learns it leads with skip_assignment and the member list; before v9 it is told the
    old leader id and gets no member list. No rebalance either way."""
    broker = Broker()
    broker.join("a", at=0, instance="ia")
    broker.join("b", instance="ib")
    a_id, b_id = list(broker.group.members)
    broker.advance(6000)
    broker.sync("a", a_id, instance="ia", assignments={a_id: ("t0-0",), b_id: ("t0-1",)})
    step = broker.send("a2", replace(join_request(instance="ia"), api_version=version), at=7000)
    response = step.responses["a2"]
    assert response.error_code is ErrorCode.NONE and broker.state is GroupState.STABLE
    assert response.skip_assignment is skip
    if skip:
        assert response.leader == response.member_id and {m.group_instance_id for m in response.members} == {"ia", "ib"}
    else:
        assert response.leader == a_id and response.members == ()


def test_known_member_id_with_unknown_instance_id_is_unknown_member():
    """GroupCoordinatorTest.staticMemberJoinWithUnknownInstanceIdAndKnownMemberId."""
    broker = Broker()
    broker.join("a", at=0, instance="ia")
    a_id = next(iter(broker.group.members))
    broker.advance(3000)
    broker.sync("a", a_id, instance="ia", assignments={a_id: ("t0-0",)})
    assert broker.join("a", a_id, instance="unknown").responses["a"].error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert broker.heartbeat("a", a_id, instance="unknown") is ErrorCode.UNKNOWN_MEMBER_ID


def test_known_member_id_with_another_members_instance_id_is_fenced():
    """GroupCoordinatorTest.staticMemberRejoinAsFollowerWithMismatchedMemberId /
    staticMemberRejoinAsLeaderWithMismatchedMemberId / staticMemberHeartbeatLeaderWithInvalidMemberId."""
    broker = Broker()
    broker.join("a", at=0, instance="ia")
    broker.join("b", instance="ib")
    a_id, b_id = list(broker.group.members)
    broker.advance(6000)
    broker.sync("a", a_id, instance="ia", assignments={a_id: ("t0-0",), b_id: ("t0-1",)})
    assert broker.join("b", b_id, instance="ia").responses["b"].error_code is ErrorCode.FENCED_INSTANCE_ID
    assert broker.heartbeat("x", "invalid", instance="ia") is ErrorCode.FENCED_INSTANCE_ID
    assert broker.sync("x", "invalid", instance="ia").responses["x"].error_code is ErrorCode.FENCED_INSTANCE_ID


def test_initial_delay_holds_the_first_join_of_an_empty_group():
    """GroupCoordinatorTest.shouldDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup."""
    broker = Broker()
    broker.join_new("a", at=0, rebalance=20000)
    broker.advance(2999)
    assert broker.state is GroupState.PREPARING_REBALANCE
    broker.advance(3000)
    assert broker.state is GroupState.COMPLETING_REBALANCE


def test_initial_delay_extensions_stop_at_the_rebalance_timeout():
    """GroupCoordinatorTest.shouldDelayRebalanceUptoRebalanceTimeout: with rebalance timeout
    2 x delay, members joining during the delay extend it, but the join phase completes at the
    rebalance timeout (6000), not later."""
    broker = Broker()
    broker.join_new("a", at=0, rebalance=6000)
    broker.join_new("b", rebalance=6000)
    broker.advance(3001)
    broker.join_new("c", rebalance=6000)
    broker.advance(5999)
    assert broker.state is GroupState.PREPARING_REBALANCE
    broker.advance(6000)
    assert broker.state is GroupState.COMPLETING_REBALANCE


def test_initial_delay_is_extended_only_at_generation_zero():
    """GroupCoordinator.addMemberAndRebalance: newMemberAdded is set only when the group is
    PreparingRebalance at generation 0, so an emptied group's later rebalance is held by one
    delay and no extension."""
    broker = Broker()
    a = broker.join_new("a", at=0, rebalance=30000)
    broker.advance(3000)
    broker.sync("a", a, assignments={a: ("t0-0",)})
    broker.leave("a", MemberIdentity(a), at=4000)
    assert broker.state is GroupState.EMPTY and broker.group.generation == 2
    broker.join_new("b", at=10000, rebalance=30000)
    broker.join_new("c", at=11000, rebalance=30000)  # would extend the delay at generation 0
    broker.advance(13000)
    assert broker.state is GroupState.COMPLETING_REBALANCE


def test_heartbeat_from_an_older_generation_during_a_rebalance_is_illegal_generation():
    """GroupCoordinator.validateHeartbeat (3.9) checks the generation before the group state:
    GroupCoordinatorTest.testHeartbeatIllegalGeneration; only a current-generation heartbeat
    during PreparingRebalance gets REBALANCE_IN_PROGRESS (testHeartbeatDuringRebalanceCausesRebalanceInProgress)."""
    broker, ids = stable_group(2)
    generation = broker.group.generation
    broker.join_new("c9", at=broker.now + 1)
    assert broker.state is GroupState.PREPARING_REBALANCE
    assert broker.heartbeat("c0", ids["c0"], generation - 1) is ErrorCode.ILLEGAL_GENERATION
    assert broker.heartbeat("c0", ids["c0"], generation) is ErrorCode.REBALANCE_IN_PROGRESS


# ----------------------------------------------------------------------------- section 3


def test_new_member_that_never_comes_back_is_removed_after_the_join_timeout():
    """KIP-394, GroupCoordinatorTest.testNewMemberJoinExpiration: a new member waiting in a long
    join phase is removed after NewMemberJoinTimeoutMs (300 s); its JoinGroup gets
    UNKNOWN_MEMBER_ID."""
    broker, ids = stable_group(1, rebalance=600000, session=30000)
    new = broker.join("n", at=broker.now + 1, rebalance=600000, session=30000).responses["n"].member_id
    joined_at = broker.now
    broker.join("n", new, rebalance=600000, session=30000)
    assert broker.state is GroupState.PREPARING_REBALANCE  # c0 has not rejoined
    fired = broker.keep_alive({"c0": ids["c0"]}, joined_at + NEW_MEMBER_JOIN_TIMEOUT_MS)
    assert new not in broker.group.members
    answered = [f.responses["n"] for f in fired if "n" in f.responses]
    assert answered and answered[0].error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert NEW_MEMBER_JOIN_TIMEOUT_MS == 300000


def test_group_max_size_counts_members_not_pending_ids():
    """GroupCoordinator.acceptJoiningMember / GroupCoordinatorTest.testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember:
    MEMBER_ID_REQUIRED ids are not members; in Stable a new member is accepted while the group
    is below group.max.size."""
    broker = Broker.with_config(group_max_size=2)
    pending = [broker.join(f"p{i}", at=0).responses[f"p{i}"] for i in range(3)]
    assert all(r.error_code is ErrorCode.MEMBER_ID_REQUIRED for r in pending)
    assert broker.join("p0", pending[0].member_id).responses == {}
    assert broker.join("p1", pending[1].member_id).responses == {}
    third = broker.join("p2", pending[2].member_id).responses["p2"]
    assert third.error_code is ErrorCode.GROUP_MAX_SIZE_REACHED and third.member_id == ""
    assert len(broker.group.members) == 2


def test_group_max_size_kicks_out_the_last_rejoining_members():
    """GroupCoordinatorTest.testLastJoiningMembersAreKickedOutWhenReJoiningGroupWithMaxSize: with
    the limit lowered below the group's size, during PreparingRebalance only members awaiting a
    join count, and a member rejoining beyond the limit is removed."""
    broker, ids = stable_group(3)
    broker.coordinator.config.group_max_size = 2
    broker.join("c0", ids["c0"], at=broker.now + 1, topics=("t0", "t1"))
    broker.join("c1", ids["c1"])
    step = broker.join("c2", ids["c2"])
    assert step.responses["c2"].error_code is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert ids["c2"] not in broker.group.members
    assert broker.state is GroupState.COMPLETING_REBALANCE


def test_leave_group_batch_by_instance_id_with_a_per_member_error():
    """KIP-345 LeaveGroup v3+: GroupCoordinatorTest.testStaticMembersValidBatchLeaveGroup,
    testStaticMembersUnknownInstanceBatchLeaveGroup, testStaticMembersFencedInstanceBatchLeaveGroup,
    testPendingMemberBatchLeaveGroup."""
    broker = Broker()
    broker.join("a", at=0, instance="ia")
    broker.join("b", instance="ib")
    a_id, b_id = list(broker.group.members)
    pending = broker.join("p").responses["p"].member_id
    broker.advance(3000)
    step = broker.leave("admin", MemberIdentity("", "ia"), MemberIdentity("", "unknown"),
                        MemberIdentity("wrong-id", "ib"), MemberIdentity(pending))
    response = step.responses["admin"]
    assert response.error_code is ErrorCode.NONE
    assert [m.error_code for m in response.members] == [
        ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.NONE]
    assert list(broker.group.members) == [b_id]


def test_leave_group_of_an_unknown_group():
    """GroupCoordinatorTest.testStaticMembersUnknownGroupBatchLeaveGroup: top-level NONE, each
    member UNKNOWN_MEMBER_ID."""
    broker = Broker()
    response = broker.leave("admin", MemberIdentity("", "ia"), MemberIdentity("", "ib"), at=0).responses["admin"]
    assert response.error_code is ErrorCode.NONE
    assert [m.error_code for m in response.members] == [ErrorCode.UNKNOWN_MEMBER_ID] * 2


def test_describe_groups():
    """GroupCoordinatorTest.testDescribeGroupInactiveGroup (absent: NONE, Dead),
    testDescribeGroupStableForDynamicMember (Stable: protocol and member assignments),
    testDescribeGroupRebalancing (no protocol data or assignments while rebalancing),
    testDescribeGroupWrongCoordinator (NOT_COORDINATOR)."""
    broker, ids = stable_group(2)
    absent, stable = broker.send("admin", DescribeGroupsRequest(("nope", GROUP))).responses["admin"].groups
    assert (absent.error_code, absent.group_state, absent.members) == (ErrorCode.NONE, "Dead", ())
    assert stable.group_state == "Stable" and stable.protocol_type == "consumer" and stable.protocol_data == "range"
    assert {m.member_id: m.member_assignment for m in stable.members} == {ids["c0"]: ("t0-0",), ids["c1"]: ("t0-1",)}
    broker.join_new("c9", at=broker.now + 1)
    (rebalancing,) = broker.send("admin", DescribeGroupsRequest((GROUP,))).responses["admin"].groups
    assert rebalancing.group_state == "PreparingRebalance" and rebalancing.protocol_data == ""
    assert all(m.member_assignment == () and m.member_metadata is None for m in rebalancing.members)
    elsewhere = GroupCoordinator(partitions=[])
    (moved,) = elsewhere.handle(_received(DescribeGroupsRequest((GROUP,))), 0)[0].response.groups
    assert moved.error_code is ErrorCode.NOT_COORDINATOR


def _received(request):
    from kafka_rebalance.protocol.classic.coordinator_events import RequestReceived
    return RequestReceived("admin", request)


def test_list_groups_with_a_state_filter():
    """GroupCoordinatorTest.testListGroupsWithStates: the filter is case-insensitive; an empty
    filter lists every group."""
    broker, _ = stable_group(1)
    broker.join_new("other", group="g2") if False else None
    broker.send("x", join_request(group="g2"), at=broker.now + 1)
    listing = broker.send("admin", ListGroupsRequest()).responses["admin"]
    assert listing.error_code is ErrorCode.NONE
    assert {(g.group_id, g.group_state) for g in listing.groups} == {(GROUP, "Stable"), ("g2", "Empty")}
    stable_only = broker.send("admin", ListGroupsRequest(("stable",))).responses["admin"]
    assert [g.group_id for g in stable_only.groups] == [GROUP]
    assert broker.send("admin", ListGroupsRequest(("Dead",))).responses["admin"].groups == ()


def test_delete_groups():
    """GroupCoordinator.handleDeleteGroups: an empty group is deleted (NONE), a group with
    members is NON_EMPTY_GROUP, an absent one GROUP_ID_NOT_FOUND, one on another coordinator
    NOT_COORDINATOR (testDeleteGroupWithWrongCoordinator)."""
    broker, ids = stable_group(1)
    broker.send("x", join_request(group="empty"), at=broker.now + 1)  # creates an Empty group
    results = broker.send("admin", DeleteGroupsRequest((GROUP, "empty", "absent"))).responses["admin"].results
    assert [(r.group_id, r.error_code) for r in results] == [
        (GROUP, ErrorCode.NON_EMPTY_GROUP), ("empty", ErrorCode.NONE), ("absent", ErrorCode.GROUP_ID_NOT_FOUND)]
    assert broker.coordinator.group("empty") is None
    elsewhere = GroupCoordinator(partitions=[])
    (result,) = elsewhere.handle(_received(DeleteGroupsRequest((GROUP,))), 0)[0].response.results
    assert result.error_code is ErrorCode.NOT_COORDINATOR


def test_coordinator_load_in_progress_then_the_group_as_stored():
    """GroupCoordinator.validateGroupStatus: COORDINATOR_LOAD_IN_PROGRESS while the partition
    loads; handleHeartbeat answers NONE blindly and handleSyncGroup REBALANCE_IN_PROGRESS
    meanwhile; onGroupLoaded brings the stored generation back Stable, without a rebalance."""
    old, ids = stable_group(2)
    partition = old.coordinator.partition_for(GROUP)
    new = Broker(GroupCoordinator(CoordinatorConfig(broker_id=1), partitions=[]))
    new.handle(BeginLoading(partition), at=old.now)
    assert new.join("c9").responses["c9"].error_code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert new.heartbeat("c0", ids["c0"], 1) is ErrorCode.NONE
    assert new.sync("c0", ids["c0"], 1).responses["c0"].error_code is ErrorCode.REBALANCE_IN_PROGRESS
    resigned = old.handle(Resign(partition))
    assert resigned.responses == {}
    assert old.heartbeat("c0", ids["c0"], 1) is ErrorCode.NOT_COORDINATOR
    new.handle(LoadCompleted(partition, tuple(old.persisted)), at=old.now + 500)
    assert new.state is GroupState.STABLE and new.group.generation == 1
    assert new.heartbeat("c0", ids["c0"], 1) is ErrorCode.NONE
    assert not new.log


def test_resigning_answers_waiting_joins_with_not_coordinator():
    """GroupCoordinator.onGroupUnloaded: members awaiting a JoinGroup response in
    PreparingRebalance are answered NOT_COORDINATOR."""
    broker, ids = stable_group(2)
    broker.join("c0", ids["c0"], at=broker.now + 1, topics=("t0", "t1"))
    step = broker.handle(Resign(broker.coordinator.partition_for(GROUP)))
    assert step.responses["c0"].error_code is ErrorCode.NOT_COORDINATOR
    assert broker.coordinator.group(GROUP) is None


def test_protocols_helper_offers_one_subscription_per_protocol():
    assert [p.name for p in protocols(names=("range", "roundrobin"))] == ["range", "roundrobin"]
    assert isinstance(protocols()[0], JoinGroupRequestProtocol)


def test_a_pending_member_outlives_the_join_phase_it_missed():
    """KIP-394 ids handed out with MEMBER_ID_REQUIRED stay pending when a join phase completes
    without them: GroupMetadataManager.completeClassicGroupJoin removes only members that did not
    rejoin, never ClassicGroup's pendingJoinMembers (they go on their own session timeout,
    GroupMetadataManagerTest.testHeartbeatExpirationShouldRemovePendingMember), and a pending
    member's JoinGroup is accepted in any state ("Pending dynamic member ... joins group",
    GroupMetadataManagerTest.testJoinGroupCompletionWhenPendingMemberJoins). Seen on serve with
    group.initial.rebalance.delay.ms=0: a consumer that learnt its id just before the group
    formed was answered UNKNOWN_MEMBER_ID."""
    broker = Broker.with_config(group_initial_rebalance_delay_ms=0)
    first = broker.join("a", at=0).responses["a"]
    pending = broker.join("p", at=0).responses["p"]
    assert first.error_code is pending.error_code is ErrorCode.MEMBER_ID_REQUIRED
    broker.join("a", first.member_id)
    broker.advance(broker.now + 1)  # the initial delay (0 ms) is over: the group forms with a alone
    assert broker.state is GroupState.COMPLETING_REBALANCE and list(broker.group.members) == [first.member_id]
    assert pending.member_id in broker.group.pending_members
    step = broker.join("p", pending.member_id)
    assert "p" not in step.responses or step.responses["p"].error_code is ErrorCode.NONE
    assert broker.state is GroupState.PREPARING_REBALANCE
    assert sorted(broker.group.members) == sorted([first.member_id, pending.member_id])
    assert not broker.group.pending_members


def test_a_requested_rebalance_moves_a_stable_group_to_preparing_rebalance() -> None:
    """``RebalanceRequested`` (serve's forced rebalance) reaches Kafka's ``prepareRebalance``: the
    Stable group goes to PreparingRebalance with the reason logged, members learn it from their
    next heartbeat (REBALANCE_IN_PROGRESS, as GroupMetadataManagerTest's
    testHeartbeatDuringPreparingRebalance), and no member is added or removed. A group that is
    not Stable is left alone: it is rebalancing already, or has nobody to rebalance."""
    from kafka_rebalance.protocol.classic.coordinator_events import RebalanceRequested

    broker, ids = stable_group(2)
    members = set(broker.group.members)
    step = broker.handle(RebalanceRequested(GROUP, "forced by a test"))
    assert broker.state is GroupState.PREPARING_REBALANCE
    assert [getattr(r, "reason", None) for r in step.logs if r.KIND == "preparing_rebalance"] == ["forced by a test"]
    assert set(broker.group.members) == members
    assert broker.heartbeat("c0", ids["c0"]) is ErrorCode.REBALANCE_IN_PROGRESS
    again = broker.handle(RebalanceRequested(GROUP, "twice"))
    assert again.outputs == [] and broker.state is GroupState.PREPARING_REBALANCE
    assert broker.handle(RebalanceRequested("no-such-group", "x")).outputs == []
