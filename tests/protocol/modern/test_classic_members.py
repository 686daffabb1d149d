"""Members still on the classic protocol inside a consumer group (a rolling upgrade), facts from
Kafka's GroupMetadataManagerTest (classicGroupJoin/Sync/Heartbeat/LeaveToConsumerGroup)."""

from __future__ import annotations

from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.effects import ArmTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import ConsumerMemberFenced
from kafka_rebalance.protocol.modern.consumer.assignment import MemberAssignment, MemberState, partitions
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ClassicMemberMetadata,
    ConsumerGroupCoordinator,
    ConsumerGroupMember,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    ClassicJoinTimeout,
    Received,
    Respond,
    SessionTimeout,
)
from tests.protocol.modern.helpers import MockPartitionAssignor

TOPICS = {"foo": 2, "bar": 1, "zar": 1}


def group(assignor: MockPartitionAssignor) -> ConsumerGroupCoordinator:
    """GroupMetadataManagerTest.testReconciliationInJoiningConsumerGroupWithEagerProtocol's group:
    member-1 on the classic protocol (foo-0, bar-0), member-2 on the consumer protocol (foo-1),
    both at epoch 10."""
    m1 = ConsumerGroupMember("member-1", rebalance_timeout_ms=500, subscribed_topic_names=("foo", "bar"),
                             assignment=MemberAssignment(MemberState.STABLE, 10, 10,
                                                         partitions({"foo": [0], "bar": [0]}), {}),
                             classic=ClassicMemberMetadata(5000, ("range",)))
    m2 = ConsumerGroupMember("member-2", rebalance_timeout_ms=500, subscribed_topic_names=("foo", "bar"),
                             assignment=MemberAssignment(MemberState.STABLE, 10, 10, partitions({"foo": [1]}), {}))
    return ConsumerGroupCoordinator.loaded("group-id", TOPICS, 10, 10, [m1, m2],
                                           {"member-1": partitions({"foo": [0], "bar": [0]}),
                                            "member-2": partitions({"foo": [1]})}, assign=assignor)


def respond(g: ConsumerGroupCoordinator, request: cl.GroupRequest, now: int = 0):
    out = g.handle(Received("c", request), now)  # type: ignore[arg-type]
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
    assert (m1.member_epoch, m1.previous_member_epoch, m1.state) == (11, 10, MemberState.UNRELEASED_PARTITIONS)
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
