"""A consumer group replayed from its records on a new coordinator (coordinator failover).
Facts from Kafka's GroupMetadataManager.onLoaded and GroupMetadataManagerTest.testOnLoaded."""

from __future__ import annotations

from kafka_rebalance.protocol.effects import ArmTimer, Log
from kafka_rebalance.protocol.logrecords import ConsumerGroupLoaded
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
    ConsumerGroupHeartbeatRequest,
    GroupLoaded,
    OffsetCommitRequest,
    RebalanceTimeout,
    Received,
    Respond,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import (
    ClassicMemberMetadata,
    PersistConsumerGroup,
)
from kafka_rebalance.protocol.modern.consumer.records import OffsetsTopicRecord, group_records, replay
from tests.protocol.modern.helpers import MockPartitionAssignor, tps

TOPICS = {"foo": 6, "bar": 3}


def written(group: ConsumerGroupCoordinator, outputs: list[list[object]]) -> list[OffsetsTopicRecord]:
    """The group's records as a coordinator wrote them: the group whole (as it was loaded), then
    what each ``handle`` call wrote."""
    log: list[OffsetsTopicRecord] = []
    for out in outputs:
        log.extend(o.record for o in out if isinstance(o, PersistConsumerGroup))
    return log


def replayed(log: list[OffsetsTopicRecord], assignor: MockPartitionAssignor) -> ConsumerGroupCoordinator:
    groups, classic = replay(log, TOPICS, assign=assignor)
    assert classic == ()
    return groups["group-id"]


def reconciling_group() -> tuple[ConsumerGroupCoordinator, MockPartitionAssignor, list[OffsetsTopicRecord]]:
    """Member 1 (consumer protocol) holds everything at epoch 10; member 2 joins, so member 1
    must revoke (UNREVOKED_PARTITIONS) and member 2 waits (UNRELEASED_PARTITIONS); member 3 is a
    classic member (session timeout 5 s), STABLE."""
    assignor = MockPartitionAssignor()
    member1 = ConsumerGroupMember(
        "member-1", rebalance_timeout_ms=30000, subscribed_topic_names=("foo", "bar"), server_assignor="range",
        assignment=MemberAssignment(MemberAssignmentState.STABLE, 10, 9, partitions({"foo": range(6), "bar": range(2)}), {}))
    member3 = ConsumerGroupMember(
        "member-3", rebalance_timeout_ms=20000, subscribed_topic_names=("bar",), server_assignor="range",
        assignment=MemberAssignment(MemberAssignmentState.STABLE, 10, 9, partitions({"bar": [2]}), {}),
        classic=ClassicMemberMetadata(5000, ("range",)))
    group = ConsumerGroupCoordinator.loaded(
        "group-id", TOPICS, 10, 10, [member1, member3],
        {"member-1": partitions({"foo": range(6), "bar": range(2)}), "member-3": partitions({"bar": [2]})},
        assign=assignor)
    assignor.prepare({"member-1": {"foo": [0, 1, 2], "bar": [0, 1]}, "member-2": {"foo": [3, 4, 5]},
                      "member-3": {"bar": [2]}})
    log: list[OffsetsTopicRecord] = list(group_records(group))
    log += written(group, [group.handle(Received("c2", ConsumerGroupHeartbeatRequest(
        "group-id", "member-2", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("foo",),
        server_assignor="range", topic_partitions=())), 100)])
    log += written(group, [group.handle(Received("c1", ConsumerGroupHeartbeatRequest(
        "group-id", "member-1", 10, topic_partitions=tps(foo=range(6), bar=range(2)))), 200)])
    return group, assignor, log


def test_a_replayed_group_is_the_group_its_records_describe() -> None:
    """GroupMetadataManager.replay of the consumer group's records gives back its epochs, members
    (with their classic metadata), target assignment, subscription metadata and offsets."""
    group, assignor, log = reconciling_group()
    log += written(group, [group.handle(Received("c3", OffsetCommitRequest("group-id", "member-1", 10, (("foo-0", 17),))),
                                        250)])
    assert group.members["member-1"].assignment.state is MemberAssignmentState.UNREVOKED_PARTITIONS
    assert group.members["member-2"].assignment.state is MemberAssignmentState.UNRELEASED_PARTITIONS
    loaded = replayed(log, assignor)
    assert (loaded.group_epoch, loaded.assignment_epoch, loaded.state) == (11, 11, group.state)
    assert loaded.members == group.members and loaded.target == group.target
    assert loaded.static_members == group.static_members and loaded.partition_epochs == group.partition_epochs
    assert loaded.subscription_metadata == group.subscription_metadata and loaded.offsets == {"foo-0": 17}


def test_on_loaded_arms_every_members_session_and_the_revoking_members_rebalance_timeout() -> None:
    """GroupMetadataManager.onLoaded (GroupMetadataManagerTest.testOnLoaded): "Loaded consumer
    group {} with {} members."; a session timeout of group.consumer.session.timeout.ms (45 s) for
    every member (the classic member's own 5 s is not used: scheduleConsumerGroupSessionTimeout
    without a timeout), and a rebalance timeout for the member in UNREVOKED_PARTITIONS."""
    group, assignor, log = reconciling_group()
    loaded = replayed(log, assignor)
    out = loaded.handle(GroupLoaded(), 5000)
    [log] = [o.record for o in out if isinstance(o, Log)]
    assert log == ConsumerGroupLoaded(5000, "group-id", 3)
    timers = sorted((type(o.timer).__name__, o.timer.member_id, o.deadline_ms) for o in out if isinstance(o, ArmTimer))
    assert timers == [("RebalanceTimeout", "member-1", 5000 + 30000), ("SessionTimeout", "member-1", 50000),
                      ("SessionTimeout", "member-2", 50000), ("SessionTimeout", "member-3", 50000)]
    # the re-armed rebalance timeout fences member 1 if it still has not revoked
    fenced = loaded.handle(RebalanceTimeout("member-1"), 35000)
    assert "member-1" not in loaded.members and any(isinstance(o, Log) for o in fenced)


def test_the_replayed_group_answers_as_the_old_one_would() -> None:
    """The same heartbeats to the old group and to its replay get the same answers: member 1
    revokes, member 2 gets the released partitions, both STABLE at epoch 11."""
    group, assignor, log = reconciling_group()
    loaded = replayed(log, assignor)
    loaded.handle(GroupLoaded(), 300)
    heartbeats = [
        ("c1", ConsumerGroupHeartbeatRequest("group-id", "member-1", 10, topic_partitions=tps(foo=[0, 1, 2], bar=[0, 1]))),
        ("c2", ConsumerGroupHeartbeatRequest("group-id", "member-2", 11, topic_partitions=())),
    ]
    for connection, request in heartbeats:
        answers = [[o.response for o in g.handle(Received(connection, request), 400) if isinstance(o, Respond)]
                   for g in (group, loaded)]
        assert answers[0] == answers[1]
    assert {m: loaded.members[m].assignment.state for m in loaded.members} == {
        "member-1": MemberAssignmentState.STABLE, "member-2": MemberAssignmentState.STABLE, "member-3": MemberAssignmentState.STABLE}
    assert loaded.members == group.members
