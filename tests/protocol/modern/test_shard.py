"""One coordinator, many groups, classic and consumer side by side (``GroupCoordinatorShard``):
facts from Kafka's GroupMetadataManagerTest (group-coordinator, Kafka 4.1)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import ConsumerGroupConverted, ConsumerGroupLoaded
from kafka_rebalance.protocol.modern.consumer import coordinator_events as ce
from kafka_rebalance.protocol.modern.consumer.coordinator import ConsumerGroupConfig
from kafka_rebalance.protocol.modern.consumer.records import replay
from kafka_rebalance.protocol.modern.shard import (
    AppendRecord,
    ConsumerGroupTimer,
    GroupCoordinatorShard,
    PartitionLoaded,
    PartitionLoading,
    PartitionResigned,
    ShardOutput,
)

TOPICS = {"foo": 6, "bar": 3}


def heartbeat(group: str, member: str, epoch: int, topics: tuple[str, ...] | None = ("foo", "bar")) -> ce.RequestReceived:
    return ce.RequestReceived(f"conn-{member}", ce.ConsumerGroupHeartbeatRequest(
        group, member, epoch, rebalance_timeout_ms=5000, subscribed_topic_names=topics,
        server_assignor="range" if epoch == 0 else None, topic_partitions=() if epoch == 0 else None))


def join_classic(group: str, connection: str = "conn-classic") -> cl.RequestReceived:
    subscription = cl.ConsumerProtocolSubscription(("foo",))
    return cl.RequestReceived(connection, cl.JoinGroupRequest(group, 10000, 10000, "", None, "consumer",
                                                       (cl.JoinGroupRequestProtocol("range", subscription),)))


def responses(out: list[ShardOutput]) -> list[object]:
    return [o.response for o in out if isinstance(o, ce.Respond | cl.Respond)]


def test_unknown_group_id() -> None:
    """GroupMetadataManagerTest.testUnknownGroupId: a ConsumerGroupHeartbeat with member epoch 100
    for a group the coordinator never had: GROUP_ID_NOT_FOUND, and no group is created. So is a
    leave (epoch -1)."""
    shard = GroupCoordinatorShard(TOPICS)
    for epoch in (100, -1):
        [response] = responses(shard.handle(heartbeat("fooup", "member", epoch), 0))
        assert isinstance(response, ce.ConsumerGroupHeartbeatResponse)
        assert response.error_code is ErrorCode.GROUP_ID_NOT_FOUND
        assert response.error_message == "Consumer group fooup not found."
        assert shard.group_type("fooup") is None


def test_consumer_and_classic_groups_side_by_side() -> None:
    """A join (epoch 0) creates a consumer group; a JoinGroup creates a classic group; each keeps
    its own members, and a consumer group's timers are named by its group."""
    shard = GroupCoordinatorShard(TOPICS)
    out = shard.handle(heartbeat("orders", "m1", 0), 0)
    [response] = responses(out)
    assert isinstance(response, ce.ConsumerGroupHeartbeatResponse) and response.error_code is ErrorCode.NONE
    assert response.member_epoch == 1
    timers = [o.timer for o in out if isinstance(o, ArmTimer)]
    assert ConsumerGroupTimer("orders", ce.SessionTimeout("m1")) in timers

    [joined] = responses(shard.handle(join_classic("billing"), 0))
    assert isinstance(joined, cl.JoinGroupResponse)
    assert joined.error_code is ErrorCode.MEMBER_ID_REQUIRED  # JoinGroup v4+: first, get a member id
    assert (shard.group_type("orders"), shard.group_type("billing")) == ("consumer", "classic")

    # A second consumer group on the same coordinator is independent of the first.
    [other] = responses(shard.handle(heartbeat("payments", "m1", 0, ("bar",)), 0))
    assert isinstance(other, ce.ConsumerGroupHeartbeatResponse) and other.member_epoch == 1
    assert set(shard.consumer_groups) == {"orders", "payments"}

    # The session of m1 in "orders" expires; "payments" keeps its own m1.
    shard.handle(ConsumerGroupTimer("orders", ce.SessionTimeout("m1")), 45_000)
    assert "m1" not in shard.consumer_groups["orders"].members
    assert "m1" in shard.consumer_groups["payments"].members


