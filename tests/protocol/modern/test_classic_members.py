"""Members still on the classic protocol inside a consumer group (a rolling upgrade), facts from
Kafka's GroupMetadataManagerTest (classicGroupJoin/Sync/Heartbeat/LeaveToConsumerGroup)."""

from __future__ import annotations

from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.effects import ArmTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import ConsumerMemberFenced
from kafka_rebalance.protocol.modern.consumer.assignment import (
    MemberAssignment,
    MemberAssignmentState,
    partitions,
)
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupCoordinator,
    ConsumerGroupMember,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    ClassicJoinTimeout,
    RequestReceived,
    Respond,
    SessionTimeout,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import ClassicMemberMetadata
from tests.protocol.modern.helpers import MockPartitionAssignor

TOPICS = {"foo": 2, "bar": 1, "zar": 1}


def group(assignor: MockPartitionAssignor) -> ConsumerGroupCoordinator:
    """GroupMetadataManagerTest.testReconciliationInJoiningConsumerGroupWithEagerProtocol's group:
    member-1 on the classic protocol (foo-0, bar-0), member-2 on the consumer protocol (foo-1),
    both at epoch 10."""
    m1 = ConsumerGroupMember("member-1", rebalance_timeout_ms=500, subscribed_topic_names=("foo", "bar"),
                             assignment=MemberAssignment(MemberAssignmentState.STABLE, 10, 10,
                                                         partitions({"foo": [0], "bar": [0]}), {}),
                             classic=ClassicMemberMetadata(5000, ("range",)))
    m2 = ConsumerGroupMember("member-2", rebalance_timeout_ms=500, subscribed_topic_names=("foo", "bar"),
                             assignment=MemberAssignment(MemberAssignmentState.STABLE, 10, 10, partitions({"foo": [1]}), {}))
    return ConsumerGroupCoordinator.loaded("group-id", TOPICS, 10, 10, [m1, m2],
                                           {"member-1": partitions({"foo": [0], "bar": [0]}),
                                            "member-2": partitions({"foo": [1]})}, assign=assignor)


def respond(g: ConsumerGroupCoordinator, request: cl.GroupRequest, now: int = 0):
    out = g.handle(RequestReceived("c", request), now)  # type: ignore[arg-type]
    [response] = [o.response for o in out if isinstance(o, Respond)]
    return response, out


def join(member_id: str, topics: tuple[str, ...], owned: tuple[str, ...] = (), instance: str | None = None):
    subscription = cl.ConsumerProtocolSubscription(topics, owned_partitions=owned)
    return cl.JoinGroupRequest("group-id", 5000, 500, member_id, instance, "consumer",
                               (cl.JoinGroupRequestProtocol("range", subscription),))


def test_eager_member_rejoining_with_nothing_owned_moves_on() -> None:
    """GroupMetadataManagerTest.testReconciliationInJoiningConsumerGroupWithEagerProtocol: the
    classic member rejoins with a new subscription and no owned partitions (an EAGER client
    revoked everything): its revocation of bar-0 is done at once, it moves to epoch 11 with
    foo-0 and zar-0 and waits for foo-1 (UNRELEASED_PARTITIONS); JoinGroup answers generation 11."""
    assignor = MockPartitionAssignor()
    assignor.prepare({"member-1": {"foo": [0, 1], "zar": [0]}, "member-2": {"bar": [0]}})
    g = group(assignor)
    response, out = respond(g, join("member-1", ("foo", "bar", "zar")))
    assert (response.error_code, response.generation_id, response.protocol_name) == (ErrorCode.NONE, 11, "range")
    m1 = g.members["member-1"].assignment
    assert (m1.member_epoch, m1.previous_member_epoch, m1.state) == (11, 10, MemberAssignmentState.UNRELEASED_PARTITIONS)
    assert m1.assigned == {"foo": frozenset({0}), "zar": frozenset({0})}
    assert ArmTimer(SessionTimeout("member-1"), 5000) in out  # the classic session timeout
    sync, _ = respond(g, cl.SyncGroupRequest("group-id", 11, "member-1", protocol_type="consumer",
                                             protocol_name="range"))
    assert (sync.error_code, sync.assignment) == (ErrorCode.NONE, ("foo-0", "zar-0"))


