"""The broker side of KIP-848: one consumer group on its group coordinator, answering
ConsumerGroupHeartbeat (Kafka's ``GroupMetadataManager.consumerGroupHeartbeat`` and the
``ConsumerGroup`` it updates).

A heartbeat runs Kafka's three steps: (1) create or update the member, bumping the group epoch
when its subscription (topic names or regex) or the subscribed topics' metadata changed;
(2) recompute the target assignment with the server-side assignor only when the group epoch
moved past the target assignment epoch; (3) reconcile the member one step towards its target
(``assignment.reconcile``): revocations first, a partition is handed over only once its previous
owner has released it. Leaving (epoch -1) or being fenced (session timeout, rebalance timeout)
removes the member and bumps the group epoch; a static member leaving with epoch -2 keeps its
assignment until it rejoins under a new member id or its session expires.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from itertools import compress, islice, repeat
from operator import attrgetter, is_
from typing import assert_never

from kafka_rebalance.assignors import server
from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.model.java import kafka_random_uuid
from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log, StateTable
from kafka_rebalance.protocol.errors import ErrorCode, IllegalStateTransition
from kafka_rebalance.protocol.logrecords import (
    ConsumerGroupEpochBumped,
    ConsumerGroupLoaded,
    ConsumerGroupStateChanged,
    ConsumerMemberAssignmentUpdated,
    ConsumerMemberFenced,
    ConsumerMemberJoined,
    ConsumerMemberLeft,
    ConsumerStaticMemberReplaced,
    ConsumerTargetAssignmentComputed,
)
from kafka_rebalance.protocol.modern.consumer.assignment import (
    EMPTY,
    MemberAssignment,
    MemberAssignmentState,
    Partitions,
    partitions,
    reconcile,
    sorted_numbers,
    to_strings,
)
from kafka_rebalance.protocol.modern.consumer.classic_members import ClassicMembers
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ClassicJoinTimeout,
    ClassicSyncTimeout,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConvertedToClassic,
    GroupLoaded,
    Input,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Output,
    RebalanceTimeout,
    RequestReceived,
    Respond,
    SessionTimeout,
    TopicPartitions,
    TopicsChanged,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import (
    ConsumerGroupCurrentMemberAssignmentRecord,
    ConsumerGroupMemberMetadataRecord,
    ConsumerGroupMetadataRecord,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMemberRecord,
    ConsumerGroupTargetAssignmentMetadataRecord,
    PersistConsumerGroup,
    group_tombstones,
    member_tombstones,
)
from kafka_rebalance.protocol.modern.consumer.group_member import (
    ConsumerGroupConfig,
    ConsumerGroupMember,
    subscribed_topics,
)
from kafka_rebalance.protocol.modern.consumer.target import TargetAssignment
from kafka_rebalance.protocol.modern.consumer.validation import ProtocolError, validate_heartbeat


class ConsumerGroupState(Enum):
    """Kafka's ``ConsumerGroup.ConsumerGroupState``; the state follows from epochs and members
    (``maybeUpdateGroupState``), the table below lists what may precede each state."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


_LIVE = frozenset({ConsumerGroupState.EMPTY, ConsumerGroupState.ASSIGNING, ConsumerGroupState.RECONCILING,
                   ConsumerGroupState.STABLE})
VALID_PREVIOUS_GROUP_STATES: Mapping[ConsumerGroupState, frozenset[ConsumerGroupState]] = {
    **{state: _LIVE - {state} for state in _LIVE},
    ConsumerGroupState.DEAD: frozenset({ConsumerGroupState.EMPTY}),
}
GROUP_STATES = StateTable("ConsumerGroupState", VALID_PREVIOUS_GROUP_STATES)


@dataclass(frozen=True, slots=True)
class MemberSubscriptionAndAssignment:
    """What a server-side assignor sees of a member (Kafka's ``MemberSubscriptionAndAssignment``):
    its subscribed topics and its current *target* assignment (for stickiness)."""

    member_id: str
    subscribed_topics: frozenset[str]
    assigned: Mapping[str, tuple[int, ...]]
    instance_id: str | None = None
    rack: str | None = None


ServerAssign = Callable[[str, Mapping[str, int], Sequence[MemberSubscriptionAndAssignment]], Mapping[str, Mapping[str, Sequence[int]]]]
"""(assignor name, topic -> partition count, members) -> member id -> topic -> partitions."""


def default_server_assign(assignor: str, topics: Mapping[str, int],
                          members: Sequence[MemberSubscriptionAndAssignment]) -> Mapping[str, Mapping[str, Sequence[int]]]:
    """The server-side assignors of ``assignors.server`` (Kafka's UniformAssignor, RangeAssignor)
    through their dict API. A coordinator given this one runs them on its arrays instead
    (``ConsumerGroupCoordinator._compute_target``): the same answers."""
    return server.server_assign(assignor, dict(topics), _server_members(members))


def _server_members(members: Sequence[MemberSubscriptionAndAssignment]) -> list[server.ServerMember]:
    return [server.ServerMember(member_id=m.member_id, subscribed_topics=tuple(sorted(m.subscribed_topics)),
                                assigned=m.assigned, instance_id=m.instance_id, rack=m.rack)
            for m in members]


# Kafka's published ServerSideAssignorBenchmark figures at 10,000 members and 500,000 partitions
# (ms): the broker's time for the assignor, which the "Computed a new target assignment ... in
# {}ms" line reports. A machine never reads a clock, so the line carries this model instead.
_ASSIGNOR_MS_AT_BENCHMARK = {("uniform", True): 13.0, ("uniform", False): 315.0,
                             ("range", True): 38.0, ("range", False): 195.0}
