"""The online migration between classic and consumer groups, facts from Kafka's
GroupMetadataManagerTest (group-coordinator/src/test/java/org/apache/kafka/coordinator/group/)."""

from __future__ import annotations

import pytest

from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.modern.consumer.assignment import MemberAssignmentState
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupConfig,
    ConsumerGroupState,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    ClassicGroupMember,
    ClassicGroupSnapshot,
    ConsumerGroupHeartbeatRequest,
    ConvertedToClassic,
    RequestReceived,
    Respond,
    SessionTimeout,
)
from kafka_rebalance.protocol.modern.consumer.migration import consumer_group_for_heartbeat
from kafka_rebalance.protocol.modern.consumer.validation import ProtocolError
from tests.protocol.modern.helpers import MockPartitionAssignor

TOPICS = {"foo": 1, "bar": 1}


def classic_member(member_id: str, assignment: tuple[str, ...], protocols: tuple[str, ...] = ("range",)):
    return ClassicGroupMember(member_id, None, "client-id", 10000, 5000, protocols, ("foo", "bar"), assignment)


def join(member_id: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest("group-id", member_id, 0, rebalance_timeout_ms=5000,
                                         subscribed_topic_names=("foo", "bar"), server_assignor="range",
                                         topic_partitions=())


def test_heartbeat_converts_a_stable_classic_group() -> None:
    """GroupMetadataManagerTest.testConsumerGroupHeartbeatWithStableClassicGroup: the first
    ConsumerGroupHeartbeat converts the classic group (generation 0): member 1 keeps its
    partitions at epoch 0 with its classic session timeout; member 2 bumps the group epoch to 1
    and waits in UNRELEASED_PARTITIONS for bar-0, still held by member 1."""
    assignor = MockPartitionAssignor()
    assignor.prepare({"member-id-1": {"foo": [0]}, "member-id-2": {"bar": [0]}})
    classic = ClassicGroupSnapshot("group-id", 0, "consumer", "range", "Stable",
                                   (classic_member("member-id-1", ("foo-0", "bar-0")),))
    config = ConsumerGroupConfig(migration_policy="upgrade")
    group = consumer_group_for_heartbeat(classic, 0, TOPICS, config, assignor)
    m1 = group.members["member-id-1"]
    assert (m1.assignment.member_epoch, m1.assignment.state, m1.rebalance_timeout_ms) == (0, MemberAssignmentState.STABLE, 10000)
    assert m1.classic is not None and m1.classic.session_timeout_ms == 5000
    out = group.handle(RequestReceived("c", join("member-id-2")), 0)
    response = next(o.response for o in out if isinstance(o, Respond))
    assert (response.member_epoch, response.assignment) == (1, ())  # type: ignore[union-attr]
    assert group.members["member-id-2"].assignment.state is MemberAssignmentState.UNRELEASED_PARTITIONS
    assert group.group_epoch == 1


def test_empty_classic_group_is_replaced_and_a_busy_one_is_not_a_consumer_group() -> None:
    """GroupMetadataManagerTest.testConsumerGroupHeartbeatWithEmptyClassicGroup (an empty classic
    group gives way to a new consumer group, the joiner gets epoch 1) and
    testConsumerGroupHeartbeatWithNonEmptyClassicGroup (a group that does not embed the consumer
    protocol cannot be upgraded: GROUP_ID_NOT_FOUND)."""
    empty = ClassicGroupSnapshot("group-id", 0, None, None, "Empty", ())
    group = consumer_group_for_heartbeat(empty, 0, TOPICS, assign=MockPartitionAssignor())
    out = group.handle(RequestReceived("c", join("m")), 0)
    assert next(o.response for o in out if isinstance(o, Respond)).member_epoch == 1  # type: ignore[union-attr]
    other = ClassicGroupSnapshot("group-id", 3, "connect", "default", "PreparingRebalance",
                                 (classic_member("x", ()),))
    with pytest.raises(ProtocolError) as error:
        consumer_group_for_heartbeat(other, 0, TOPICS)
    assert error.value.code is ErrorCode.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_no_upgrade_when_the_policy_forbids_it(policy: str) -> None:
    """GroupMetadataManager.validateOnlineUpgrade: group.consumer.migration.policy must allow it."""
    classic = ClassicGroupSnapshot("group-id", 2, "consumer", "range", "Stable", (classic_member("m1", ("foo-0",)),))
    with pytest.raises(ProtocolError):
        consumer_group_for_heartbeat(classic, 0, TOPICS, ConsumerGroupConfig(migration_policy=policy))


def test_no_upgrade_when_the_classic_group_is_too_big() -> None:
    """GroupMetadataManager.validateOnlineUpgrade: not when it has more members than group.consumer.max.size."""
    classic = ClassicGroupSnapshot("group-id", 2, "consumer", "range", "Stable",
                                   (classic_member("m1", ("foo-0",)), classic_member("m2", ("bar-0",))))
    with pytest.raises(ProtocolError):
        consumer_group_for_heartbeat(classic, 0, TOPICS, ConsumerGroupConfig(max_size=1))


def mixed_group(policy: str = "bidirectional", classic_max_size: int = 2**31 - 1):
    assignor = MockPartitionAssignor()
    assignor.prepare({"classic-1": {"foo": [0]}, "new": {"bar": [0]}})
    classic = ClassicGroupSnapshot("group-id", 10, "consumer", "range", "Stable",
                                   (classic_member("classic-1", ("foo-0", "bar-0"), ("range", "roundrobin")),))
    config = ConsumerGroupConfig(migration_policy=policy, classic_max_size=classic_max_size)
    group = consumer_group_for_heartbeat(classic, 0, TOPICS, config, assignor)
    group.handle(RequestReceived("c", join("new")), 0)
    return group


def test_last_consumer_protocol_member_leaving_converts_back_to_classic() -> None:
    """GroupMetadataManagerTest.testLastConsumerProtocolMemberLeavingConsumerGroup and
    testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup: when the last member on the
    consumer protocol leaves (or its session expires), the group becomes a classic group whose
    generation is the group epoch and whose members keep their target assignment; the consumer
    group is gone."""
    for leave in ("heartbeat", "session"):
        group = mixed_group()
        epoch = group.group_epoch
        if leave == "heartbeat":
            out = group.handle(RequestReceived("c", ConsumerGroupHeartbeatRequest("group-id", "new", -1)), 10)
        else:
            out = group.handle(SessionTimeout("new"), 45000)
        [converted] = [o for o in out if isinstance(o, ConvertedToClassic)]
        classic = converted.classic
        assert classic.generation_id == epoch and classic.protocol_name == "range"
        assert [(m.member_id, m.assignment, m.session_timeout_ms) for m in classic.members] == [
            ("classic-1", ("foo-0",), 5000)]
        assert group.state is ConsumerGroupState.DEAD and group.members == {}
        response = next(o.response for o in group.handle(RequestReceived("c", join("late")), 20) if isinstance(o, Respond))
        assert response.error_code is ErrorCode.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize(("policy", "classic_max_size"), [("upgrade", 10), ("bidirectional", 0)])
def test_no_downgrade_when_policy_or_size_forbid(policy: str, classic_max_size: int) -> None:
    """GroupMetadataManager.validateOnlineDowngradeWithFencedMember and
    GroupMetadataManagerTest.testNoConversionWhenSizeExceedsClassicMaxGroupSize: the member is
    simply removed (group epoch bumped) and the group stays a consumer group."""
    group = mixed_group(policy, classic_max_size)
    epoch = group.group_epoch
    out = group.handle(RequestReceived("c", ConsumerGroupHeartbeatRequest("group-id", "new", -1)), 10)
    assert not any(isinstance(o, ConvertedToClassic) for o in out)
    assert group.group_epoch == epoch + 1 and list(group.members) == ["classic-1"]

