"""The ConsumerGroupHeartbeat coordinator, each test a fact from Kafka's GroupMetadataManagerTest
(group-coordinator/src/test/java/org/apache/kafka/coordinator/group/GroupMetadataManagerTest.java)."""

from __future__ import annotations

import pytest

from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import (
    ConsumerGroupEpochBumped,
    ConsumerMemberFenced,
    ConsumerTargetAssignmentComputed,
)
from kafka_rebalance.protocol.modern.consumer.assignment import MemberAssignmentState
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    VALID_PREVIOUS_GROUP_STATES,
    ConsumerGroupConfig,
    ConsumerGroupState,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    RebalanceTimeout,
    SessionTimeout,
    TopicsChanged,
)
from tests.protocol.modern.helpers import MockPartitionAssignor, make_context, stable_member, tps

TOPICS = {"foo": 6, "bar": 3}


def two_member_group(assignor: MockPartitionAssignor, max_size: int | None = None):
    config = ConsumerGroupConfig(max_size=max_size) if max_size else None
    return make_context(assignor, TOPICS, [
        stable_member("m1", 10, 9, {"foo": [0, 1, 2], "bar": [0, 1]}),
        stable_member("m2", 10, 9, {"foo": [3, 4, 5], "bar": [2]}),
    ], epoch=10, config=config)


def test_reconciliation_process() -> None:
    """GroupMetadataManagerTest.testReconciliationProcess: a third member joins; the two owners
    revoke first (staying at epoch 10, UNREVOKED_PARTITIONS), the joiner moves to epoch 11 in
    UNRELEASED_PARTITIONS and receives each partition only once its owner acknowledged the
    revocation; the group is RECONCILING until everyone is STABLE at epoch 11."""
    assignor = MockPartitionAssignor()
    ctx = two_member_group(assignor)
    assignor.prepare({"m1": {"foo": [0, 1], "bar": [0]}, "m2": {"foo": [2, 3], "bar": [2]},
                      "m3": {"foo": [4, 5], "bar": [1]}})
    assert ctx.group.state is ConsumerGroupState.STABLE

    r = ctx.heartbeat(member_id="m3", member_epoch=0, rebalance_timeout_ms=5000,
                      subscribed_topic_names=("foo", "bar"), server_assignor="range", topic_partitions=())
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == ("m3", 11, 5000, ())
    assert ctx.member_state("m3") is MemberAssignmentState.UNRELEASED_PARTITIONS
    assert ctx.group.state is ConsumerGroupState.RECONCILING

    r = ctx.heartbeat(member_id="m1", member_epoch=10)
    assert (r.member_epoch, r.assignment) == (10, tps(bar=[0], foo=[0, 1]))
    m1 = ctx.group.members["m1"].assignment
    assert (m1.state, m1.member_epoch, m1.previous_member_epoch) == (MemberAssignmentState.UNREVOKED_PARTITIONS, 10, 10)
    assert m1.pending_revocation == {"foo": frozenset({2}), "bar": frozenset({1})}

    r = ctx.heartbeat(member_id="m2", member_epoch=10)
    assert (r.member_epoch, r.assignment) == (10, tps(bar=[2], foo=[3]))
    assert ctx.member_state("m2") is MemberAssignmentState.UNREVOKED_PARTITIONS

    r = ctx.heartbeat(member_id="m3", member_epoch=11)
    assert (r.member_epoch, r.assignment) == (11, None)
    assert ctx.group.members["m3"].assignment.previous_member_epoch == 11

    # Member 1 acknowledges the revocation by reporting what it still owns.
    r = ctx.heartbeat(member_id="m1", member_epoch=10, topic_partitions=tps(foo=[0, 1], bar=[0]))
    assert (r.member_epoch, r.assignment) == (11, None)
    m1 = ctx.group.members["m1"].assignment
    assert (m1.state, m1.member_epoch, m1.previous_member_epoch) == (MemberAssignmentState.STABLE, 11, 10)

    r = ctx.heartbeat(member_id="m2", member_epoch=10)  # no acknowledgement: a no-op
    assert (r.member_epoch, r.assignment) == (10, None)
    assert ctx.member_state("m2") is MemberAssignmentState.UNREVOKED_PARTITIONS

    r = ctx.heartbeat(member_id="m3", member_epoch=11)  # gets bar-1, released by member 1
    assert (r.member_epoch, r.assignment) == (11, tps(bar=[1]))
    assert ctx.member_state("m3") is MemberAssignmentState.UNRELEASED_PARTITIONS
    r = ctx.heartbeat(member_id="m3", member_epoch=11)
    assert r.assignment is None

    r = ctx.heartbeat(member_id="m2", member_epoch=10, topic_partitions=tps(foo=[3], bar=[2]))
    assert (r.member_epoch, r.assignment) == (11, tps(bar=[2], foo=[2, 3]))
    assert ctx.group.state is ConsumerGroupState.RECONCILING

    r = ctx.heartbeat(member_id="m3", member_epoch=11, topic_partitions=tps(bar=[1]))
    assert (r.member_epoch, r.assignment) == (11, tps(bar=[1], foo=[4, 5]))
    assert ctx.member_state("m3") is MemberAssignmentState.STABLE
    assert ctx.group.state is ConsumerGroupState.STABLE


