"""One group coordinator serving many groups, classic and consumer side by side.

In Kafka 4.x the coordinator of a ``__consumer_offsets`` partition (``GroupMetadataManager``)
holds every group of that partition in one map, whatever its protocol, and routes each request
by group id: a ConsumerGroupHeartbeat finds (or, at member epoch 0, creates) a consumer group,
converting a classic group that may be upgraded; a JoinGroup (and the other classic requests)
goes to the group of that id, which may be a consumer group with classic members; a group the
coordinator does not have gets GROUP_ID_NOT_FOUND ("Consumer group G not found.") from a
heartbeat that does not join (``getOrMaybeCreateConsumerGroup``; its
``GroupMetadataManagerTest#testUnknownGroupId``).

``GroupCoordinatorShard`` is that map over the two state machines this package already has:
the classic ``GroupCoordinator`` (every classic group of the broker) and one
``ConsumerGroupCoordinator`` per consumer group. A consumer group's timers carry no group id,
so the shard names them: ``ConsumerGroupTimer(group_id, timer)``. When a consumer group's last
consumer-protocol member leaves and it converts back (``ConvertedToClassic``), the shard loads
the classic group into the classic coordinator, as ``convertToClassicGroup`` does; a JoinGroup to
an empty consumer group converts it to an empty classic group (``classicGroupJoinToClassicGroup``).

Every change goes out as ``AppendRecord(partition, record)``, classic and consumer groups alike:
the caller appends them to its copy of the partition (``__consumer_offsets`` is the log). The
partition's life cycle comes in as Kafka's coordinator runtime drives it: ``PartitionResigned``
(the groups are dropped; the classic coordinator answers its waiting JoinGroup/SyncGroup
NOT_COORDINATOR), ``PartitionLoading`` (requests are answered COORDINATOR_NOT_AVAILABLE, classic
ones COORDINATOR_LOAD_IN_PROGRESS), ``PartitionLoaded(records)`` (classic groups replayed by the
classic coordinator, consumer groups by ``records.replay``, then ``onLoaded``).

Member ids are drawn from random streams: each consumer group's starts at ``seeds()`` when the
shard creates the group (joined, converted or loaded), and the classic coordinator's at
``classic_seed`` (or at ``classic_seeds()`` when the shard first needs a classic coordinator; it
lets go of one that a conversion left without groups). A caller that owns the randomness (the
simulator) decides there where each stream starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeAlias, assert_never

from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.classic.coordinator import GroupCoordinator
from kafka_rebalance.protocol.classic.group import (
    ClassicGroup,
    CoordinatorConfig,
    PartitionStatus,
    coordinator_partition,
)
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import ConsumerGroupConverted
from kafka_rebalance.protocol.modern.consumer import coordinator_events as ce
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ServerAssign,
    default_server_assign,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import (
    PersistConsumerGroup,
    group_tombstones,
)
from kafka_rebalance.protocol.modern.consumer.migration import consumer_group_for_heartbeat, downgraded
from kafka_rebalance.protocol.modern.consumer.records import OffsetsTopicRecord, group_records, replay
from kafka_rebalance.protocol.modern.consumer.validation import ProtocolError, validate_heartbeat


@dataclass(frozen=True, slots=True)
class PartitionLoading:
    """This coordinator became the leader of ``__consumer_offsets`` partition ``partition`` and
    reads it (``CoordinatorRuntime.scheduleLoadOperation``)."""

    partition: int


@dataclass(frozen=True, slots=True)
class PartitionLoaded:
    """The partition's records, in log order, are read: its groups are replayed."""

    partition: int
    records: tuple[OffsetsTopicRecord, ...]


@dataclass(frozen=True, slots=True)
class PartitionResigned:
    """This coordinator no longer leads the partition (``scheduleUnloadOperation``)."""

    partition: int


@dataclass(frozen=True, slots=True)
class AppendRecord:
    """Append ``record`` to ``__consumer_offsets`` partition ``partition``."""

    partition: int
    record: OffsetsTopicRecord


@dataclass(frozen=True, slots=True)
class ConsumerGroupTimer:
    """A consumer group's timer, named by its group."""

    group_id: str
    timer: ce.Timer


ShardTimer: TypeAlias = ConsumerGroupTimer | cl.CoordinatorTimer
ShardInput: TypeAlias = (ce.RequestReceived | cl.RequestReceived | ConsumerGroupTimer | cl.SessionExpired | cl.PendingMemberExpired
                         | cl.NewMemberJoinTimeout | cl.InitialDelayExpired | cl.RebalanceTimeout | cl.SyncTimeout
                         | ce.TopicsChanged | PartitionLoading | PartitionLoaded | PartitionResigned
                         | cl.RebalanceRequested)