def test_consumer_heartbeat_to_a_classic_group_that_cannot_upgrade() -> None:
    """getOrMaybeCreateConsumerGroup: a classic group with members, the migration policy
    disabled: "Group billing is not a consumer group." (GROUP_ID_NOT_FOUND); a heartbeat that
    does not join a classic group gets the same error."""
    shard = GroupCoordinatorShard(TOPICS, consumer_config=ConsumerGroupConfig(migration_policy="disabled"))
    [first] = responses(shard.handle(join_classic("billing"), 0))
    assert isinstance(first, cl.JoinGroupResponse)
    shard.handle(cl.RequestReceived("conn-classic", cl.JoinGroupRequest(
        "billing", 10000, 10000, first.member_id, None, "consumer",
        (cl.JoinGroupRequestProtocol("range", cl.ConsumerProtocolSubscription(("foo",))),))), 0)
    for epoch in (0, 5):
        [response] = responses(shard.handle(heartbeat("billing", "m9", epoch), 0))
        assert isinstance(response, ce.ConsumerGroupHeartbeatResponse)
        assert response.error_code is ErrorCode.GROUP_ID_NOT_FOUND
        assert shard.group_type("billing") == "classic"


def test_classic_join_to_a_consumer_group_is_answered_by_that_group() -> None:
    """A JoinGroup for a consumer group's id goes to the consumer group (its classic members,
    KIP-848's upgrade path), not to the classic coordinator."""
    shard = GroupCoordinatorShard(TOPICS)
    shard.handle(heartbeat("orders", "m1", 0), 0)
    shard.handle(join_classic("orders"), 0)
    assert shard.group_type("orders") == "consumer"
    assert shard.classic.group("orders") is None


def test_an_empty_classic_group_is_replaced_by_a_consumer_group() -> None:
    """A join (epoch 0) to an empty classic group replaces it (maybeDeleteEmptyClassicGroup)."""
    shard = GroupCoordinatorShard(TOPICS)
    shard.handle(join_classic("billing"), 0)  # MEMBER_ID_REQUIRED: a pending member, group Empty
    assert shard.group_type("billing") == "classic"
    [response] = responses(shard.handle(heartbeat("billing", "m1", 0), 0))
    assert isinstance(response, ce.ConsumerGroupHeartbeatResponse) and response.error_code is ErrorCode.NONE
    assert shard.group_type("billing") == "consumer"


def appended(out: list[ShardOutput], log: list[AppendRecord]) -> list[ShardOutput]:
    log.extend(o for o in out if isinstance(o, AppendRecord))
    return out


def test_a_new_coordinator_loads_classic_and_consumer_groups_from_the_records_the_old_one_appended() -> None:
    """Coordinator failover (CoordinatorRuntime's unload and load, GroupMetadataManager.replay then
    onLoaded): the old shard resigns (a waiting JoinGroup gets NOT_COORDINATOR, its groups are
    gone); the new one answers COORDINATOR_NOT_AVAILABLE to a heartbeat and
    COORDINATOR_LOAD_IN_PROGRESS to a JoinGroup while it loads; loaded from the appended records,
    it holds the same consumer group (epochs, members, targets, offsets) and the classic group as
    stored."""
    old = GroupCoordinatorShard(TOPICS)
    log: list[AppendRecord] = []
    appended(old.handle(heartbeat("orders", "m1", 0), 0), log)
    appended(old.handle(heartbeat("orders", "m2", 0, ("foo",)), 10), log)
    appended(old.handle(ce.RequestReceived("c", ce.OffsetCommitRequest("orders", "m1", 1, (("bar-0", 5),))), 20), log)
    appended(old.handle(cl.RequestReceived("c", cl.OffsetCommitRequest("billing", -1, "", None, (cl.PartitionOffset("foo-0", 3),))),
                        0), log)
    [first] = responses(appended(old.handle(join_classic("billing"), 0), log))
    assert isinstance(first, cl.JoinGroupResponse)
    rejoin = cl.RequestReceived("conn-classic", cl.JoinGroupRequest(
        "billing", 10000, 10000, first.member_id, None, "consumer",
        (cl.JoinGroupRequestProtocol("range", cl.ConsumerProtocolSubscription(("foo",))),)))
    appended(old.handle(rejoin, 0), log)  # waits for the initial rebalance delay
    orders, billing = (old.classic.partition_for(g) for g in ("orders", "billing"))

    resigned = old.handle(PartitionResigned(billing), 100) + old.handle(PartitionResigned(orders), 100)
    assert [r.error_code for r in responses(resigned)] == [ErrorCode.NOT_COORDINATOR]
    assert old.group_type("orders") is None and old.group_type("billing") is None

    new = GroupCoordinatorShard(TOPICS, partitions=())
    for partition in {orders, billing}:
        new.handle(PartitionLoading(partition), 100)
    [busy] = responses(new.handle(heartbeat("orders", "m1", 2), 150))
    assert isinstance(busy, ce.ConsumerGroupHeartbeatResponse) and busy.error_code is ErrorCode.COORDINATOR_NOT_AVAILABLE
    [loading] = responses(new.handle(rejoin, 150))
    assert isinstance(loading, cl.JoinGroupResponse) and loading.error_code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    loaded = []
    for partition in sorted({orders, billing}):
        loaded += new.handle(PartitionLoaded(partition, tuple(a.record for a in log if a.partition == partition)), 200)
    assert new.group_type("orders") == "consumer" and new.group_type("billing") == "classic"
    billing_group = new.classic.group("billing")  # stored as its offsets (no generation was stored)
    assert billing_group is not None and billing_group.offsets == {"foo-0": 3}
    group = new.consumer_groups["orders"]
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert list(group.members) == ["m1", "m2"] and group.offsets == {"bar-0": 5}
    assert ConsumerGroupLoaded(200, "orders", 2) in [o.record for o in loaded if isinstance(o, Log)]
    [answer] = responses(new.handle(heartbeat("orders", "m1", 1), 300))
    assert isinstance(answer, ce.ConsumerGroupHeartbeatResponse) and answer.error_code is ErrorCode.NONE


