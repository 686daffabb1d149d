"""The online downgrade, end to end on both coordinators: the consumer group hands its classic
members over (``ConvertedToClassic``), the classic coordinator loads the records
``convertToClassicGroup`` writes and starts a rebalance. Facts from Kafka's
GroupMetadataManagerTest (group-coordinator/src/test/java/org/apache/kafka/coordinator/group/)."""

from __future__ import annotations

import pytest

from kafka_rebalance.protocol.classic.coordinator import GroupCoordinator
from kafka_rebalance.protocol.classic.coordinator_events import (
    ConsumerProtocolSubscription,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    RebalanceTimeout,
    SessionExpired,
)
from kafka_rebalance.protocol.classic.coordinator_events import RequestReceived as ClassicReceived
from kafka_rebalance.protocol.classic.coordinator_events import Respond as ClassicRespond
from kafka_rebalance.protocol.classic.group import GroupState
from kafka_rebalance.protocol.effects import ArmTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import PreparingRebalance
from kafka_rebalance.protocol.modern.consumer.assignment import (
    MemberAssignment,
    MemberAssignmentState,
    partitions,
)
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupMember,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    ConsumerGroupHeartbeatRequest,
    ConvertedToClassic,
    RequestReceived,
    SessionTimeout,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import ClassicMemberMetadata
from kafka_rebalance.protocol.modern.consumer.migration import downgrade_reason, downgraded
from tests.protocol.modern.helpers import MockPartitionAssignor

TOPICS = {"foo": 6, "bar": 3}
MEMBER_1 = {"foo": {0, 1, 2}, "bar": {0, 1}}
MEMBER_2 = {"foo": {3, 4, 5}, "bar": {2}}


def kafka_mixed_group() -> ConsumerGroupCoordinator:
    """The group of testLastConsumerProtocolMemberLeavingConsumerGroup: epoch 10, member 1 on
    the classic protocol (session timeout 5 s, protocol range), member 2 on the consumer
    protocol, both STABLE at epoch 10, rebalance timeout 45 s."""
    member1 = ConsumerGroupMember(
        "member-1", rebalance_timeout_ms=45000, client_id="client", subscribed_topic_names=("foo", "bar"),
        server_assignor="range", assignment=MemberAssignment(MemberAssignmentState.STABLE, 10, 9, partitions(MEMBER_1), {}),
        classic=ClassicMemberMetadata(5000, ("range",)))
    member2 = ConsumerGroupMember(
        "member-2", rebalance_timeout_ms=45000, client_id="client", subscribed_topic_names=("foo", "bar"),
        server_assignor="range", assignment=MemberAssignment(MemberAssignmentState.STABLE, 10, 9, partitions(MEMBER_2), {}))
    return ConsumerGroupCoordinator.loaded(
        "group-id", TOPICS, 10, 10, [member1, member2], {"member-1": MEMBER_1, "member-2": MEMBER_2},
        config=ConsumerGroupConfig(migration_policy="downgrade"), assign=MockPartitionAssignor())


@pytest.mark.parametrize("how", ["leave", "session timeout"])
def test_the_classic_group_after_a_downgrade_rebalances_with_its_members_assignment(how: str) -> None:
    """GroupMetadataManagerTest.testLastConsumerProtocolMemberLeavingConsumerGroup and
    testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup: the GroupMetadata record holds
    generation 10 (the group epoch), protocol ``range``, member 1 as leader with its target
    assignment; member 1's heartbeat timeout (5 s) and the group's join timeout (its rebalance
    timeout, 45 s) are armed, and the group is PREPARING_REBALANCE."""
    group = kafka_mixed_group()
    if how == "leave":
        out = group.handle(RequestReceived("c2", ConsumerGroupHeartbeatRequest("group-id", "member-2", -1)), 1000)
    else:
        out = group.handle(SessionTimeout("member-2"), 1000)
    [converted] = [o for o in out if isinstance(o, ConvertedToClassic)]
    event = downgraded(converted.classic, {"foo-0": 42}, partition=7)
    [metadata, offsets] = event.records
    assert (metadata.generation, metadata.protocol_type, metadata.protocol_name, metadata.leader) == (  # type: ignore[union-attr]
        10, "consumer", "range", "member-1")
    [member] = metadata.members  # type: ignore[union-attr]
    assert (member.member_id, member.session_timeout_ms, member.rebalance_timeout_ms) == ("member-1", 5000, 45000)
    assert sorted(member.assignment) == ["bar-0", "bar-1", "foo-0", "foo-1", "foo-2"]
    classic = GroupCoordinator()
    out_classic = classic.handle(event, 1000)
    loaded = classic.group("group-id")
    assert loaded is not None and loaded.state is GroupState.PREPARING_REBALANCE and loaded.generation == 10
    assert loaded.offsets == {"foo-0": 42}
    timers = {type(o.timer): o.deadline_ms for o in out_classic if isinstance(o, ArmTimer)}
    assert timers == {SessionExpired: 1000 + 5000, RebalanceTimeout: 1000 + 45000}
    [preparing] = [o.record for o in out_classic if isinstance(o, Log) and isinstance(o.record, PreparingRebalance)]
    assert (preparing.state, preparing.old_generation, preparing.reason) == ("Stable", 10, downgrade_reason("group-id"))


def test_the_remaining_classic_member_rejoins_and_gets_the_next_generation() -> None:
    """After the downgrade the classic member's heartbeat (generation 10) is answered
    REBALANCE_IN_PROGRESS (GroupMetadataManager.classicGroupHeartbeat in PreparingRebalance);
    it rejoins with its member id, which completes the join phase: generation 11, it leads."""
    group = kafka_mixed_group()
    out = group.handle(RequestReceived("c2", ConsumerGroupHeartbeatRequest("group-id", "member-2", -1)), 1000)
    [converted] = [o for o in out if isinstance(o, ConvertedToClassic)]
    classic = GroupCoordinator()
    classic.handle(downgraded(converted.classic, {}, partition=7), 1000)
    answer = classic.handle(ClassicReceived("c1", HeartbeatRequest("group-id", 10, "member-1")), 2000)
    assert [o.response.error_code for o in answer if isinstance(o, ClassicRespond)] == [ErrorCode.REBALANCE_IN_PROGRESS]
    subscription = ConsumerProtocolSubscription(("foo", "bar"), owned_partitions=("foo-0", "foo-1", "foo-2"))
    join = JoinGroupRequest("group-id", 10000, 45000, "member-1", None, "consumer",
                            (JoinGroupRequestProtocol("range", subscription),))
    out_join = classic.handle(ClassicReceived("c1", join), 2100)
    [response] = [o.response for o in out_join if isinstance(o, ClassicRespond)]
    assert isinstance(response, JoinGroupResponse)
    assert (response.error_code, response.generation_id, response.leader, response.member_id) == (
        ErrorCode.NONE, 11, "member-1", "member-1")