@pytest.mark.parametrize(("fields", "code"), [
    ({"member_id": "", "member_epoch": 1}, ErrorCode.INVALID_REQUEST),  # MemberId can't be empty
    # From v1 (KIP-1082) also when joining and on a static leave: the consumer names itself.
    ({"member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo",),
      "topic_partitions": ()}, ErrorCode.INVALID_REQUEST),
    ({"member_id": "   ", "member_epoch": 0, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo",),
      "topic_partitions": ()}, ErrorCode.INVALID_REQUEST),
    ({"member_id": "", "member_epoch": -2, "instance_id": "i"}, ErrorCode.INVALID_REQUEST),
    ({"member_id": "m", "member_epoch": 0, "subscribed_topic_names": ("foo",), "topic_partitions": ()},
     ErrorCode.INVALID_REQUEST),  # RebalanceTimeoutMs must be provided in first request
    ({"member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo",)},
     ErrorCode.INVALID_REQUEST),  # TopicPartitions must be empty when (re-)joining (null here)
    ({"member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo",),
      "topic_partitions": tps(foo=[0])}, ErrorCode.INVALID_REQUEST),
    ({"member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 5000, "topic_partitions": ()},
     ErrorCode.INVALID_REQUEST),  # SubscribedTopicNames must be set in first request
    ({"member_id": "m", "member_epoch": -2}, ErrorCode.INVALID_REQUEST),  # InstanceId can't be null
    ({"member_id": "m", "member_epoch": -3}, ErrorCode.INVALID_REQUEST),  # MemberEpoch is invalid
    ({"member_id": "m", "member_epoch": 1, "instance_id": " "}, ErrorCode.INVALID_REQUEST),
    ({"member_id": "m", "member_epoch": 1, "rack_id": ""}, ErrorCode.INVALID_REQUEST),
    ({"member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo",),
      "topic_partitions": (), "server_assignor": "sticky"}, ErrorCode.UNSUPPORTED_ASSIGNOR),
])
def test_heartbeat_request_validation(fields: dict[str, object], code: ErrorCode) -> None:
    """GroupCoordinatorServiceTest.testConsumerHeartbeatRequestValidation (Kafka 4.1,
    GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid at the latest version)."""
    ctx = make_context(MockPartitionAssignor(), TOPICS)
    assert ctx.heartbeat(**fields).error_code is code