ShardOutput: TypeAlias = (ce.Respond | cl.Respond | ArmTimer[ShardTimer] | CancelTimer[ShardTimer] | Log | AppendRecord)

# Classic requests a consumer group answers itself (its members still on the classic protocol).
_CLASSIC_IN_CONSUMER_GROUP = (cl.JoinGroupRequest, cl.SyncGroupRequest, cl.HeartbeatRequest, cl.LeaveGroupRequest,
                              cl.OffsetCommitRequest, cl.OffsetFetchRequest)


class GroupCoordinatorShard:
    """The groups of one coordinator, by id. One entry point: ``handle(event, now_ms)``."""

    def __init__(self, topics: Mapping[str, int], classic_config: CoordinatorConfig | None = None,
                 consumer_config: ConsumerGroupConfig | None = None, assign: ServerAssign = default_server_assign,
                 seed: int = 0, partitions: Iterable[int] | None = None, *, seeds: Callable[[], int] | None = None,
                 classic_seed: int | None = None, classic_seeds: Callable[[], int] | None = None):
        """``partitions``: the ``__consumer_offsets`` partitions this coordinator leads, loaded
        (None: every partition). ``seed``: every random stream's start, unless ``seeds`` (each
        consumer group's), ``classic_seed`` (the classic coordinator's, created now) or
        ``classic_seeds`` (the classic coordinator's when first needed) say otherwise."""
        self.topics = dict(topics)
        self.classic_config = classic_config or CoordinatorConfig()
        self.consumer_config = consumer_config or ConsumerGroupConfig()
        self.consumer_groups: dict[str, ConsumerGroupCoordinator] = {}
        self.partitions: dict[int, PartitionStatus] | None = (
            None if partitions is None else dict.fromkeys(partitions, PartitionStatus.LOADED))
        self._assign = assign
        self._seeds = seeds if seeds is not None else lambda: seed
        self._classic_seeds = classic_seeds if classic_seeds is not None else self._seeds
        self._classic: GroupCoordinator | None = None
        if seeds is None or classic_seed is not None:
            self._classic = self._new_classic(seed if classic_seed is None else classic_seed)

    def _new_classic(self, seed: int) -> GroupCoordinator:
        led = None if self.partitions is None else [p for p, s in self.partitions.items() if s is PartitionStatus.LOADED]
        classic = GroupCoordinator(self.classic_config, seed, partitions=led)
        if self.partitions is not None:
            for partition, status in self.partitions.items():
                if status is PartitionStatus.LOADING:
                    classic.handle(cl.BeginLoading(partition), 0)
        return classic

    @property
    def classic(self) -> GroupCoordinator:
        """The classic coordinator, created when first needed."""
        if self._classic is None:
            self._classic = self._new_classic(self._classic_seeds())
        return self._classic

    def partition_for(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.classic_config.offsets_topic_num_partitions)

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        """The classic group ``group_id``, if the group is classic here (a read-only view)."""
        return self._classic.group(group_id) if self._classic is not None else None

    def group_type(self, group_id: str) -> str | None:
        """``"consumer"``, ``"classic"`` or None (no such group)."""
        if group_id in self.consumer_groups:
            return "consumer"
        return "classic" if self.classic_group(group_id) is not None else None

    def handle(self, event: ShardInput, now_ms: int) -> list[ShardOutput]:
        out: list[ShardOutput] = []
        match event:
            case ce.RequestReceived(connection=connection, request=request):
                self._received(connection, request, now_ms, out)
            case cl.RequestReceived(connection=connection, request=request):
                group = self.consumer_groups.get(getattr(request, "group_id", ""))
                if group is not None and isinstance(request, cl.JoinGroupRequest) and not group.members:
                    self._classic_when_empty(group, now_ms, out)
                    group = None
                if group is not None and isinstance(request, _CLASSIC_IN_CONSUMER_GROUP):
                    self._consumer_output(group, group.handle(ce.RequestReceived(connection, request), now_ms), now_ms, out)
                elif self._classic is None and self._unavailable(getattr(request, "group_id", "")) is not None:
                    # No classic group loaded here: answered as the consumer groups' requests are.
                    out.append(cl.Respond(connection, classic_coordinator_error(request, ErrorCode.COORDINATOR_NOT_AVAILABLE)))
                else:
                    self._classic_output(self.classic.handle(event, now_ms), out)
            case ConsumerGroupTimer(group_id=group_id, timer=timer):
                group = self.consumer_groups.get(group_id)
                if group is not None:
                    self._consumer_output(group, group.handle(timer, now_ms), now_ms, out)
            case (cl.SessionExpired() | cl.PendingMemberExpired() | cl.NewMemberJoinTimeout() | cl.InitialDelayExpired()
                  | cl.RebalanceTimeout() | cl.SyncTimeout() | cl.RebalanceRequested()):
                if self._classic is not None:
                    self._classic_output(self._classic.handle(event, now_ms), out)
            case ce.TopicsChanged(topics=topics):
                self.topics = dict(topics)
                for group in list(self.consumer_groups.values()):
                    self._consumer_output(group, group.handle(event, now_ms), now_ms, out)
            case PartitionResigned(partition=partition):
                self._drop_consumer_groups(partition)
                if self.partitions is None:  # led every partition: now all but this one
                    num_partitions = self.classic_config.offsets_topic_num_partitions
                    self.partitions = dict.fromkeys(range(num_partitions), PartitionStatus.LOADED)
                self.partitions.pop(partition, None)
                if self._classic is not None:
                    self._classic_output(self._classic.handle(cl.Resign(partition), now_ms), out)
            case PartitionLoading(partition=partition):
                self._drop_consumer_groups(partition)
                if self.partitions is not None:
                    self.partitions[partition] = PartitionStatus.LOADING
                if self._classic is not None:
                    self._classic_output(self._classic.handle(cl.BeginLoading(partition), now_ms), out)
            case PartitionLoaded(partition=partition, records=records):
                self._load(partition, records, now_ms, out)
            case _:
                assert_never(event)
        return out

    def _classic_when_empty(self, group: ConsumerGroupCoordinator, now_ms: int, out: list[ShardOutput]) -> None:
        """Kafka's ``classicGroupJoin``: a JoinGroup to an empty consumer group converts it to a
        classic group (``getOrMaybeCreateClassicGroup`` deletes the empty consumer group); only
        a non-empty one takes classic members. Its offsets stay, its generations start again."""
        group_id = group.group_id
        del self.consumer_groups[group_id]
        partition = self.partition_for(group_id)
        empty = ce.ClassicGroupSnapshot(group_id, 0, None, None, "Empty", ())
        conversion = downgraded(empty, dict(group.offsets), partition)
        out.extend(AppendRecord(partition, record) for record in group_tombstones(group_id, ()))
        out.extend(AppendRecord(partition, record) for record in conversion.records)
        self._classic_output(self.classic.handle(conversion, now_ms), out)

    def _drop_consumer_groups(self, partition: int) -> None:
        """A consumer group's state lives in its records; an unloaded coordinator forgets it (its
        timers, named by group, find no group when they fire)."""
        for group_id in [g for g in self.consumer_groups if self.partition_for(g) == partition]:
            del self.consumer_groups[group_id]

    def _load(self, partition: int, records: tuple[OffsetsTopicRecord, ...], now_ms: int,
              out: list[ShardOutput]) -> None:
        """``GroupMetadataManager.replay`` of every record, then ``onLoaded`` of every group."""
        if self.partitions is not None:
            self.partitions[partition] = PartitionStatus.LOADED
        groups, classic_records = replay(records, self.topics, self.consumer_config, self._assign, self._seeds)
        if self._classic is not None or classic_records:
            self._classic_output(self.classic.handle(cl.LoadCompleted(partition, classic_records), now_ms), out)
        for group_id, group in groups.items():
            self.consumer_groups[group_id] = group
            self._consumer_output(group, group.handle(ce.GroupLoaded(), now_ms), now_ms, out)

    def _unavailable(self, group_id: str) -> ErrorCode | None:
        """Why this coordinator cannot serve ``group_id`` now (Kafka's runtime: not the leader
        of its partition, or still loading it), or None."""
        partitions = self.partitions
        if partitions is None:
            return None
        status = partitions.get(self.partition_for(group_id))
        if status is None:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.COORDINATOR_NOT_AVAILABLE if status is PartitionStatus.LOADING else None

    def _received(self, connection: str, request: ce.Request, now_ms: int, out: list[ShardOutput]) -> None:
        if isinstance(request, ce.ConsumerGroupHeartbeatRequest):
            # GroupCoordinatorService.consumerGroupHeartbeat: the request is checked on its own
            # before it is routed to a partition, let alone a group.
            try:
                validate_heartbeat(request, self.consumer_config.assignors)
            except ProtocolError as error:
                self._error(connection, request, error.code, error.message, out)
                return
        unavailable = self._unavailable(request.group_id)
        if unavailable is not None:
            self._error(connection, request, unavailable, None, out)
            return
        group = self.consumer_groups.get(request.group_id)
        if group is None and isinstance(request, ce.ConsumerGroupHeartbeatRequest):
            group = self._group_for_heartbeat(connection, request, now_ms, out)
            if group is None:
                return
        if group is None:
            # OffsetCommit/OffsetFetch with a member epoch: only a consumer group has members with epochs.
            self._error(connection, request, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.", out)
            return
        self._consumer_output(group, group.handle(ce.RequestReceived(connection, request), now_ms), now_ms, out)

    def _group_for_heartbeat(self, connection: str, request: ce.ConsumerGroupHeartbeatRequest, now_ms: int,
                             out: list[ShardOutput]) -> ConsumerGroupCoordinator | None:
        """``getOrMaybeCreateConsumerGroup(groupId, memberEpoch == 0)`` for a group id that is not
        a consumer group here: absent, or classic."""
        seed = self._seeds()
        classic = self.classic_group(request.group_id)
        if classic is None and request.member_epoch != ce.JOIN_GROUP_MEMBER_EPOCH:
            self._error(connection, request, ErrorCode.GROUP_ID_NOT_FOUND,
                        f"Consumer group {request.group_id} not found.", out)
            return None
        snapshot = classic_snapshot(classic) if classic is not None else None
        try:
            group = consumer_group_for_heartbeat(snapshot, request.member_epoch, self.topics, self.consumer_config,
                                                 self._assign, seed)
        except ProtocolError as error:
            out.append(ce.Respond(connection, ce.ConsumerGroupHeartbeatResponse(error.code, error_message=error.message)))
            return None
        group.group_id = request.group_id
        if classic is not None:
            self._upgrade(classic, group, now_ms, out)
        self.consumer_groups[request.group_id] = group
        return group

    def _upgrade(self, classic: ClassicGroup, group: ConsumerGroupCoordinator, now_ms: int,
                 out: list[ShardOutput]) -> None:
        """``convertToConsumerGroup``: the classic group is replaced (its timers go with it); its
        pending JoinGroup/SyncGroup are answered REBALANCE_IN_PROGRESS, its offsets move, and every
        member gets a session timeout of its own classic session."""
        group_id = classic.group_id
        group.offsets.update(classic.offsets)
        assert self._classic is not None
        del self._classic.groups[group_id]
        for timer in _classic_timers(classic):
            out.append(CancelTimer(timer))
        if not self._classic.groups:
            self._classic = None  # the next classic group starts a classic coordinator again
        if not classic.members:
            return
        # The consumer group written whole (the classic group's metadata is superseded: a replay
        # finds a consumer group; its offsets stay).
        partition = self.partition_for(group_id)
        out.extend(AppendRecord(partition, record) for record in group_records(group))
        for member in classic.members.values():
            if member.join_connection is not None:
                out.append(cl.Respond(member.join_connection, cl.JoinGroupResponse(
                    ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id)))
            if member.sync_connection is not None:
                out.append(cl.Respond(member.sync_connection, cl.SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS)))
        out.append(Log(ConsumerGroupConverted(now_ms, group_id, "upgrade")))
        for member in classic.members.values():
            out.append(ArmTimer(ConsumerGroupTimer(group_id, ce.SessionTimeout(member.member_id)),
                                now_ms + member.session_timeout_ms))

    @staticmethod
    def _error(connection: str, request: ce.Request, code: ErrorCode, message: str | None,
               out: list[ShardOutput]) -> None:
        match request:
            case ce.ConsumerGroupHeartbeatRequest():
                out.append(ce.Respond(connection, ce.ConsumerGroupHeartbeatResponse(code, error_message=message)))
            case ce.OffsetCommitRequest():
                out.append(ce.Respond(connection, ce.OffsetCommitResponse(code)))
            case ce.OffsetFetchRequest():
                out.append(ce.Respond(connection, ce.OffsetFetchResponse(code)))
            case _:
                raise AssertionError(f"classic request {request!r} goes to the classic coordinator")

    @staticmethod
    def _classic_output(items: list[cl.CoordinatorOutput], out: list[ShardOutput]) -> None:
        for item in items:
            match item:
                case ArmTimer(timer=timer, deadline_ms=deadline):
                    out.append(ArmTimer(timer, deadline))
                case CancelTimer(timer=timer):
                    out.append(CancelTimer(timer))
                case cl.Respond() | Log():
                    out.append(item)
                case cl.Persist(partition=partition, record=record):
                    out.append(AppendRecord(partition, record))
                case _:
                    assert_never(item)

    def _consumer_output(self, group: ConsumerGroupCoordinator, items: list[ce.Output], now_ms: int,
                         out: list[ShardOutput]) -> None:
        for item in items:
            match item:
                case ce.Respond() | Log():
                    out.append(item)
                case PersistConsumerGroup(record=record):
                    out.append(AppendRecord(self.partition_for(group.group_id), record))
                case ArmTimer(timer=timer, deadline_ms=deadline):
                    out.append(ArmTimer(ConsumerGroupTimer(group.group_id, timer), deadline))
                case CancelTimer(timer=timer):
                    out.append(CancelTimer(ConsumerGroupTimer(group.group_id, timer)))
                case ce.ConvertedToClassic(classic=classic):
                    # convertToClassicGroup: the consumer group's timers go with it (its records
                    # are tombstoned); the classic group loads from the records the conversion
                    # writes and rebalances.
                    del self.consumer_groups[group.group_id]
                    partition = self.partition_for(group.group_id)
                    conversion = downgraded(classic, dict(group.offsets), partition)
                    out.extend(AppendRecord(partition, record) for record in conversion.records)
                    self._classic_output(self.classic.handle(conversion, now_ms), out)
                    out.append(Log(ConsumerGroupConverted(now_ms, group.group_id, "downgrade")))
                case _:
                    assert_never(item)