def test_classic_heartbeat_to_consumer_group() -> None:
    """GroupMetadataManagerTest.testClassicGroupHeartbeatToConsumerGroupMaintainsSession,
    testClassicGroupHeartbeatToConsumerGroupRebalanceInProgress, ...WithIllegalGenerationId,
    ...WithUnknownMember and ...WithMemberNotUsingClassicProtocol."""
    g = group(MockPartitionAssignor())
    ok, out = respond(g, cl.HeartbeatRequest("group-id", 10, "member-1"))
    assert ok.error_code is ErrorCode.NONE and ArmTimer(SessionTimeout("member-1"), 5000) in out
    assert respond(g, cl.HeartbeatRequest("group-id", 9, "member-1"))[0].error_code is ErrorCode.ILLEGAL_GENERATION
    assert respond(g, cl.HeartbeatRequest("group-id", 10, "nobody"))[0].error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert respond(g, cl.HeartbeatRequest("group-id", 10, "member-2"))[0].error_code is ErrorCode.UNKNOWN_MEMBER_ID
    g.group_epoch = 11  # a new epoch: the classic member must rejoin to catch up
    rejoin, out = respond(g, cl.HeartbeatRequest("group-id", 10, "member-1"), 100)
    assert rejoin.error_code is ErrorCode.REBALANCE_IN_PROGRESS
    assert ArmTimer(ClassicJoinTimeout("member-1"), 600) in out


def test_classic_member_that_does_not_rejoin_is_fenced() -> None:
    """GroupMetadataManagerTest.testConsumerGroupMemberUsingClassicProtocolFencedWhenJoinTimeout."""
    g = group(MockPartitionAssignor())
    g.group_epoch = 11
    respond(g, cl.HeartbeatRequest("group-id", 10, "member-1"), 100)
    out = g.handle(ClassicJoinTimeout("member-1"), 600)
    assert Log(ConsumerMemberFenced(600, "group-id", "member-1",
                                    "the classic member failed to join within the rebalance timeout.")) in out
    assert "member-1" not in g.members


def test_sync_errors() -> None:
    """GroupMetadataManagerTest.testClassicGroupSyncToConsumerGroupWithIllegalGeneration,
    ...WithInconsistentGroupProtocol and ...RebalanceInProgress."""
    g = group(MockPartitionAssignor())
    sync = respond(g, cl.SyncGroupRequest("group-id", 9, "member-1"))[0]
    assert sync.error_code is ErrorCode.ILLEGAL_GENERATION
    sync = respond(g, cl.SyncGroupRequest("group-id", 10, "member-1", protocol_type="consumer", protocol_name="rr"))[0]
    assert sync.error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    g.group_epoch = 11
    assert respond(g, cl.SyncGroupRequest("group-id", 10, "member-1"))[0].error_code is ErrorCode.REBALANCE_IN_PROGRESS


def test_new_dynamic_classic_member_needs_a_member_id_and_protocols_must_match() -> None:
    """GroupMetadataManagerTest.testJoiningConsumerGroupWithNewDynamicMember (MEMBER_ID_REQUIRED
    with a generated id) and testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported
    (INCONSISTENT_GROUP_PROTOCOL)."""
    g = group(MockPartitionAssignor())
    first = respond(g, join("", ("foo",)))[0]
    assert first.error_code is ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    other = cl.JoinGroupRequest("group-id", 5000, 500, "", None, "consumer",
                                (cl.JoinGroupRequestProtocol("roundrobin", cl.ConsumerProtocolSubscription(("foo",))),))
    assert respond(g, other)[0].error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_batch_leave_removes_classic_members_with_one_epoch_bump() -> None:
    """GroupMetadataManagerTest.testConsumerGroupMemberUsingClassicProtocolBatchLeaveGroup and
    testClassicGroupLeaveToConsumerGroupWithoutValidLeaveGroupMember: each valid classic member
    goes, one group epoch bump; a consumer-protocol or unknown member gets UNKNOWN_MEMBER_ID."""
    g = group(MockPartitionAssignor())
    response = respond(g, cl.LeaveGroupRequest("group-id", (cl.MemberIdentity("member-1"),
                                                            cl.MemberIdentity("member-2"),
                                                            cl.MemberIdentity("nobody"))))[0]
    assert [(m.member_id, m.error_code) for m in response.members] == [
        ("member-1", ErrorCode.NONE), ("member-2", ErrorCode.UNKNOWN_MEMBER_ID), ("nobody", ErrorCode.UNKNOWN_MEMBER_ID)]
    assert list(g.members) == ["member-2"] and g.group_epoch == 11