def test_join_names_member_by_version() -> None:
    """KIP-1082: a v1 join keeps the member id the consumer chose; a v0 join (Kafka 3.7-3.9
    consumers) sends none and the coordinator names the member (Uuid.randomUuid). An empty list
    of topic names is a join subscribed to nothing (Kafka 4.1 accepts it; only null is refused)."""
    ctx = make_context(MockPartitionAssignor(), TOPICS)
    join = {"member_epoch": 0, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo",), "topic_partitions": ()}
    assert ctx.heartbeat(member_id="mine", **join).member_id == "mine"
    named = ctx.heartbeat(member_id="", api_version=0, **join).member_id
    assert named and named != "mine" and len(named) == 22 and not named.startswith("-")
    empty_topics = {**join, "subscribed_topic_names": ()}
    assert ctx.heartbeat(member_id="idle", **empty_topics).error_code is ErrorCode.NONE


def test_unknown_member_id() -> None:
    """GroupMetadataManagerTest.testUnknownMemberIdJoinsConsumerGroup: a heartbeat with epoch > 0
    from a member the group does not know is UNKNOWN_MEMBER_ID."""
    ctx = make_context(MockPartitionAssignor(), TOPICS)
    assert ctx.heartbeat(member_id="nobody", member_epoch=1).error_code is ErrorCode.UNKNOWN_MEMBER_ID


def test_member_epoch_validation() -> None:
    """GroupMetadataManagerTest.testConsumerGroupMemberEpochValidation: a greater epoch is
    FENCED_MEMBER_EPOCH; a smaller one too, unless it is the previous epoch and the member owns
    a subset of its assignment (the response carrying the new epoch may have been lost)."""
    assignor = MockPartitionAssignor()
    ctx = make_context(assignor, TOPICS, [stable_member("m1", 100, 99, {"foo": [1, 2, 3]})], epoch=100)
    assert ctx.heartbeat(member_id="m1", member_epoch=200).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert ctx.heartbeat(member_id="m1", member_epoch=50).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert ctx.heartbeat(member_id="m1", member_epoch=99,
                         topic_partitions=tps(foo=[1, 2, 3, 4])).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    ok = ctx.heartbeat(member_id="m1", member_epoch=99, topic_partitions=tps(foo=[1, 2]))
    assert (ok.error_code, ok.member_epoch) == (ErrorCode.NONE, 100)
    assert ctx.heartbeat(member_id="m1", member_epoch=100).error_code is ErrorCode.NONE


def test_new_member_rejected_when_group_is_full() -> None:
    """GroupMetadataManagerTest.testNewMemberIsRejectedWithMaximumMembersIsReached:
    group.consumer.max.size counts members; a new one is GROUP_MAX_SIZE_REACHED, existing ones
    keep heartbeating (throwIfConsumerGroupIsFull)."""
    ctx = two_member_group(MockPartitionAssignor(), max_size=2)
    r = ctx.heartbeat(member_id="m3", member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",),
                      server_assignor="range", topic_partitions=())
    assert r.error_code is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert ctx.heartbeat(member_id="m1", member_epoch=10).error_code is ErrorCode.NONE


def test_member_joins_empty_group() -> None:
    """GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup: the group epoch goes 0 -> 1,
    the target is computed once for epoch 1 and the member gets all of it at epoch 1; a v0 join
    without a member id gets one from the coordinator, and the session timeout is armed."""
    assignor = MockPartitionAssignor()
    ctx = make_context(assignor, TOPICS)
    assert ctx.group.state is ConsumerGroupState.EMPTY
    r0 = ctx.heartbeat(member_id="", api_version=0, member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                       server_assignor="range", topic_partitions=())
    member_id = r0.member_id
    assert member_id and len(member_id) == 22  # Uuid.toString(): 16 bytes, base64 without padding
    assert ctx.group.members[member_id].assignment.member_epoch == 1
    assert ctx.group.group_epoch == ctx.group.assignment_epoch == 1
    logged = [type(o.record) for o in ctx.outputs if isinstance(o, Log)]
    assert [t for t in logged if t in (ConsumerGroupEpochBumped, ConsumerTargetAssignmentComputed)] == [
        ConsumerGroupEpochBumped, ConsumerTargetAssignmentComputed]
    assert ArmTimer(SessionTimeout(member_id), 45000) in ctx.outputs
    assert ctx.group.state is ConsumerGroupState.STABLE


def test_full_response_only_on_full_request_or_change() -> None:
    """GroupMetadataManagerTest.testConsumerGroupHeartbeatFullResponse: the assignment is in the
    response when the request is full (rebalance timeout, topics and owned partitions all set)
    or the assignment changed; otherwise it is null."""
    assignor = MockPartitionAssignor()
    assignor.prepare({"m1": {"foo": [0, 1]}})
    ctx = make_context(assignor, {"foo": 2})
    r = ctx.heartbeat(member_id="m1", member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",),
                      topic_partitions=())
    assert r.assignment == tps(foo=[0, 1])
    assert ctx.heartbeat(member_id="m1", member_epoch=1).assignment is None
    full = ctx.heartbeat(member_id="m1", member_epoch=1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",),
                         topic_partitions=tps(foo=[0, 1]))
    assert full.assignment == tps(foo=[0, 1])


def test_full_request_with_a_regex_gets_the_assignment() -> None:
    """Kafka 4.1's GroupMetadataManager.consumerGroupHeartbeat: isFullRequest is rebalance timeout
    set, subscribed topic names OR regex set, and owned partitions set. A regex member that timed
    a heartbeat out (its answer, carrying a new partition, was lost) retries with every field and
    must learn its assignment again; soak seed 0 schedule 1367 (consumer, lossy): it never did."""
    assignor = MockPartitionAssignor()
    assignor.prepare({"m1": {"foo": [0, 1]}})
    ctx = make_context(assignor, {"foo": 2})
    ctx.heartbeat(member_id="m1", member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_regex="fo.*",
                  topic_partitions=())
    assert ctx.heartbeat(member_id="m1", member_epoch=1).assignment is None
    full = ctx.heartbeat(member_id="m1", member_epoch=1, rebalance_timeout_ms=5000, subscribed_topic_regex="fo.*",
                         topic_partitions=tps(foo=[0, 1]))
    assert full.assignment == tps(foo=[0, 1])


def test_subscription_change_triggers_new_target() -> None:
    """GroupMetadataManagerTest.testUpdatingSubscriptionTriggersNewTargetAssignment: a changed
    subscription bumps the group epoch and recomputes the target; an unchanged heartbeat
    recomputes nothing."""
    assignor = MockPartitionAssignor()
    ctx = make_context(assignor, TOPICS, [stable_member("m1", 10, 9, {"foo": [0, 1, 2, 3, 4, 5]}, topics=["foo"])],
                       epoch=10)
    ctx.heartbeat(member_id="m1", member_epoch=10)
    assert assignor.calls == []
    assignor.prepare({"m1": {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}})
    r = ctx.heartbeat(member_id="m1", member_epoch=10, subscribed_topic_names=("foo", "bar"))
    assert ctx.group.group_epoch == 11 and len(assignor.calls) == 1
    assert (r.member_epoch, r.assignment) == (11, tps(bar=[0, 1, 2], foo=[0, 1, 2, 3, 4, 5]))


def test_regex_subscription_and_new_topic_bump_epoch() -> None:
    """GroupMetadataManager.hasMemberSubscriptionChanged (a changed SubscribedTopicRegex bumps the
    epoch) and GroupMetadataManagerTest.testOnNewMetadataImage (new metadata for a subscribed
    topic refreshes the subscription metadata at the next heartbeat and bumps the epoch)."""
    assignor = MockPartitionAssignor()
    assignor.prepare({"m1": {"foo": [0, 1]}})
    ctx = make_context(assignor, {"foo": 2, "other": 1})
    ctx.heartbeat(member_id="m1", member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_regex="fo.*",
                  topic_partitions=())
    assert ctx.group.subscription_metadata == {"foo": 2}
    epoch = ctx.group.group_epoch
    ctx.group.handle(TopicsChanged((("foo", 2), ("other", 1), ("fox", 3))), 1)
    assert ctx.group.group_epoch == epoch  # nothing happens until a member heartbeats
    assignor.prepare({"m1": {"foo": [0, 1], "fox": [0, 1, 2]}})
    r = ctx.heartbeat(member_id="m1", member_epoch=epoch)
    assert ctx.group.group_epoch == epoch + 1
    assert r.assignment == tps(foo=[0, 1], fox=[0, 1, 2])
    ctx.group.handle(TopicsChanged((("foo", 2), ("other", 5), ("fox", 3))), 2)  # not subscribed
    ctx.heartbeat(member_id="m1", member_epoch=epoch + 1)
    assert ctx.group.group_epoch == epoch + 1


def test_leaving_member_bumps_group_epoch() -> None:
    """GroupMetadataManagerTest.testLeavingMemberBumpsGroupEpoch: epoch -1 removes the member,
    answers with epoch -1 and bumps the group epoch (the group is ASSIGNING until the next
    heartbeat computes the new target)."""
    ctx = two_member_group(MockPartitionAssignor())
    r = ctx.heartbeat(member_id="m2", member_epoch=-1)
    assert (r.error_code, r.member_id, r.member_epoch) == (ErrorCode.NONE, "m2", -1)
    assert "m2" not in ctx.group.members and ctx.group.group_epoch == 11
    assert CancelTimer(SessionTimeout("m2")) in ctx.outputs
    assert ctx.group.state is ConsumerGroupState.ASSIGNING


def static_group(assignor: MockPartitionAssignor):
    return make_context(assignor, TOPICS, [
        stable_member("m1", 10, 9, {"foo": [0, 1, 2], "bar": [0, 1]}, instance_id="i1"),
        stable_member("m2", 10, 9, {"foo": [3, 4, 5], "bar": [2]}, instance_id="i2"),
    ], epoch=10)


def test_static_member_temporary_leave_and_rejoin_with_assignment() -> None:
    """GroupMetadataManagerTest.testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves and
    testStaticMemberGetsBackAssignmentUponRejoin: epoch -2 keeps the member (epoch -2) and its
    partitions without bumping the group epoch; the instance rejoining under a new member id
    replaces it and gets the same partitions back, still without a new group epoch."""
    assignor = MockPartitionAssignor()
    ctx = static_group(assignor)
    r = ctx.heartbeat(member_id="m2", member_epoch=-2, instance_id="i2")
    assert (r.member_id, r.member_epoch) == ("m2", -2)
    assert ctx.group.group_epoch == 10 and ctx.group.members["m2"].member_epoch == -2
    assert ctx.group.current_partition_epoch("foo", 3) == -2  # still held

    r = ctx.heartbeat(member_id="m2-new", member_epoch=0, instance_id="i2", rebalance_timeout_ms=5000,
                      subscribed_topic_names=("foo", "bar"), server_assignor="range", topic_partitions=())
    assert r.error_code is ErrorCode.NONE
    assert (r.member_id, r.member_epoch, r.assignment) == ("m2-new", 10, tps(bar=[2], foo=[3, 4, 5]))
    assert ctx.group.group_epoch == 10 and assignor.calls == []
    assert "m2" not in ctx.group.members and ctx.group.static_members["i2"] == "m2-new"


def test_static_member_errors() -> None:
    """GroupMetadataManagerTest.testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId,
    testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins,
    testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins,
    testShouldThrowUnknownMemberIdExceptionWhenUnknownStaticMemberLeaves and
    testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdLeaves."""
    ctx = static_group(MockPartitionAssignor())
    join = {"member_epoch": 0, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo",), "topic_partitions": ()}
    assert ctx.heartbeat(member_id="x", instance_id="i1", **join).error_code is ErrorCode.UNRELEASED_INSTANCE_ID
    assert ctx.heartbeat(member_id="x", instance_id="i9", member_epoch=11).error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat(member_id="x", instance_id="i1", member_epoch=10).error_code is ErrorCode.FENCED_INSTANCE_ID
    assert ctx.heartbeat(member_id="x", instance_id="i9", member_epoch=-2).error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat(member_id="x", instance_id="i1", member_epoch=-2).error_code is ErrorCode.FENCED_INSTANCE_ID


def test_leaving_static_member_bumps_group_epoch() -> None:
    """GroupMetadataManagerTest.testLeavingStaticMemberBumpsGroupEpoch: a static member leaving
    for good (epoch -1) is removed and bumps the group epoch."""
    ctx = static_group(MockPartitionAssignor())
    r = ctx.heartbeat(member_id="m2", member_epoch=-1, instance_id="i2")
    assert r.member_epoch == -1 and "m2" not in ctx.group.members and ctx.group.group_epoch == 11


def test_session_timeout_expiration() -> None:
    """GroupMetadataManagerTest.testSessionTimeoutExpiration (and ...StaticMember): every
    heartbeat re-arms the session timeout; when it fires the member is fenced and the group
    epoch bumped."""
    assignor = MockPartitionAssignor()
    assignor.prepare({"m1": {"foo": [0, 1, 2]}})
    ctx = make_context(assignor, {"foo": 3})
    ctx.heartbeat(member_id="m1", member_epoch=0, rebalance_timeout_ms=90000, subscribed_topic_names=("foo",),
                  topic_partitions=())
    assert ArmTimer(SessionTimeout("m1"), 45000) in ctx.outputs
    out = ctx.group.handle(SessionTimeout("m1"), 45000)
    assert Log(ConsumerMemberFenced(45000, "fooup", "m1", "the member session expired.")) in out
    assert ctx.group.members == {} and ctx.group.group_epoch == 2
    assert ctx.group.state is ConsumerGroupState.EMPTY


def test_rebalance_timeout_expiration() -> None:
    """GroupMetadataManagerTest.testRebalanceTimeoutExpiration and testRebalanceTimeoutLifecycle:
    a member that must revoke gets a rebalance timeout armed at its epoch; if it has not moved
    on when it fires it is fenced (epoch 2 -> 3), and the timeout is cancelled once it moves."""
    assignor = MockPartitionAssignor()
    assignor.prepare({"m1": {"foo": [0, 1, 2]}})
    ctx = make_context(assignor, {"foo": 3})
    join = {"member_epoch": 0, "rebalance_timeout_ms": 10000, "subscribed_topic_names": ("foo",), "topic_partitions": ()}
    assert ctx.heartbeat(member_id="m1", **join).member_epoch == 1
    assignor.prepare({"m1": {"foo": [0, 1]}, "m2": {"foo": [2]}})
    r2 = ctx.heartbeat(member_id="m2", **join)
    assert (r2.member_epoch, r2.assignment) == (2, ())
    r1 = ctx.heartbeat(member_id="m1", member_epoch=1)
    assert (r1.member_epoch, r1.assignment) == (1, tps(foo=[0, 1]))
    assert ArmTimer(RebalanceTimeout("m1"), 10000) in ctx.outputs
    out = ctx.group.handle(RebalanceTimeout("m1"), 10001)
    assert Log(ConsumerMemberFenced(10001, "fooup", "m1", "it failed to transition from epoch 1 within 10000ms.")) in out
    assert "m1" not in ctx.group.members and ctx.group.group_epoch == 3

    # Lifecycle: acknowledging the revocation cancels the timeout.
    assignor.prepare({"m1": {"foo": [0, 1, 2]}})
    ctx = make_context(assignor, {"foo": 3})
    ctx.heartbeat(member_id="m1", **join)
    assignor.prepare({"m1": {"foo": [0, 1]}, "m2": {"foo": [2]}})
    ctx.heartbeat(member_id="m2", **join)
    ctx.heartbeat(member_id="m1", member_epoch=1)
    ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=tps(foo=[0, 1]))
    assert CancelTimer(RebalanceTimeout("m1")) in ctx.outputs
    assert ctx.group.handle(RebalanceTimeout("m1"), 10001) == []  # left the epoch: ignored


def test_consumer_group_states() -> None:
    """GroupMetadataManagerTest.testConsumerGroupStates: EMPTY, then ASSIGNING while the group
    epoch is ahead of the target, RECONCILING while a member is not at the target epoch,
    STABLE; and Kafka's table of valid previous states (DEAD only from EMPTY)."""
    assignor = MockPartitionAssignor()
    ctx = make_context(assignor, {"foo": 3})
    assert ctx.group.state is ConsumerGroupState.EMPTY
    assignor.prepare({"m1": {"foo": [0, 1, 2]}})
    join = {"member_epoch": 0, "rebalance_timeout_ms": 10000, "subscribed_topic_names": ("foo",), "topic_partitions": ()}
    ctx.heartbeat(member_id="m1", **join)
    assert ctx.group.state is ConsumerGroupState.STABLE
    assignor.prepare({"m1": {"foo": [0, 1]}, "m2": {"foo": [2]}})
    ctx.heartbeat(member_id="m2", **join)
    assert ctx.group.state is ConsumerGroupState.RECONCILING
    ctx.heartbeat(member_id="m2", member_epoch=2, topic_partitions=())
    ctx.heartbeat(member_id="m1", member_epoch=-1)
    assert ctx.group.state is ConsumerGroupState.ASSIGNING
    assert VALID_PREVIOUS_GROUP_STATES[ConsumerGroupState.DEAD] == {ConsumerGroupState.EMPTY}


def test_offset_commit_validation() -> None:
    """ConsumerGroup.validateOffsetCommit / validateOffsetFetch: an unknown member is
    UNKNOWN_MEMBER_ID, an epoch other than the member's is STALE_MEMBER_EPOCH; an empty group
    takes commits with epoch -1 (admin)."""
    from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
        OffsetCommitRequest,
        OffsetFetchRequest,
        RequestReceived,
        Respond,
    )

    ctx = two_member_group(MockPartitionAssignor())

    def commit(member: str, epoch: int) -> ErrorCode:
        out = ctx.group.handle(RequestReceived("c", OffsetCommitRequest("fooup", member, epoch, (("foo-0", 5),))), 0)
        response = out[0]
        assert isinstance(response, Respond)
        return response.response.error_code

    assert commit("nobody", 10) is ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("m1", 9) is ErrorCode.STALE_MEMBER_EPOCH
    assert commit("m1", 10) is ErrorCode.NONE
    out = ctx.group.handle(RequestReceived("c", OffsetFetchRequest("fooup", "m1", 10, ("foo-0", "foo-1"))), 0)
    fetched = out[0]
    assert isinstance(fetched, Respond)
    assert fetched.response.offsets == (("foo-0", 5), ("foo-1", -1))  # type: ignore[union-attr]
    empty = make_context(MockPartitionAssignor(), TOPICS)
    out = empty.group.handle(RequestReceived("c", OffsetCommitRequest("fooup", "", -1, (("foo-0", 1),))), 0)
    assert out[0].response.error_code is ErrorCode.NONE  # type: ignore[union-attr]


def test_target_assignment_line_carries_a_modelled_assignor_time() -> None:
    """GroupMetadataManager logs "Computed a new target assignment for epoch {} with '{}'
    assignor in {}ms" with the broker's wall-clock difference; the sans-I/O coordinator reads no
    clock, so it reports a model through Kafka's published ServerSideAssignorBenchmark figures
    (10,000 members, 500,000 partitions: uniform 13 ms homogeneous / 315 ms heterogeneous, range
    ~38 / 195 ms), truncated to whole ms as Kafka's ``time.milliseconds()`` difference is."""
    from kafka_rebalance.protocol.modern.consumer.coordinator import modelled_assignor_time_ms

    assert modelled_assignor_time_ms("uniform", 500_000, True) == 13
    assert modelled_assignor_time_ms("uniform", 500_000, False) == 315
    assert modelled_assignor_time_ms("range", 500_000, False) == 195
    assert modelled_assignor_time_ms("uniform", 200, True) == 0  # a small group: "in 0ms", as a broker logs