def classic_snapshot(group: ClassicGroup) -> ce.ClassicGroupSnapshot:
    """A classic group as its GroupMetadata record describes it (the online upgrade's input)."""
    return ce.ClassicGroupSnapshot(group.group_id, group.generation, group.protocol_type, group.protocol_name,
                                   group.state.value, tuple(
        ce.ClassicGroupMember(m.member_id, m.group_instance_id, m.client_id, m.rebalance_timeout_ms,
                              m.session_timeout_ms, m.protocol_names, tuple(m.metadata(group.protocol_name).topics),
                              tuple(m.assignment))
        for m in group.members.values()))


def _classic_timers(group: ClassicGroup) -> list[cl.CoordinatorTimer]:
    """Every timer the classic coordinator may hold for ``group`` (cancelled when it converts)."""
    group_id = group.group_id
    timers: list[cl.CoordinatorTimer] = [cl.InitialDelayExpired(group_id), cl.RebalanceTimeout(group_id),
                                         cl.SyncTimeout(group_id, group.generation)]
    for member_id in [*group.members, *group.pending_members]:
        timers += [cl.SessionExpired(group_id, member_id), cl.NewMemberJoinTimeout(group_id, member_id),
                   cl.PendingMemberExpired(group_id, member_id)]
    return timers