_BENCHMARK_PARTITIONS = 500_000


def modelled_assignor_time_ms(assignor: str, partition_count: int, homogeneous: bool) -> int:
    """The assignor's time in whole milliseconds (Kafka logs ``time.milliseconds()`` differences):
    linear in the partitions, through Kafka's published benchmark figure; 0 for any group of
    fewer than ~20,000 partitions, as a real broker logs."""
    at_benchmark = _ASSIGNOR_MS_AT_BENCHMARK.get((assignor, homogeneous), 0.0)
    return int(at_benchmark * partition_count / _BENCHMARK_PARTITIONS)


Subscription = tuple[tuple[str, ...], str | None]  # (subscribed names, regex)


def _subscription(member: ConsumerGroupMember) -> Subscription:
    return member.subscribed_topic_names, member.subscribed_topic_regex


_SERVER_ASSIGNOR = attrgetter("server_assignor")


def _assignor_view_changed(old: ConsumerGroupMember, new: ConsumerGroupMember) -> bool:
    """Whether the built-in assignors see ``new`` otherwise than ``old`` (its assignment aside)."""
    return (old.subscribed_topic_names != new.subscribed_topic_names
            or old.subscribed_topic_regex != new.subscribed_topic_regex
            or old.instance_id != new.instance_id or old.rack_id != new.rack_id)


_UNASSIGNED = MemberAssignment()  # a member's before its first reconciliation (what a replay assumes without a record)


def _metadata_changed(old: ConsumerGroupMember, new: ConsumerGroupMember) -> bool:
    """Whether ``new`` needs another ConsumerGroupMemberMetadata record than ``old``'s."""
    return (old.instance_id != new.instance_id or old.rack_id != new.rack_id or old.client_id != new.client_id
            or old.rebalance_timeout_ms != new.rebalance_timeout_ms
            or old.subscribed_topic_names != new.subscribed_topic_names
            or old.subscribed_topic_regex != new.subscribed_topic_regex
            or old.server_assignor != new.server_assignor or old.classic != new.classic)


def _member_metadata_record(group_id: str, member: ConsumerGroupMember) -> ConsumerGroupMemberMetadataRecord:
    return ConsumerGroupMemberMetadataRecord(
        group_id, member.member_id, member.instance_id, member.rack_id, member.client_id, member.rebalance_timeout_ms,
        member.subscribed_topic_names, member.subscribed_topic_regex, member.server_assignor, member.classic)


def _to_message(assignment: Partitions) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(topic, sorted_numbers(assignment[topic])) for topic in sorted(assignment))


def _from_message(topic_partitions: Sequence[TopicPartitions] | None) -> Partitions | None:
    if topic_partitions is None:
        return None
    out: dict[str, frozenset[int]] = {}
    for tp in topic_partitions:
        out[tp.topic] = out.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    return partitions(out)


