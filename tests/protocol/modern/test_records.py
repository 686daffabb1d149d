"""A consumer group replayed from its records on a new coordinator (coordinator failover).
Facts from Kafka's GroupMetadataManager.onLoaded and GroupMetadataManagerTest.testOnLoaded."""

from __future__ import annotations

from dataclasses import replace

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
    RequestReceived,
    Respond,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import (
    ClassicMemberMetadata,
    ConsumerGroupMetadataRecord,
    ConsumerGroupTargetAssignmentMemberRecord,
    ConsumerGroupTombstone,
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
    log += written(group, [group.handle(RequestReceived("c2", ConsumerGroupHeartbeatRequest(
        "group-id", "member-2", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("foo",),
        server_assignor="range", topic_partitions=())), 100)])
    log += written(group, [group.handle(RequestReceived("c1", ConsumerGroupHeartbeatRequest(
        "group-id", "member-1", 10, topic_partitions=tps(foo=range(6), bar=range(2)))), 200)])
    return group, assignor, log


def test_a_replayed_group_is_the_group_its_records_describe() -> None:
    """GroupMetadataManager.replay of the consumer group's records gives back its epochs, members
    (with their classic metadata), target assignment, subscription metadata and offsets."""
    group, assignor, log = reconciling_group()
    log += written(group, [group.handle(RequestReceived("c3", OffsetCommitRequest("group-id", "member-1", 10, (("foo-0", 17),))),
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
        answers = [[o.response for o in g.handle(RequestReceived(connection, request), 400) if isinstance(o, Respond)]
                   for g in (group, loaded)]
        assert answers[0] == answers[1]
    assert {m: loaded.members[m].assignment.state for m in loaded.members} == {
        "member-1": MemberAssignmentState.STABLE, "member-2": MemberAssignmentState.STABLE, "member-3": MemberAssignmentState.STABLE}
    assert loaded.members == group.members


def kinds(out: list[object]) -> list[str]:
    """The records written, by kind (a tombstone as ``-kind``), in order."""
    names = []
    for o in out:
        if isinstance(o, PersistConsumerGroup):
            record = o.record
            names.append(f"-{record.kind.value}" if isinstance(record, ConsumerGroupTombstone)
                         else type(record).__name__.removesuffix("Record"))
    return names


def join(member: str, topics: tuple[str, ...], epoch: int = 0) -> RequestReceived:
    return RequestReceived(f"c-{member}", ConsumerGroupHeartbeatRequest(
        "group-id", member, epoch, rebalance_timeout_ms=30000, subscribed_topic_names=topics,
        topic_partitions=() if epoch == 0 else None))


def test_a_member_joining_an_empty_group_writes_each_record_kind_once() -> None:
    """GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup: the member's subscription, the
    group epoch, its target and the assignment epoch, its current assignment; a steady heartbeat
    writes nothing."""
    group = ConsumerGroupCoordinator("group-id", TOPICS)
    out = group.handle(join("m1", ("foo",)), 0)
    assert kinds(out) == ["ConsumerGroupMemberMetadata", "ConsumerGroupMetadata", "ConsumerGroupTargetAssignmentMember",
                          "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupCurrentMemberAssignment"]
    [epoch] = [o.record for o in out if isinstance(o, PersistConsumerGroup)
               and isinstance(o.record, ConsumerGroupMetadataRecord)]
    assert epoch == ConsumerGroupMetadataRecord("group-id", 1, (("foo", 6),))
    assert kinds(group.handle(RequestReceived("c-m1", ConsumerGroupHeartbeatRequest("group-id", "m1", 1)), 100)) == []


def test_target_records_only_for_the_members_whose_target_changed() -> None:
    """TargetAssignmentBuilder.build writes a member's target only when it differs from the last
    one (or the member had none): four members share foo (the built-in uniform assignor, on
    arrays); a fifth subscribed to bar alone joins: one target record, its own."""
    group = ConsumerGroupCoordinator("group-id", {"foo": 8, "bar": 3})
    for member in ("m1", "m2", "m3", "m4"):
        group.handle(join(member, ("foo",)), 0)
    out = group.handle(join("m5", ("bar",)), 10)
    targets = [o.record for o in out if isinstance(o, PersistConsumerGroup)
               and isinstance(o.record, ConsumerGroupTargetAssignmentMemberRecord)]
    assert targets == [ConsumerGroupTargetAssignmentMemberRecord("group-id", "m5", {"bar": frozenset({0, 1, 2})})]


def test_a_member_leaving_tombstones_its_records_and_bumps_the_epoch() -> None:
    """consumerGroupLeave -> removeMember: the current assignment, target and subscription
    tombstones, then the new group epoch; a replay no longer has the member, and one that joins
    again under the same id comes last in the coordinator's order, as in the live group."""
    group = ConsumerGroupCoordinator("group-id", TOPICS)
    log = written(group, [group.handle(join(m, ("foo",)), 0) for m in ("m1", "m2")])
    out = group.handle(RequestReceived("c-m1", ConsumerGroupHeartbeatRequest("group-id", "m1", -1)), 10)
    assert kinds(out)[:4] == ["-ConsumerGroupCurrentMemberAssignment", "-ConsumerGroupTargetAssignmentMember",
                              "-ConsumerGroupMemberMetadata", "ConsumerGroupMetadata"]
    log += written(group, [out])
    groups, _ = replay(log, TOPICS)
    assert list(groups["group-id"].members) == ["m2"]
    log += written(group, [group.handle(join("m1", ("foo",)), 20)])
    groups, _ = replay(log, TOPICS)
    assert list(groups["group-id"].members) == list(group.members) == ["m2", "m1"]
    assert groups["group-id"].members == group.members and dict(groups["group-id"].target) == dict(group.target)


def test_a_static_member_replaced_moves_its_records_to_the_new_member_id() -> None:
    """GroupMetadataManager.replaceStaticMember: the old member id's records are tombstoned and
    the new one's written, its target the old one's."""
    group = ConsumerGroupCoordinator("group-id", TOPICS)
    request = ConsumerGroupHeartbeatRequest("group-id", "m1", 0, instance_id="i1", rebalance_timeout_ms=30000,
                                            subscribed_topic_names=("foo",), topic_partitions=())
    log = written(group, [group.handle(RequestReceived("c1", request), 0)])
    log += written(group, [group.handle(RequestReceived("c1", ConsumerGroupHeartbeatRequest(
        "group-id", "m1", -2, instance_id="i1")), 10)])
    out = group.handle(RequestReceived("c2", replace(request, member_id="m1b")), 20)
    assert kinds(out)[:4] == ["-ConsumerGroupCurrentMemberAssignment", "-ConsumerGroupTargetAssignmentMember",
                              "-ConsumerGroupMemberMetadata", "ConsumerGroupTargetAssignmentMember"]
    log += written(group, [out])
    loaded = replay(log, TOPICS)[0]["group-id"]
    assert loaded.members == group.members and loaded.static_members == {"i1": "m1b"}
    assert dict(loaded.target) == dict(group.target)


def test_a_downgrade_tombstones_the_consumer_group() -> None:
    """convertToClassicGroup -> ConsumerGroup.createGroupTombstoneRecords: every member's records,
    the assignment epoch and the group epoch deleted; a replay finds no consumer group."""
    group, assignor, log = reconciling_group()
    out = group.handle(RequestReceived("c2", ConsumerGroupHeartbeatRequest("group-id", "member-2", -1)), 300)
    out += group.handle(RequestReceived("c1", ConsumerGroupHeartbeatRequest("group-id", "member-1", -1)), 300)
    log += written(group, [out])
    assert kinds(out)[-2:] == ["-ConsumerGroupTargetAssignmentMetadata", "-ConsumerGroupMetadata"]
    assert replay(log, TOPICS, assign=assignor)[0] == {}