def coordinator_error(request: cl.GroupRequest | ce.Request, code: ErrorCode) -> cl.GroupResponse | ce.Response:
    """The answer of a coordinator that does not have the request's group now (Kafka's
    ``validateGroupStatus``: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, or
    COORDINATOR_NOT_AVAILABLE while a partition loads on a coordinator with no classic group)."""
    match request:
        case ce.ConsumerGroupHeartbeatRequest():
            return ce.ConsumerGroupHeartbeatResponse(code, error_message=code.name)
        case ce.OffsetCommitRequest():
            return ce.OffsetCommitResponse(code)
        case ce.OffsetFetchRequest():
            return ce.OffsetFetchResponse(code)
        case _:
            return classic_coordinator_error(request, code)


def classic_coordinator_error(request: cl.GroupRequest, code: ErrorCode) -> cl.GroupResponse:
    """``coordinator_error`` of a classic-protocol request."""
    match request:
        case cl.JoinGroupRequest(member_id=member_id):
            return cl.JoinGroupResponse(code, member_id=member_id)
        case cl.SyncGroupRequest():
            return cl.SyncGroupResponse(code)
        case cl.HeartbeatRequest():
            return cl.HeartbeatResponse(code)
        case cl.LeaveGroupRequest():
            return cl.LeaveGroupResponse(code)
        case cl.OffsetCommitRequest():
            return cl.OffsetCommitResponse(code)
        case cl.OffsetFetchRequest():
            return cl.OffsetFetchResponse(code)
        case cl.DescribeGroupsRequest(groups=names):
            return cl.DescribeGroupsResponse(tuple(cl.DescribedGroup(code, name, "", "", "", ()) for name in names))
        case cl.ListGroupsRequest():
            return cl.ListGroupsResponse(code, ())
        case cl.DeleteGroupsRequest(groups_names=names):
            return cl.DeleteGroupsResponse(tuple(cl.DeletableGroupResult(name, code) for name in names))
        case _:
            assert_never(request)