class ConsumerGroupCoordinator(ClassicMembers):
    """One consumer group (``group.protocol=consumer``) on its coordinator, its classic members
    (``ClassicMembers``) included. One entry point: ``handle(event, now_ms) -> list[Output]``."""

    def __init__(self, group_id: str, topics: Mapping[str, int], config: ConsumerGroupConfig | None = None,
                 assign: ServerAssign = default_server_assign, seed: int = 0):
        self.group_id = group_id
        self.config = config or ConsumerGroupConfig()
        self.topics: dict[str, int] = dict(topics)
        self._assign = assign
        self._rng = random.Random(seed)
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target = TargetAssignment()  # member id -> target assignment
        # member id -> what the assignor saw of it last time, and from what (see _assignor_member)
        self._assignor_input: dict[str, tuple[ConsumerGroupMember, dict[str, int], Partitions, MemberSubscriptionAndAssignment]] = {}
        # member id -> what the built-in assignors on arrays see of it, for the topics
        # ``_server_view_of``; dropped when the member's subscription, instance or rack changes
        self._server_view: dict[str, server.ServerMember] = {}
        # (subscribed names, regex) -> the names the assignors see, for the same topics
        self._subscriptions: dict[tuple[tuple[str, ...], str | None], tuple[str, ...]] = {}
        self._server_view_of: dict[str, int] | None = None
        # The views ``_server_members`` listed last, in the members' order.
        self._server_views_listed: list[server.ServerMember] = []
        self._subscription_tuples: dict[tuple[str, ...], tuple[str, ...]] = {}
        # How many members send each distinct subscription, kept as members come, change and go:
        # the subscription metadata is read from the few distinct ones, not from every member.
        self._subscription_counts: Counter[Subscription] = Counter()
        # How many members ask for each server assignor (None: none), kept likewise.
        self._assignor_votes: Counter[str | None] = Counter()
        self.subscription_metadata: dict[str, int] = {}
        self.metadata_refresh_needed = False
        self.partition_epochs: dict[str, dict[int, int]] = {}
        self.rebalance_timeout_epoch: dict[str, int] = {}
        self.offsets: dict[str, int] = {}
        self.state = ConsumerGroupState.EMPTY
        self._state_dirty = True
        self.join_timeouts: set[str] = set()
        # The records of the changes ``handle`` is making, written out with its answer.
        self._records: list[ConsumerGroupRecord | cl.OffsetCommitRecord] = []

    @classmethod
    def loaded(cls, group_id: str, topics: Mapping[str, int], group_epoch: int, assignment_epoch: int,
               members: Sequence[ConsumerGroupMember], targets: Mapping[str, Partitions],
               config: ConsumerGroupConfig | None = None, assign: ServerAssign = default_server_assign,
               seed: int = 0) -> ConsumerGroupCoordinator:
        """A group as its records replay on load (or as ``ConsumerGroup.fromClassicGroup`` builds it)."""
        group = cls(group_id, topics, config, assign, seed)
        group.group_epoch = group_epoch
        group.assignment_epoch = assignment_epoch
        for member in members:
            group._put_member(member, None)
        group.target = TargetAssignment({member_id: partitions(target) for member_id, target in targets.items()})
        group.subscription_metadata = group._subscription_metadata()
        group._update_state([], 0)
        group._records.clear()  # what was loaded is written already (or written whole: ``group_records``)
        return group

    # ------------------------------------------------------------------ entry point

    def handle(self, event: Input, now_ms: int) -> list[Output]:
        out: list[Output] = []
        match event:
            case RequestReceived(connection=connection, request=request):
                match request:
                    case ConsumerGroupHeartbeatRequest():
                        out.append(Respond(connection, self._heartbeat(request, now_ms, out)))
                    case OffsetCommitRequest():
                        out.append(Respond(connection, self._offset_commit(request)))
                    case OffsetFetchRequest():
                        out.append(Respond(connection, self._offset_fetch(request)))
                    case (cl.JoinGroupRequest() | cl.SyncGroupRequest() | cl.HeartbeatRequest() | cl.LeaveGroupRequest()
                          | cl.OffsetCommitRequest() | cl.OffsetFetchRequest()):
                        out.append(Respond(connection, self._classic(request, now_ms, out)))
                    case _:
                        assert_never(request)
            case SessionTimeout(member_id=member_id):
                if member_id in self.members:
                    out.append(Log(ConsumerMemberFenced(now_ms, self.group_id, member_id, "the member session expired.")))
                    self._fence(member_id, out, now_ms)
            case RebalanceTimeout(member_id=member_id):
                member = self.members.get(member_id)
                armed = self.rebalance_timeout_epoch.pop(member_id, None)
                if member is not None and member.member_epoch == armed:
                    out.append(Log(ConsumerMemberFenced(now_ms, self.group_id, member_id,
                        f"it failed to transition from epoch {armed} within {member.rebalance_timeout_ms}ms.")))
                    self._fence(member_id, out, now_ms)
            case ClassicJoinTimeout(member_id=member_id) | ClassicSyncTimeout(member_id=member_id):
                self.join_timeouts.discard(member_id)
                if member_id in self.members:
                    why = ("the classic member failed to join within the rebalance timeout."
                           if isinstance(event, ClassicJoinTimeout) else "the member failed to sync within timeout.")
                    out.append(Log(ConsumerMemberFenced(now_ms, self.group_id, member_id, why)))
                    self._fence(member_id, out, now_ms)
            case TopicsChanged(topics=topics):
                new = dict(topics)
                if any(self.topics.get(t) != new.get(t) for t in set(new) | set(self.topics)):
                    self.topics = new
                    # Kafka: onNewMetadataImage -> requestMetadataRefresh; the next heartbeat bumps the epoch.
                    self.metadata_refresh_needed = True
            case GroupLoaded():
                self._on_loaded(out, now_ms)
            case _:
                assert_never(event)
        self._update_state(out, now_ms)
        self._write_records(out)
        return out

    def _write_records(self, out: list[Output]) -> None:
        """The records of this call's changes go out with its answers, as Kafka's
        ``CoordinatorResult`` carries them."""
        if self._records:
            out.extend(map(PersistConsumerGroup, self._records))
            self._records = []

    def _on_loaded(self, out: list[Output], now_ms: int) -> None:
        """Kafka's ``onLoaded`` for a consumer group: every member, classic ones too, gets a session
        timeout of ``group.consumer.session.timeout.ms``; a member still revoking gets its
        rebalance timeout again. The metadata refresh deadline is not stored, so the next
        heartbeat recomputes the subscription metadata."""
        out.append(Log(ConsumerGroupLoaded(now_ms, self.group_id, len(self.members))))
        self.metadata_refresh_needed = True
        for member_id, member in self.members.items():
            out.append(ArmTimer(SessionTimeout(member_id), now_ms + self.config.session_timeout_ms))
            if member.assignment.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
                self.rebalance_timeout_epoch[member_id] = member.member_epoch
                out.append(ArmTimer(RebalanceTimeout(member_id), now_ms + member.rebalance_timeout_ms))

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat

    def _heartbeat(self, request: ConsumerGroupHeartbeatRequest, now_ms: int,
                   out: list[Output]) -> ConsumerGroupHeartbeatResponse:
        if self.state is ConsumerGroupState.DEAD:
            return ConsumerGroupHeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND,
                                                  error_message=f"Group {self.group_id} is not a consumer group")
        fast = self._steady_heartbeat(request, now_ms, out)
        if fast is not None:
            return fast
        try:
            validate_heartbeat(request, self.config.assignors)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request, out, now_ms)
            return self._regular_heartbeat(request, now_ms, out)
        except ProtocolError as error:
            return ConsumerGroupHeartbeatResponse(error.code, error_message=error.message)

    def _steady_heartbeat(self, request: ConsumerGroupHeartbeatRequest, now_ms: int,
                          out: list[Output]) -> ConsumerGroupHeartbeatResponse | None:
        """The answer of the full path below, short-cut, to the common heartbeat: a reconciled
        member at the current epoch reporting nothing new, in a group with no new epoch."""
        member = self.members.get(request.member_id)
        if (member is None or request.member_epoch <= 0 or request.member_epoch != member.assignment.member_epoch
                or request.topic_partitions is not None or request.subscribed_topic_names is not None
                or request.subscribed_topic_regex is not None or request.server_assignor is not None
                or request.rack_id is not None or request.rebalance_timeout_ms != -1
                or self.metadata_refresh_needed or self.group_epoch != self.assignment_epoch
                or member.assignment.state is not MemberAssignmentState.STABLE
                or member.assignment.member_epoch != self.assignment_epoch
                or request.client_id != member.client_id or member.classic is not None or not request.group_id.strip()):
            return None
        if request.instance_id is not None and (request.instance_id != member.instance_id
                                                or self.static_members.get(request.instance_id) != member.member_id):
            return None
        out.append(ArmTimer(SessionTimeout(member.member_id), now_ms + self.config.session_timeout_ms))
        return ConsumerGroupHeartbeatResponse(ErrorCode.NONE, member_id=member.member_id,
                                              member_epoch=member.assignment.member_epoch,
                                              heartbeat_interval_ms=self.config.heartbeat_interval_ms)

    def _new_member_id(self) -> str:
        """A version 0 join (Kafka 3.7-3.9 consumers): the coordinator names the member."""
        return kafka_random_uuid(self._rng)

    def _regular_heartbeat(self, request: ConsumerGroupHeartbeatRequest, now_ms: int,
                           out: list[Output]) -> ConsumerGroupHeartbeatResponse:
        joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        self._throw_if_full(request.member_id)
        member_id = request.member_id or self._new_member_id()
        owned = _from_message(request.topic_partitions)
        replaced: str | None = None
        if request.instance_id is None:
            member = self._dynamic_member(member_id, request.member_epoch, owned, joining, out, now_ms)
        else:
            member, replaced = self._static_member(member_id, request.member_epoch, request.instance_id, owned,
                                                   joining, out, now_ms)

        if self._unchanged(member, request):
            updated = member  # the steady heartbeat: nothing to record
        else:
            updated = replace(
                member,
                instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
                rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
                rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                                      else member.rebalance_timeout_ms),
                server_assignor=(request.server_assignor if request.server_assignor is not None
                                 else member.server_assignor),
                subscribed_topic_names=(self._shared_subscription(tuple(request.subscribed_topic_names))
                                        if request.subscribed_topic_names is not None
                                        else member.subscribed_topic_names),
                subscribed_topic_regex=(request.subscribed_topic_regex if request.subscribed_topic_regex is not None
                                        else member.subscribed_topic_regex),
                client_id=request.client_id,
                classic=None,
            )
        # Kafka's hasMemberSubscriptionChanged: a new member differs from its empty self; a static
        # member replacing its previous instance carries the same subscription (no new epoch).
        subscription_changed = (updated.subscribed_topic_names != member.subscribed_topic_names
                                or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        if updated is not member or replaced is not None or member_id not in self.members:
            self._put_member(updated, replaced)
        self._refresh_epoch(subscription_changed, out, now_ms)
        self._maybe_compute_target(out, now_ms)
        updated = self._reconcile(member_id, owned, now_ms, out)
        out.append(ArmTimer(SessionTimeout(member_id), now_ms + self.config.session_timeout_ms))

        # Kafka 4.1's consumerGroupHeartbeat: a full request (every field a joining or retrying
        # member sends) carries the subscription as names or as a regex.
        full = joining or (request.rebalance_timeout_ms != -1
                           and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
                           and request.topic_partitions is not None)
        changed = updated.assignment.assigned != member.assignment.assigned
        return ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE, member_id=member_id, member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
            assignment=_to_message(updated.assignment.assigned) if full or changed else None)

    @staticmethod
    def _unchanged(member: ConsumerGroupMember, request: ConsumerGroupHeartbeatRequest) -> bool:
        return ((request.instance_id is None or request.instance_id == member.instance_id)
                and (request.rack_id is None or request.rack_id == member.rack_id)
                and request.rebalance_timeout_ms in (-1, member.rebalance_timeout_ms)
                and (request.server_assignor is None or request.server_assignor == member.server_assignor)
                and (request.subscribed_topic_names is None
                     or tuple(request.subscribed_topic_names) == member.subscribed_topic_names)
                and (request.subscribed_topic_regex is None
                     or request.subscribed_topic_regex == member.subscribed_topic_regex)
                and request.client_id == member.client_id and member.classic is None)

    def _throw_if_full(self, member_id: str) -> None:
        """Kafka's ``throwIfConsumerGroupIsFull``: only a member not yet in the group is refused."""
        if len(self.members) >= self.config.max_size and (not member_id or member_id not in self.members):
            raise ProtocolError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                f"The consumer group has reached its maximum capacity of {self.config.max_size} members.")

    def _check_epoch(self, member: ConsumerGroupMember, received: int, owned: Partitions | None) -> None:
        """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``: the previous epoch is accepted
        with a subset of the current assignment (the response with the new epoch may be lost)."""
        current = member.member_epoch
        if received > current:
            raise ProtocolError(ErrorCode.FENCED_MEMBER_EPOCH,
                                f"The consumer group member has a greater member epoch ({received}) than the one "
                                f"known by the group coordinator ({current}). The member must abandon all its "
                                "partitions and rejoin.")
        if received < current:
            subset = owned is not None and all(numbers <= member.assignment.assigned.get(topic, frozenset())
                                               for topic, numbers in owned.items())
            if received != member.assignment.previous_member_epoch or not subset:
                raise ProtocolError(ErrorCode.FENCED_MEMBER_EPOCH,
                                    f"The consumer group member has a smaller member epoch ({received}) than the one "
                                    f"known by the group coordinator ({current}). The member must abandon all its "
                                    "partitions and rejoin.")

    def _dynamic_member(self, member_id: str, epoch: int, owned: Partitions | None, create: bool,
                        out: list[Output], now_ms: int) -> ConsumerGroupMember:
        member = self.members.get(member_id)
        if member is None:
            if not create:
                raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID,
                                    f"Member {member_id} is not a member of group {self.group_id}.")
            out.append(Log(ConsumerMemberJoined(now_ms, self.group_id, member_id, None, GroupProtocol.CONSUMER)))
            return ConsumerGroupMember(member_id)
        self._check_epoch(member, epoch, owned)
        return member

    def _static_member(self, member_id: str, epoch: int, instance_id: str, owned: Partitions | None, create: bool,
                       out: list[Output], now_ms: int) -> tuple[ConsumerGroupMember, str | None]:
        existing_id = self.static_members.get(instance_id)
        existing = self.members.get(existing_id) if existing_id is not None else None
        if create:
            if existing is None:
                out.append(Log(ConsumerMemberJoined(now_ms, self.group_id, member_id, instance_id, GroupProtocol.CONSUMER)))
                return ConsumerGroupMember(member_id, instance_id=instance_id), None
            if not existing.uses_classic_protocol and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise ProtocolError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                    f"Static member {member_id} with instance id {instance_id} cannot join the group "
                                    f"because the instance id is owned by {existing.member_id} member.")
            # The new member takes over the previous one's assignment, at epoch 0.
            assignment = replace(existing.assignment, member_epoch=0, previous_member_epoch=0)
            out.append(Log(ConsumerStaticMemberReplaced(now_ms, self.group_id, instance_id, GroupProtocol.CONSUMER, member_id, existing.member_id)))
            return replace(existing, member_id=member_id, assignment=assignment), existing.member_id
        if existing is None:
            raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise ProtocolError(ErrorCode.FENCED_INSTANCE_ID,
                                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                                f"{existing.member_id}.")
        self._check_epoch(existing, epoch, owned)
        return existing, None

    def _leave(self, request: ConsumerGroupHeartbeatRequest, out: list[Output], now_ms: int) -> ConsumerGroupHeartbeatResponse:
        """Kafka's ``consumerGroupLeave``: epoch -1 leaves, a static member's -2 leaves for now."""
        if request.instance_id is None:
            member = self.members.get(request.member_id)
            if member is None:
                raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID,
                                    f"Member {request.member_id} is not a member of group {self.group_id}.")
            out.append(Log(ConsumerMemberLeft(now_ms, self.group_id, request.member_id, None, temporarily=False)))
            self._fence(request.member_id, out, now_ms)
        else:
            existing_id = self.static_members.get(request.instance_id)
            if existing_id is None:
                raise ProtocolError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            if existing_id != request.member_id:
                raise ProtocolError(ErrorCode.FENCED_INSTANCE_ID,
                                    f"Static member {request.member_id} with instance id {request.instance_id} was "
                                    f"fenced by member {existing_id}.")
            if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                out.append(Log(ConsumerMemberLeft(now_ms, self.group_id, existing_id, request.instance_id, temporarily=True)))
                member = self.members[existing_id]
                leaving = replace(member, assignment=replace(member.assignment,
                                                             member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                                             pending_revocation={}))
                self._put_member(leaving, None)
                return ConsumerGroupHeartbeatResponse(ErrorCode.NONE, member_id=existing_id,
                                                      member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
            out.append(Log(ConsumerMemberLeft(now_ms, self.group_id, existing_id, request.instance_id, temporarily=False)))
            self._fence(existing_id, out, now_ms)
        return ConsumerGroupHeartbeatResponse(ErrorCode.NONE, member_id=request.member_id,
                                              member_epoch=request.member_epoch)

    # ------------------------------------------------------------------ group bookkeeping

    def _put_member(self, member: ConsumerGroupMember, replaced: str | None) -> None:
        """Add or update a member, keeping partition epochs, static ids and targets in step."""
        if replaced is not None:
            old = self.members.pop(replaced)
            self._count_subscription(old, -1)
            self._assignor_votes[old.server_assignor] -= 1
            self._remove_epochs(old)
            self.rebalance_timeout_epoch.pop(replaced, None)
            self._assignor_input.pop(replaced, None)
            self._drop_server_view(replaced)
            self._records.extend(member_tombstones(self.group_id, replaced))
            if replaced in self.target:
                moved = self.target[member.member_id] = self.target.pop(replaced)
                self._records.append(ConsumerGroupTargetAssignmentMemberRecord(self.group_id, member.member_id, moved))
        old_member = self.members.get(member.member_id)
        if old_member is None or old_member.server_assignor != member.server_assignor:
            if old_member is not None:
                self._assignor_votes[old_member.server_assignor] -= 1
            self._assignor_votes[member.server_assignor] += 1
        if old_member is None or _metadata_changed(old_member, member):
            self._records.append(_member_metadata_record(self.group_id, member))
        if old_member is None or _assignor_view_changed(old_member, member):
            self._drop_server_view(member.member_id)
        if old_member is None or _subscription(old_member) != _subscription(member):
            if old_member is not None:
                self._count_subscription(old_member, -1)
            self._count_subscription(member, 1)
        if old_member is not None:
            if old_member.assignment is member.assignment:
                self.members[member.member_id] = member
                return
            self._remove_epochs(old_member)
        self._state_dirty = True
        self.members[member.member_id] = member
        if old_member is not None or member.assignment != _UNASSIGNED:  # a new member's comes with its reconciliation
            self._records.append(ConsumerGroupCurrentMemberAssignmentRecord(self.group_id, member.member_id,
                                                                            member.assignment))
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._add_epochs(member)

    def _count_subscription(self, member: ConsumerGroupMember, change: int) -> None:
        key = _subscription(member)
        count = self._subscription_counts[key] + change
        if count:
            self._subscription_counts[key] = count
        else:
            del self._subscription_counts[key]

    def _remove_epochs(self, member: ConsumerGroupMember) -> None:
        for owned in (member.assignment.assigned, member.assignment.pending_revocation):
            for topic, numbers in owned.items():
                epochs = self.partition_epochs.get(topic)
                if epochs is not None:
                    for number in numbers:
                        epochs.pop(number, None)

    def _add_epochs(self, member: ConsumerGroupMember) -> None:
        epoch = member.member_epoch
        for owned in (member.assignment.assigned, member.assignment.pending_revocation):
            for topic, numbers in owned.items():
                epochs = self.partition_epochs.setdefault(topic, {})
                for number in numbers:
                    if number in epochs:
                        raise IllegalStateTransition(f"partition {topic}-{number} already owned at epoch {epochs[number]}")
                    epochs[number] = epoch

    def current_partition_epoch(self, topic: str, partition: int) -> int:
        """Kafka's ``ConsumerGroup.currentPartitionEpoch``: the owner's epoch, -1 when free."""
        epochs = self.partition_epochs.get(topic)
        return -1 if epochs is None else epochs.get(partition, -1)

    def _shared_subscription(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """One tuple object per distinct subscription, shared by the members that send it: the
        subscription metadata and the assignors read each distinct object once."""
        return self._subscription_tuples.setdefault(names, names)

    def _subscription_metadata(self) -> dict[str, int]:
        # Each distinct subscription resolved once: thousands of members share a few.
        subscribed: set[str] = set()
        for names, regex in self._subscription_counts:
            subscribed |= subscribed_topics(names, regex, self.topics)
        return {topic: self.topics[topic] for topic in sorted(subscribed)}

    def _refresh_epoch(self, bump: bool, out: list[Output], now_ms: int) -> None:
        if bump or self.metadata_refresh_needed:
            self.metadata_refresh_needed = False
            metadata = self._subscription_metadata()
            if metadata != self.subscription_metadata:
                self.subscription_metadata = metadata
                bump = True
            if bump:
                self._state_dirty = True
                self.group_epoch += 1
                self._records.append(self._metadata_record())
                out.append(Log(ConsumerGroupEpochBumped(now_ms, self.group_id, self.group_epoch)))

    def preferred_assignor(self) -> str:
        """Kafka's ``computePreferredServerAssignor``: the assignor most members ask for."""
        votes = self._assignor_votes
        if votes.total() != len(self.members):  # the members were cleared since: counted again
            votes = self._assignor_votes = Counter(map(_SERVER_ASSIGNOR, self.members.values()))
        counts = {name: count for name, count in votes.items() if name and count}
        if not counts:
            return self.config.assignors[0]
        return max(sorted(counts), key=counts.__getitem__)

    def _maybe_compute_target(self, out: list[Output], now_ms: int) -> None:
        if self.group_epoch <= self.assignment_epoch:
            return
        assignor = self.preferred_assignor()
        before = self.target
        if self._assign is default_server_assign:
            homogeneous = self._compute_target(assignor)
        else:
            members = [self._assignor_member(m) for m in self.members.values()]
            result = self._assign(assignor, self.subscription_metadata, members)
            previous = self.target
            target: dict[str, Partitions] = {}
            for m in members:
                computed = partitions(result.get(m.member_id, {}))
                kept = previous.get(m.member_id)
                # An unchanged target stays the same object, so the next computation reuses its input.
                target[m.member_id] = kept if kept is not None and kept == computed else computed
            self.target = TargetAssignment(target)
            homogeneous = len({m.subscribed_topics for m in members}) <= 1
        self.assignment_epoch = self.group_epoch
        self._record_target(before)
        self._state_dirty = True
        took = modelled_assignor_time_ms(assignor, sum(self.subscription_metadata.values()), homogeneous)
        out.append(Log(ConsumerTargetAssignmentComputed(now_ms, self.group_id, self.group_epoch, assignor, took)))

    def _record_target(self, before: TargetAssignment) -> None:
        """The target records of a computation (Kafka's ``TargetAssignmentBuilder.build``): one per
        member whose target changed or that had none, then the assignment epoch."""
        target = self.target
        for member_id in target.changed_members(before):
            self._records.append(ConsumerGroupTargetAssignmentMemberRecord(self.group_id, member_id, target[member_id]))
        self._records.append(ConsumerGroupTargetAssignmentMetadataRecord(self.group_id, self.assignment_epoch))

    def _metadata_record(self) -> ConsumerGroupMetadataRecord:
        return ConsumerGroupMetadataRecord(self.group_id, self.group_epoch, tuple(self.subscription_metadata.items()))

    def _compute_target(self, assignor: str) -> bool:
        """The built-in assignors on arrays: the members' current targets read from the last
        answer's owner array, the new target kept as the assignor's (``TargetAssignment``).
        Whether Kafka counts the group's subscriptions as homogeneous."""
        previous = self.target
        views = self._server_members()
        extended = previous.extended_group(self.subscription_metadata, views)  # members only joined
        numbering = None
        group: server.ServerGroup | None
        if extended is not None:
            group, numbering = extended
        else:
            group = server.build_server_group_from_held(self.subscription_metadata, views, previous)
        held_from_previous = group is not None
        if group is None:  # a target listed out of Java order, or two claims of one partition: the maps decide
            members = [self._assignor_member(m) for m in self.members.values()]
            group = server.build_server_group(self.subscription_metadata, _server_members(members))
        owner = server.server_assign_columnar(assignor, group)
        self.target = TargetAssignment.computed(group, owner, list(self.members), previous, views=views,
                                                numbering=numbering, held_from_previous=held_from_previous)
        # A target loaded in another order keeps that order while it holds (Kafka writes no record then).
        for member_id in previous.explicit_out_of_order():
            kept = previous[member_id]
            if member_id in self.target and self.target[member_id] == kept:
                self.target[member_id] = kept
        return group.kafka_homogeneous

    def _server_members(self) -> list[server.ServerMember]:
        """The members as the built-in assignors see them, their assignments aside (read from
        the target's arrays), in the group's order; each made again only when its subscription,
        instance or rack changed, or the topics did."""
        if self._server_view_of is not self.topics:
            self._server_view, self._subscriptions, self._server_view_of = {}, {}, self.topics
            self._server_views_listed = []
        listed = self._server_views_listed
        if listed and len(listed) <= len(self._server_view):
            # The members listed last time are the first ones still, with the same views (a view
            # dropped empties the list; fewer views than listed: they were cleared): only those
            # who joined since are looked up.
            joined = islice(self.members.values(), len(listed), None)
            views = [*listed, *(self._server_view.get(m.member_id) or self._new_server_view(m) for m in joined)]
        else:
            views = list(map(self._server_view.get, self.members))  # type: ignore[arg-type]
            # Found at C speed: usually one member is new, and a Python step per member costs
            # more than the assignor (``None in views`` would call each view's ``__eq__``).
            missing = list(compress(range(len(views)), map(is_, views, repeat(None))))
            if missing:
                members = list(self.members.values())
                for i in missing:
                    views[i] = self._new_server_view(members[i])
        self._server_views_listed = views
        return views

    def _new_server_view(self, member: ConsumerGroupMember) -> server.ServerMember:
        view = self._server_view[member.member_id] = self._server_member(member)
        return view

    def _drop_server_view(self, member_id: str) -> None:
        if self._server_view.pop(member_id, None) is not None:
            self._server_views_listed = []

    def _server_member(self, member: ConsumerGroupMember) -> server.ServerMember:
        # Each distinct subscription resolved once, and one tuple shared by its members: the
        # builder reads each distinct object once.
        key = (member.subscribed_topic_names, member.subscribed_topic_regex)
        subscribed = self._subscriptions.get(key)
        if subscribed is None:
            names = frozenset(member.subscribed_topic_names) | member.subscribed_topics(self.topics)
            subscribed = self._subscriptions[key] = tuple(sorted(names))
        return server.ServerMember(member.member_id, subscribed, {}, member.instance_id, member.rack_id)

    def _assignor_member(self, member: ConsumerGroupMember) -> MemberSubscriptionAndAssignment:
        """A member as the assignor sees it (Kafka's ``MemberSubscriptionAndAssignmentImpl``),
        rebuilt only when its subscription, rack, the topics or its target changed since the last
        computation (Kafka's ``TargetAssignmentBuilder`` likewise keeps the previous specs)."""
        target = self.target.get(member.member_id, EMPTY)
        cached = self._assignor_input.get(member.member_id)
        if cached is not None:
            seen, topics, seen_target, built = cached
            if (topics is self.topics and seen_target is target
                    and seen.subscribed_topic_names == member.subscribed_topic_names
                    and seen.subscribed_topic_regex == member.subscribed_topic_regex
                    and seen.instance_id == member.instance_id and seen.rack_id == member.rack_id):
                return built
        # The names as subscribed, those not (yet) in the metadata too: Kafka decides between its
        # homogeneous and heterogeneous builders on names (ModernGroup.subscriptionType).
        names = frozenset(member.subscribed_topic_names) | member.subscribed_topics(self.topics)
        built = MemberSubscriptionAndAssignment(member.member_id, names,
                             {t: sorted_numbers(ps) for t, ps in target.items()}, member.instance_id, member.rack_id)
        self._assignor_input[member.member_id] = (member, self.topics, target, built)
        return built

    def _reconcile(self, member_id: str, owned: Partitions | None, now_ms: int,
                   out: list[Output]) -> ConsumerGroupMember:
        """Kafka's ``maybeReconcile``: one step, and the rebalance timeout while revoking."""
        member = self.members[member_id]
        if member.assignment.is_reconciled_to(self.assignment_epoch):
            return member
        step = reconcile(member.assignment, self.assignment_epoch, self.target.get(member_id, {}),
                         self.current_partition_epoch, owned)
        if step == member.assignment:
            return member
        updated = replace(member, assignment=step)
        self._put_member(updated, None)
        out.append(Log(ConsumerMemberAssignmentUpdated(now_ms, self.group_id, member_id, step.member_epoch, step.previous_member_epoch,
                                           step.state.name, tuple(to_strings(step.assigned)),
                                           tuple(to_strings(step.pending_revocation)))))
        if not updated.uses_classic_protocol:
            if step.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
                self.rebalance_timeout_epoch[member_id] = step.member_epoch
                out.append(ArmTimer(RebalanceTimeout(member_id), now_ms + member.rebalance_timeout_ms))
            elif self.rebalance_timeout_epoch.pop(member_id, None) is not None:
                out.append(CancelTimer(RebalanceTimeout(member_id)))
        return updated

    def _fence(self, member_id: str, out: list[Output], now_ms: int) -> None:
        """Kafka's ``consumerGroupFenceMember``: remove the member, bump the group epoch; or, when
        it was the last member on the consumer protocol, convert the group back to classic."""
        if self.downgrade_allowed(member_id):
            classic = self.classic_group_without(member_id)
            self._records.extend(group_tombstones(self.group_id, self.members))
            for mid in list(self.members):
                out.append(CancelTimer(SessionTimeout(mid)))
                if self.rebalance_timeout_epoch.pop(mid, None) is not None:
                    out.append(CancelTimer(RebalanceTimeout(mid)))
            self.members.clear()
            self._subscription_counts.clear()
            self.static_members.clear()
            self.partition_epochs.clear()
            self.target.clear()
            self._assignor_input.clear()
            self._server_view.clear()
            self._state_dirty = False
            out.append(Log(ConsumerGroupStateChanged(now_ms, self.group_id, self.state.value, "Dead")))
            self.state = ConsumerGroupState.DEAD
            self._write_records(out)
            # "Converted the consumer group to a classic group" is logged by whoever runs the
            # classic group, after its rebalance started (convertToClassicGroup's order).
            out.append(ConvertedToClassic(classic))
            return
        self._remove(member_id, out)
        self._bump_epoch(out, now_ms)

    def _bump_epoch(self, out: list[Output], now_ms: int) -> None:
        """A member removed: the group epoch moves on (and is written)."""
        self.group_epoch += 1
        self._state_dirty = True
        self._records.append(self._metadata_record())
        out.append(Log(ConsumerGroupEpochBumped(now_ms, self.group_id, self.group_epoch)))

    def _record(self, record: ConsumerGroupRecord | cl.OffsetCommitRecord) -> None:
        self._records.append(record)

    def _remove(self, member_id: str, out: list[Output]) -> None:
        """Kafka's ``removeMember`` and ``cancelTimers``: the member, its partitions and timers go."""
        member = self.members.pop(member_id)
        self._records.extend(member_tombstones(self.group_id, member_id))
        self._count_subscription(member, -1)
        self._assignor_votes[member.server_assignor] -= 1
        self._state_dirty = True
        self._remove_epochs(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        self._assignor_input.pop(member_id, None)
        self._drop_server_view(member_id)
        self.subscription_metadata = self._subscription_metadata()
        out.append(CancelTimer(SessionTimeout(member_id)))
        if self.rebalance_timeout_epoch.pop(member_id, None) is not None:
            out.append(CancelTimer(RebalanceTimeout(member_id)))
        if member.classic is not None:
            self.join_timeouts.discard(member_id)
            out.append(CancelTimer(ClassicJoinTimeout(member_id)))
            out.append(CancelTimer(ClassicSyncTimeout(member_id)))

    def _update_state(self, out: list[Output], now_ms: int) -> None:
        """Kafka's ``ConsumerGroup.maybeUpdateGroupState``."""
        if not self._state_dirty or self.state is ConsumerGroupState.DEAD:
            return
        self._state_dirty = False
        if not self.members:
            new = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            new = ConsumerGroupState.ASSIGNING
        elif any(not m.assignment.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            new = ConsumerGroupState.RECONCILING
        else:
            new = ConsumerGroupState.STABLE
        if new is not self.state:
            GROUP_STATES.check(self.state, new)
            out.append(Log(ConsumerGroupStateChanged(now_ms, self.group_id, self.state.value, new.value)))
            self.state = new

    # ------------------------------------------------------------------ offsets

    def _offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """Kafka's ``ConsumerGroup.validateOffsetCommit`` for a consumer-protocol member."""
        epoch = request.generation_id_or_member_epoch
        if not (epoch < 0 and not self.members):
            member = self.members.get(request.member_id)
            if member is None:
                return OffsetCommitResponse(ErrorCode.UNKNOWN_MEMBER_ID)
            if epoch != member.member_epoch:
                code = ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
                return OffsetCommitResponse(code)
        for partition, offset in request.offsets:
            self.offsets[partition] = offset
        self._records.append(cl.OffsetCommitRecord(self.group_id, tuple(
            cl.PartitionOffset(partition, offset) for partition, offset in request.offsets)))
        return OffsetCommitResponse(ErrorCode.NONE)

    def _offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """Kafka's ``ConsumerGroup.validateOffsetFetch``."""
        if not (request.member_id is None and request.member_epoch < 0):
            member = self.members.get(request.member_id or "")
            if member is None:
                return OffsetFetchResponse(ErrorCode.UNKNOWN_MEMBER_ID)
            if request.member_epoch != member.member_epoch:
                code = ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
                return OffsetFetchResponse(code)
        return OffsetFetchResponse(ErrorCode.NONE, tuple((p, self.offsets.get(p, -1)) for p in request.partitions))


__all__ = [
    "GROUP_STATES", "VALID_PREVIOUS_GROUP_STATES", "ConsumerGroupConfig", "ConsumerGroupCoordinator",
    "ConsumerGroupMember", "ConsumerGroupState", "MemberSubscriptionAndAssignment", "ServerAssign",
    "default_server_assign", "modelled_assignor_time_ms",
]
