"""The members of a consumer group that still speak the classic protocol (a rolling upgrade or
downgrade): Kafka's ``GroupMetadataManager.classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup``,
``classicGroupLeaveToConsumerGroup`` and ``ConsumerGroup.validateOffsetCommit`` below version 9,
and the way back to a classic group when the last consumer-protocol member goes
(``validateOnlineDowngradeWithFencedMember``, ``ClassicGroup.fromConsumerGroup``).

``ClassicMembers`` is that part of ``ConsumerGroupCoordinator``; it declares what it needs of the
rest of the coordinator (the group's members and epochs, adding, reconciling and removing a
member) and the coordinator provides it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import assert_never

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import (
    ConsumerMemberJoined,
    ConsumerMemberLeft,
    ConsumerStaticMemberReplaced,
)
from kafka_rebalance.protocol.modern.consumer.assignment import (
    MemberAssignmentState,
    Partitions,
    partitions,
    to_strings,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroupMember,
    ClassicGroupSnapshot,
    ClassicJoinTimeout,
    ClassicRequest,
    ClassicResponse,
    ClassicSyncTimeout,
    Output,
    SessionTimeout,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import (
    ClassicMemberMetadata,
    ConsumerGroupRecord,
)
from kafka_rebalance.protocol.modern.consumer.group_member import ConsumerGroupConfig, ConsumerGroupMember
from kafka_rebalance.protocol.modern.consumer.target import TargetAssignment
from kafka_rebalance.protocol.modern.consumer.validation import ProtocolError


class ClassicMembers(ABC):
    """A consumer group's answers to its classic members' requests."""

    group_id: str
    config: ConsumerGroupConfig
    group_epoch: int
    members: dict[str, ConsumerGroupMember]
    static_members: dict[str, str]  # instance id -> member id
    target: TargetAssignment
    offsets: dict[str, int]
    join_timeouts: set[str]

    # ------------------------------------------------------------------ what the coordinator provides

    @abstractmethod
    def _throw_if_full(self, member_id: str) -> None: ...

    @abstractmethod
    def _new_member_id(self) -> str: ...

    @abstractmethod
    def _shared_subscription(self, names: tuple[str, ...]) -> tuple[str, ...]: ...

    @abstractmethod
    def _put_member(self, member: ConsumerGroupMember, replaced: str | None) -> None: ...

    @abstractmethod
    def _refresh_epoch(self, bump: bool, out: list[Output], now_ms: int) -> None: ...

    @abstractmethod
    def _maybe_compute_target(self, out: list[Output], now_ms: int) -> None: ...

    @abstractmethod
    def _reconcile(self, member_id: str, owned: Partitions | None, now_ms: int,
                   out: list[Output]) -> ConsumerGroupMember: ...

    @abstractmethod
    def _remove(self, member_id: str, out: list[Output]) -> None: ...

    @abstractmethod
    def _bump_epoch(self, out: list[Output], now_ms: int) -> None: ...

    @abstractmethod
    def _record(self, record: ConsumerGroupRecord | cl.OffsetCommitRecord) -> None: ...

    @abstractmethod
    def current_partition_epoch(self, topic: str, partition: int) -> int: ...

    # ------------------------------------------------------------------ requests

    def _classic(self, request: ClassicRequest, now_ms: int, out: list[Output]) -> ClassicResponse:
        """A classic member's request to this consumer group; errors as Kafka answers them."""
        try:
            match request:
                case cl.JoinGroupRequest():
                    return self._classic_join(request, now_ms, out)
                case cl.SyncGroupRequest():
                    return self._classic_sync(request, now_ms, out)
                case cl.HeartbeatRequest():
                    return self._classic_heartbeat(request, now_ms, out)
                case cl.LeaveGroupRequest():
                    return self._classic_leave(request, now_ms, out)
                case cl.OffsetCommitRequest():
                    return self._classic_offset_commit(request)
                case cl.OffsetFetchRequest():
                    # Below version 9 there is no member id nor epoch: validateOffsetFetch accepts it.
                    return cl.OffsetFetchResponse(ErrorCode.NONE, tuple(
                        cl.PartitionOffset(p, self.offsets.get(p, -1)) for p in request.partitions))
                case _:
                    assert_never(request)
        except ProtocolError as error:
            match request:
                case cl.JoinGroupRequest():
                    return cl.JoinGroupResponse(error.code, member_id=request.member_id)
                case cl.SyncGroupRequest():
                    return cl.SyncGroupResponse(error.code)
                case cl.HeartbeatRequest():
                    return cl.HeartbeatResponse(error.code)
                case cl.LeaveGroupRequest():
                    return cl.LeaveGroupResponse(error.code)
                case cl.OffsetCommitRequest():
                    return cl.OffsetCommitResponse(error.code)
                case cl.OffsetFetchRequest():
                    return cl.OffsetFetchResponse(error.code)
                case _:
                    assert_never(request)

    def _classic_member(self, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's ``validateConsumerGroupMember`` and ``throwIfMemberDoesNotUseClassicProtocol``."""
        if instance_id is None:
            member = self.members.get(member_id)
            if member is None:
                raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID,
                                    f"Member {member_id} is not a member of group {self.group_id}.")
        else:
            static_id = self.static_members.get(instance_id)
            if static_id is None:
                raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID,
                                    f"Member with instance id {instance_id} is not a member of group {self.group_id}.")
            if static_id != member_id:
                raise ProtocolError(ErrorCode.FENCED_INSTANCE_ID,
                                    f"Static member {member_id} with instance id {instance_id} was fenced by member "
                                    f"{static_id}.")
            member = self.members[static_id]
        if member.classic is None:
            raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
        return member

    def _supports_classic_protocols(self, protocol_type: str, names: Sequence[str]) -> bool:
        """Kafka's ``ConsumerGroup.supportsClassicProtocols``."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        if not self.members:
            return bool(names)
        classic = [m.classic for m in self.members.values() if m.classic is not None]
        return any(all(name in c.protocols for c in classic) for name in names)

    def _classic_join(self, request: cl.JoinGroupRequest, now_ms: int, out: list[Output]) -> cl.JoinGroupResponse:
        """Kafka's ``classicGroupJoinToConsumerGroup``: a classic member (re)joins a consumer group;
        its JoinGroup is a heartbeat that reports its subscription and owned partitions."""
        member_id = request.member_id
        unknown = member_id == ""
        if unknown:
            member_id = f"{request.client_id}-{self._new_member_id()}"
        self._throw_if_full(member_id)
        names = tuple(p.name for p in request.protocols)
        if not self._supports_classic_protocols(request.protocol_type, names):
            raise ProtocolError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if unknown and request.group_instance_id is None:
            # JoinGroupRequest.requiresKnownMemberId: send the id back, the member joins again with it.
            return cl.JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
        replaced: str | None = None
        if request.group_instance_id is None:
            member = self.members.get(member_id)
            if member is None:
                out.append(Log(ConsumerMemberJoined(now_ms, self.group_id, member_id, None, GroupProtocol.CLASSIC)))
                member = ConsumerGroupMember(member_id)
        elif unknown:
            existing_id = self.static_members.get(request.group_instance_id)
            if existing_id is None:
                out.append(Log(ConsumerMemberJoined(now_ms, self.group_id, member_id, request.group_instance_id,
                                                    GroupProtocol.CLASSIC)))
                member = ConsumerGroupMember(member_id, instance_id=request.group_instance_id)
            else:
                existing = self.members[existing_id]
                out.append(Log(ConsumerStaticMemberReplaced(now_ms, self.group_id, request.group_instance_id, GroupProtocol.CLASSIC,
                                                            member_id, existing_id)))
                member = replace(existing, member_id=member_id,
                                 assignment=replace(existing.assignment, member_epoch=0, previous_member_epoch=0))
                replaced = existing_id
        else:
            member = self._classic_member(member_id, request.group_instance_id)
        subscription = request.protocols[0].metadata
        updated = replace(
            member, instance_id=request.group_instance_id if request.group_instance_id is not None else member.instance_id,
            rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            subscribed_topic_names=self._shared_subscription(tuple(subscription.topics)), client_id=request.client_id,
            classic=ClassicMemberMetadata(request.session_timeout_ms, names))
        subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        self._put_member(updated, replaced)
        self._refresh_epoch(subscription_changed, out, now_ms)
        self._maybe_compute_target(out, now_ms)
        owned = _parse_partitions(subscription.owned_partitions)
        updated = self._reconcile(member_id, owned, now_ms, out)
        self.join_timeouts.discard(member_id)
        out.append(CancelTimer(ClassicJoinTimeout(member_id)))
        out.append(ArmTimer(SessionTimeout(member_id), now_ms + request.session_timeout_ms))
        out.append(ArmTimer(ClassicSyncTimeout(member_id), now_ms + request.rebalance_timeout_ms))
        return cl.JoinGroupResponse(ErrorCode.NONE, generation_id=updated.member_epoch,
                                    protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=names[0], member_id=member_id)

    def _throw_if_rebalance_in_progress(self, member: ConsumerGroupMember, now_ms: int, out: list[Output]) -> None:
        """Kafka's ``throwIfRebalanceInProgress``."""
        if self.group_epoch > member.member_epoch and member.assignment.state is not MemberAssignmentState.UNREVOKED_PARTITIONS:
            self._arm_join_timeout_if_absent(member, now_ms, out)
            raise ProtocolError(ErrorCode.REBALANCE_IN_PROGRESS,
                                f"A new rebalance is triggered in group {self.group_id} and member "
                                f"{member.member_id} should rejoin to catch up.")

    def _arm_join_timeout_if_absent(self, member: ConsumerGroupMember, now_ms: int, out: list[Output]) -> None:
        if member.member_id not in self.join_timeouts:
            self.join_timeouts.add(member.member_id)
            out.append(ArmTimer(ClassicJoinTimeout(member.member_id), now_ms + member.rebalance_timeout_ms))

    def _classic_sync(self, request: cl.SyncGroupRequest, now_ms: int, out: list[Output]) -> cl.SyncGroupResponse:
        """Kafka's ``classicGroupSyncToConsumerGroup``: the member's current assignment."""
        member = self._classic_member(request.member_id, request.group_instance_id)
        if member.member_epoch != request.generation_id:
            raise ProtocolError(ErrorCode.ILLEGAL_GENERATION,
                                f"The request generation id {request.generation_id} is not equal to the member epoch "
                                f"{member.member_epoch} of member {member.member_id}.")
        assert member.classic is not None
        protocol_name = member.classic.protocols[0]
        if ((request.protocol_type is not None and request.protocol_type != CONSUMER_PROTOCOL_TYPE)
                or (request.protocol_name is not None and request.protocol_name != protocol_name)):
            raise ProtocolError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "The protocol does not match the join response.")
        self._throw_if_rebalance_in_progress(member, now_ms, out)
        out.append(CancelTimer(ClassicSyncTimeout(member.member_id)))
        out.append(ArmTimer(SessionTimeout(member.member_id), now_ms + member.classic.session_timeout_ms))
        return cl.SyncGroupResponse(ErrorCode.NONE, protocol_type=request.protocol_type,
                                    protocol_name=request.protocol_name,
                                    assignment=tuple(to_strings(member.assignment.assigned)))

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Kafka's ``ConsumerGroup.waitingOnUnreleasedPartition``."""
        if member.assignment.state is not MemberAssignmentState.UNRELEASED_PARTITIONS:
            return False
        for topic, numbers in self.target.get(member.member_id, {}).items():
            have = member.assignment.assigned.get(topic, frozenset())
            if any(n not in have and self.current_partition_epoch(topic, n) != -1 for n in numbers):
                return True
        return False

    def _classic_heartbeat(self, request: cl.HeartbeatRequest, now_ms: int, out: list[Output]) -> cl.HeartbeatResponse:
        """Kafka's ``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS tells the member
        to rejoin when the group moved on, it must revoke, or its unreleased partitions are free."""
        member = self._classic_member(request.member_id, request.group_instance_id)
        if member.member_epoch != request.generation_id:
            raise ProtocolError(ErrorCode.ILLEGAL_GENERATION,
                                f"The request generation id {request.generation_id} is not equal to the member epoch "
                                f"{member.member_epoch} of member {member.member_id}.")
        assert member.classic is not None
        out.append(ArmTimer(SessionTimeout(member.member_id), now_ms + member.classic.session_timeout_ms))
        state = member.assignment.state
        if (member.member_epoch < self.group_epoch or state is MemberAssignmentState.UNREVOKED_PARTITIONS
                or (state is MemberAssignmentState.UNRELEASED_PARTITIONS and not self.waiting_on_unreleased_partition(member))):
            self._arm_join_timeout_if_absent(member, now_ms, out)
            return cl.HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS)
        return cl.HeartbeatResponse(ErrorCode.NONE)

    def _classic_leave(self, request: cl.LeaveGroupRequest, now_ms: int, out: list[Output]) -> cl.LeaveGroupResponse:
        """Kafka's ``classicGroupLeaveToConsumerGroup``: remove each valid member, one epoch bump."""
        answers = []
        removed = False
        for identity in request.members:
            try:
                if identity.group_instance_id is None:
                    member = self.members.get(identity.member_id)
                    if member is None:
                        raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID, "unknown member")
                else:
                    static_id = self.static_members.get(identity.group_instance_id)
                    if static_id is None:
                        raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID, "unknown instance id")
                    if identity.member_id and identity.member_id != static_id:
                        raise ProtocolError(ErrorCode.FENCED_INSTANCE_ID, "fenced instance id")
                    member = self.members[static_id]
                if member.classic is None:
                    raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID, "not a classic member")
            except ProtocolError as error:
                answers.append(cl.LeaveGroupResponseMember(identity.member_id, identity.group_instance_id, error.code))
                continue
            out.append(Log(ConsumerMemberLeft(now_ms, self.group_id, member.member_id, identity.group_instance_id,
                                              temporarily=False)))
            self._remove(member.member_id, out)
            removed = True
            answers.append(cl.LeaveGroupResponseMember(member.member_id, identity.group_instance_id, ErrorCode.NONE))
        if removed:
            self._bump_epoch(out, now_ms)
        return cl.LeaveGroupResponse(ErrorCode.NONE, tuple(answers))

    def _classic_offset_commit(self, request: cl.OffsetCommitRequest) -> cl.OffsetCommitResponse:
        """Kafka's ``ConsumerGroup.validateOffsetCommit`` for an OffsetCommit below version 9 (what a
        classic consumer sends): the generation id is checked against the member epoch, and a member
        on the consumer protocol must use version 9 or above."""
        if not (request.generation_id < 0 and not self.members):
            member = self.members.get(request.member_id)
            if member is None:
                raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member.")
            if not member.uses_classic_protocol:
                raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used "
                                    "by members using the modern group protocol")
            if request.generation_id != member.member_epoch:
                raise ProtocolError(ErrorCode.ILLEGAL_GENERATION, f"The received generation id {request.generation_id}"
                                    f" does not match the member epoch {member.member_epoch}.")
        for entry in request.offsets:
            self.offsets[entry.partition] = entry.offset
        self._record(cl.OffsetCommitRecord(self.group_id, request.offsets))
        return cl.OffsetCommitResponse(ErrorCode.NONE)

    # ------------------------------------------------------------------ back to a classic group

    def downgrade_allowed(self, leaving_member_id: str) -> bool:
        """Kafka's ``validateOnlineDowngradeWithFencedMember``: the leaving member is the last one on
        the consumer protocol, others remain, the policy allows it and they fit group.max.size."""
        leaving = self.members.get(leaving_member_id)
        others = [m for mid, m in self.members.items() if mid != leaving_member_id]
        return (leaving is not None and not leaving.uses_classic_protocol and bool(others)
                and all(m.uses_classic_protocol for m in others) and self.config.downgrade_enabled
                and len(others) <= self.config.classic_max_size)

    def classic_group_without(self, leaving_member_id: str) -> ClassicGroupSnapshot:
        """Kafka's ``ClassicGroup.fromConsumerGroup``: generation = the group epoch, every remaining
        member with its target assignment; the protocol is the one all members support
        (``select_protocol``)."""
        members = []
        for member_id, member in self.members.items():
            if member_id == leaving_member_id:
                continue
            classic = member.classic
            assert classic is not None
            members.append(ClassicGroupMember(
                member_id, member.instance_id, member.client_id, member.rebalance_timeout_ms,
                classic.session_timeout_ms, classic.protocols, member.subscribed_topic_names,
                tuple(to_strings(self.target.get(member_id, {})))))
        return ClassicGroupSnapshot(self.group_id, self.group_epoch, CONSUMER_PROTOCOL_TYPE, select_protocol(members),
                                    "Stable", tuple(members))


def select_protocol(members: list[ClassicGroupMember]) -> str | None:
    """Kafka's ``ClassicGroup.selectProtocol``: among the protocols every member supports, each
    member votes for the first it lists; the most votes win (ties: the earliest candidate)."""
    if not members:
        return None
    candidates = [p for p in members[0].protocols if all(p in m.protocols for m in members)]
    if not candidates:
        return None
    votes = {p: 0 for p in candidates}
    for m in members:
        votes[next(p for p in m.protocols if p in votes)] += 1
    return max(candidates, key=lambda p: votes[p])


def _parse_partitions(names: Sequence[str]) -> Partitions:
    out: dict[str, set[int]] = {}
    for name in names:
        topic, _, number = name.rpartition("-")
        out.setdefault(topic, set()).add(int(number))
    return partitions(out)


__all__ = ["ClassicMembers", "select_protocol"]