def test_a_classic_join_to_an_empty_consumer_group_converts_it_to_a_classic_group() -> None:
    """GroupMetadataManager.classicGroupJoin -> getOrMaybeCreateClassicGroup: an empty consumer
    group is deleted (its records tombstoned) and a classic group takes the JoinGroup; the
    offsets stay."""
    shard = GroupCoordinatorShard(TOPICS)
    log: list[AppendRecord] = []
    appended(shard.handle(heartbeat("orders", "m1", 0), 0), log)
    appended(shard.handle(ce.RequestReceived("c", ce.OffsetCommitRequest("orders", "m1", 1, (("foo-1", 9),))), 5), log)
    appended(shard.handle(heartbeat("orders", "m1", -1), 10), log)
    assert not shard.consumer_groups["orders"].members
    [response] = responses(appended(shard.handle(join_classic("orders"), 20), log))
    assert isinstance(response, cl.JoinGroupResponse) and response.error_code is ErrorCode.MEMBER_ID_REQUIRED
    assert shard.group_type("orders") == "classic"
    group = shard.classic.group("orders")
    assert group is not None and group.offsets == {"foo-1": 9}
    groups, classic = replay([a.record for a in log], TOPICS)
    assert groups == {} and any(isinstance(r, cl.GroupMetadataRecord) for r in classic)


JOIN = {"member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo",),
        "topic_partitions": ()}