def commit(member_id: str, generation: int, offset: int = 100) -> cl.OffsetCommitRequest:
    return cl.OffsetCommitRequest("group-id", generation, member_id, None, (cl.PartitionOffset("bar-0", offset),))


def test_classic_offset_commit_checks_the_generation_against_the_member_epoch() -> None:
    """OffsetMetadataManagerTest.testConsumerGroupOffsetCommitWithIllegalGenerationId (a classic
    member at epoch 10: generation 9 or 11 is ILLEGAL_GENERATION) and
    testConsumerGroupOffsetCommitWithUnknownMemberId; ConsumerGroup.validateOffsetCommit: the
    right generation commits, and OffsetFetch below v9 (no member id) reads it back."""
    g = group(MockPartitionAssignor())
    assert respond(g, commit("member-1", 9))[0].error_code is ErrorCode.ILLEGAL_GENERATION
    assert respond(g, commit("member-1", 11))[0].error_code is ErrorCode.ILLEGAL_GENERATION
    assert respond(g, commit("unknown", 10))[0].error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert g.offsets.get("bar-0") is None
    assert respond(g, commit("member-1", 10))[0].error_code is ErrorCode.NONE
    fetched, _ = respond(g, cl.OffsetFetchRequest("group-id", ("bar-0", "foo-0")))
    assert fetched == cl.OffsetFetchResponse(ErrorCode.NONE, (cl.PartitionOffset("bar-0", 100),
                                                              cl.PartitionOffset("foo-0", -1)))


def test_consumer_protocol_member_must_commit_with_version_9() -> None:
    """ConsumerGroup.validateOffsetCommit: a non-transactional OffsetCommit below version 9 from a
    member on the consumer protocol is UNSUPPORTED_VERSION ("OffsetCommit version 9 or above must
    be used by members using the modern group protocol")."""
    g = group(MockPartitionAssignor())
    assert respond(g, commit("member-2", 10))[0].error_code is ErrorCode.UNSUPPORTED_VERSION


def test_offset_fetch_of_a_classic_member_with_a_wrong_epoch() -> None:
    """OffsetMetadataManagerTest.testConsumerGroupOffsetFetchWithIllegalGenerationId: a member on
    the classic protocol fetching with an epoch that is not its own gets ILLEGAL_GENERATION (a
    consumer-protocol member gets STALE_MEMBER_EPOCH: ...WithStaleMemberEpoch)."""
    from kafka_rebalance.protocol.modern.consumer.coordinator_events import OffsetFetchRequest

    g = group(MockPartitionAssignor())
    classic, _ = respond(g, OffsetFetchRequest("group-id", "member-1", 9, ("foo-0",)))  # type: ignore[arg-type]
    modern, _ = respond(g, OffsetFetchRequest("group-id", "member-2", 9, ("foo-1",)))  # type: ignore[arg-type]
    assert (classic.error_code, modern.error_code) == (ErrorCode.ILLEGAL_GENERATION, ErrorCode.STALE_MEMBER_EPOCH)


def test_commit_from_outside_group_management_to_an_empty_group() -> None:
    """OffsetMetadataManagerTest.testConsumerGroupOffsetCommitFromAdminClient: generation -1 to a
    consumer group without members is accepted."""
    g = ConsumerGroupCoordinator("group-id", TOPICS)
    assert respond(g, commit("", -1, 7))[0].error_code is ErrorCode.NONE
    assert g.offsets["bar-0"] == 7