@pytest.mark.parametrize(("fields", "code", "message"), [
    ({"group_id": "", "member_id": "m", "member_epoch": 1}, ErrorCode.INVALID_REQUEST, "GroupId can't be empty."),
    ({"group_id": "   ", "member_id": "m", "member_epoch": 1}, ErrorCode.INVALID_REQUEST, "GroupId can't be empty."),
    ({**JOIN, "rebalance_timeout_ms": -1}, ErrorCode.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    ({**JOIN, "topic_partitions": None}, ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."),
    ({**JOIN, "subscribed_topic_names": None}, ErrorCode.INVALID_REQUEST,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    ({"member_id": "", "member_epoch": 1, "api_version": 0}, ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
    ({**JOIN, "member_id": ""}, ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),  # v1: always named
    ({"member_id": "m", "member_epoch": 1, "instance_id": ""}, ErrorCode.INVALID_REQUEST, "InstanceId can't be empty."),
    ({"member_id": "m", "member_epoch": 1, "rack_id": ""}, ErrorCode.INVALID_REQUEST, "RackId can't be empty."),
    ({"member_id": "m", "member_epoch": 1, "server_assignor": "bar"}, ErrorCode.UNSUPPORTED_ASSIGNOR,
     "ServerAssignor bar is not supported. Supported assignors: uniform, range."),
    ({"member_id": "m", "member_epoch": -2, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ("foo", "bar"),
      "topic_partitions": ()}, ErrorCode.INVALID_REQUEST, "InstanceId can't be null."),
    ({"member_id": "m", "member_epoch": -3}, ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."),
])
def test_a_heartbeat_is_validated_before_any_group_is_looked_up(fields: dict[str, Any], code: ErrorCode,
                                                                message: str) -> None:
    """GroupMetadataManagerTest#testConsumerHeartbeatRequestValidation, with Kafka 4.1's rules
    (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid, its
    GroupCoordinatorServiceTest#testConsumerGroupHeartbeatRequestValidation: checked in the service,
    before the shard): an invalid request is answered with its error whatever the group (here
    none: not GROUP_ID_NOT_FOUND), creates no group, converts no classic group, and is refused
    so even by a coordinator still loading the group's partition."""
    request = ce.ConsumerGroupHeartbeatRequest(**{"group_id": "fooup", **fields})
    shard = GroupCoordinatorShard(TOPICS)
    [response] = responses(shard.handle(ce.RequestReceived("c", request), 0))
    assert isinstance(response, ce.ConsumerGroupHeartbeatResponse)
    assert (response.error_code, response.error_message) == (code, message)
    assert shard.group_type(request.group_id) is None and not shard.consumer_groups

    shard.handle(join_classic("fooup"), 0)  # an empty classic group a valid join would replace
    [again] = responses(shard.handle(ce.RequestReceived("c", request), 0))
    assert isinstance(again, ce.ConsumerGroupHeartbeatResponse) and again.error_code is code
    assert shard.group_type("fooup") == "classic"

    loading = GroupCoordinatorShard(TOPICS, partitions=())
    loading.handle(PartitionLoading(loading.classic.partition_for(request.group_id)), 0)
    [refused] = responses(loading.handle(ce.RequestReceived("c", request), 0))
    assert isinstance(refused, ce.ConsumerGroupHeartbeatResponse) and refused.error_code is code


def test_a_valid_heartbeat_for_no_group_is_group_id_not_found() -> None:
    """The contrast: the same member epoch 1, valid, to a group the coordinator does not have."""
    shard = GroupCoordinatorShard(TOPICS)
    request = ce.ConsumerGroupHeartbeatRequest("fooup", "m", 1)
    [response] = responses(shard.handle(ce.RequestReceived("c", request), 0))
    assert isinstance(response, ce.ConsumerGroupHeartbeatResponse)
    assert response.error_code is ErrorCode.GROUP_ID_NOT_FOUND


def test_an_upgrade_converts_the_classic_group_and_writes_the_consumer_group_whole() -> None:
    """GroupMetadataManager.convertToConsumerGroup: a classic group with a member waiting for its
    JoinGroup answer, a consumer's first heartbeat: the waiting JoinGroup gets
    REBALANCE_IN_PROGRESS, the classic group's timers are cancelled, "upgrade" is logged, the
    consumer group's records are appended (a replay of them is the live group) and the classic
    coordinator, left without groups, is let go."""
    shard = GroupCoordinatorShard(TOPICS)
    log: list[AppendRecord] = []
    [first] = responses(appended(shard.handle(join_classic("billing"), 0), log))
    assert isinstance(first, cl.JoinGroupResponse)
    rejoin = cl.RequestReceived("conn-classic", cl.JoinGroupRequest(
        "billing", 10000, 10000, first.member_id, None, "consumer",
        (cl.JoinGroupRequestProtocol("range", cl.ConsumerProtocolSubscription(("foo",))),)))
    appended(shard.handle(rejoin, 0), log)  # waits in the join phase (initial rebalance delay)
    out = appended(shard.handle(heartbeat("billing", "m1", 0), 10), log)
    answers = {type(r).__name__: r for r in responses(out)}
    assert answers["JoinGroupResponse"].error_code is ErrorCode.REBALANCE_IN_PROGRESS
    assert answers["ConsumerGroupHeartbeatResponse"].error_code is ErrorCode.NONE
    assert CancelTimer(cl.SessionExpired("billing", first.member_id)) in out
    assert ConsumerGroupConverted(10, "billing", "upgrade") in [o.record for o in out if isinstance(o, Log)]
    assert shard.group_type("billing") == "consumer" and shard.classic_group("billing") is None
    groups, _ = replay([a.record for a in log], TOPICS)
    live = shard.consumer_groups["billing"]
    assert groups["billing"].members == live.members and dict(groups["billing"].target) == dict(live.target)
