"""The broker-side classic group coordinator (Kafka's GroupCoordinator), sans-I/O.

One entry point: ``GroupCoordinator.handle(event, now_ms) -> list[CoordinatorOutput]`` with
the closed event types of ``coordinator_events``. A response may go to a connection other than
the caller's: JoinGroup responses are held until the join phase completes and followers'
SyncGroup responses until the leader's assignment arrives.

One coordinator serves the groups of the ``__consumer_offsets`` partitions it leads. Built
with ``partitions=None`` it leads every partition, loaded (a single broker); otherwise a
partition's groups answer COORDINATOR_LOAD_IN_PROGRESS between ``BeginLoading`` and
``LoadCompleted`` and NOT_COORDINATOR when the broker does not lead it (or after ``Resign``).

Choices where Kafka has no defined behaviour (documented here, deterministic):
- Strategy vote ties: ``kafka_rebalance.assignors.select_strategy`` (first member's preference).
- Member ids use ``uuid4`` drawn from a ``random.Random(seed)``, so a seed fixes them.
- Members removed because they did not rejoin before the rebalance timeout, or did not send
  SyncGroup in time, are logged with the "has failed" line (Kafka 2.x logs a summary line
  instead; the parse-back stays one line per member this way).
- A member's metadata "changed" (JoinGroup in Stable/CompletingRebalance) when its protocol
  names, subscribed topics or owned partitions differ; the assignor's user data and the
  subscription's generation are not compared.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from typing import assert_never

from kafka_rebalance.assignors import select_strategy
from kafka_rebalance.protocol.classic.coordinator_events import (
    CONSUMER_PROTOCOL_TYPE,
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    BeginLoading,
    ConsumerGroupDowngraded,
    CoordinatorInput,
    CoordinatorOutput,
    CoordinatorTimer,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    GroupMetadataRecord,
    GroupRequest,
    GroupResponse,
    GroupTombstone,
    HeartbeatRequest,
    HeartbeatResponse,
    InitialDelayExpired,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    LoadCompleted,
    MemberIdentity,
    NewMemberJoinTimeout,
    OffsetCommitRecord,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionOffset,
    PendingMemberExpired,
    Persist,
    PersistedMember,
    PersistedRecord,
    RebalanceRequested,
    RebalanceTimeout,
    RequestReceived,
    Resign,
    Respond,
    SessionExpired,
    SyncGroupRequest,
    SyncGroupResponse,
    SyncTimeout,
)
from kafka_rebalance.protocol.classic.group import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    ClassicGroup,
    CoordinatorConfig,
    GroupState,
    MemberMetadata,
    PartitionStatus,
    coordinator_partition,
)
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import (
    AssignmentReceived,
    GroupEmpty,
    LogRecord,
    MemberAssignment,
    MemberFailed,
    MemberLeft,
    PreparingRebalance,
    Stabilized,
)

_HEARTBEAT_ANSWERS = {error: HeartbeatResponse(error) for error in ErrorCode}

class GroupCoordinator:
    """The group coordinator of one broker."""

    def __init__(self, config: CoordinatorConfig | None = None, seed: int = 0,
                 partitions: Iterable[int] | None = None):
        self.config = config or CoordinatorConfig()
        self.groups: dict[str, ClassicGroup] = {}
        # None: every partition, loaded.
        self.partitions: dict[int, PartitionStatus] | None = (
            None if partitions is None else dict.fromkeys(partitions, PartitionStatus.LOADED))
        self._rng = random.Random(seed)
        self._partition_of: dict[str, int] = {}
        self._heartbeat_replies: dict[str, Respond] = {}  # connection -> its last heartbeat answer

    # ------------------------------------------------------------------ queries

    def partition_for(self, group_id: str) -> int:
        partition = self._partition_of.get(group_id)
        if partition is None:
            partition = self._partition_of[group_id] = coordinator_partition(
                group_id, self.config.offsets_topic_num_partitions)
        return partition

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.groups.get(group_id)

    def describe(self, group_id: str) -> DescribedGroup:
        """DescribeGroups for one group, as Kafka answers it (GroupCoordinator.handleDescribeGroup)."""
        error = self._group_status(group_id)
        if error is not None:
            return DescribedGroup(error, group_id, "", "", "", ())
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return DescribedGroup(ErrorCode.NONE, group_id, GroupState.DEAD.value, "", "", ())
        stable = group.state is GroupState.STABLE
        members = tuple(
            DescribedGroupMember(m.member_id, m.group_instance_id, m.client_id, "/127.0.0.1",
                                 m.metadata(group.protocol_name) if stable else None,
                                 m.assignment if stable else ())
            for m in group.members.values())
        return DescribedGroup(ErrorCode.NONE, group_id, group.state.value, group.protocol_type or "",
                              (group.protocol_name or "") if stable else "", members)

    # ------------------------------------------------------------------ entry point

    def handle(self, event: CoordinatorInput, now_ms: int) -> list[CoordinatorOutput]:
        out: list[CoordinatorOutput] = []
        match event:
            case RequestReceived(connection=connection, request=HeartbeatRequest() as heartbeat):
                answer = _HEARTBEAT_ANSWERS[self._heartbeat(heartbeat, now_ms, out)]
                # Outputs are immutable: the same answer on the same connection is the same Respond
                # (heartbeats are half of all requests).
                reply = self._heartbeat_replies.get(connection)
                if reply is None or reply.response is not answer:
                    reply = self._heartbeat_replies[connection] = Respond(connection, answer)
                out.append(reply)
            case RequestReceived(connection=connection, request=request):
                self._request(connection, request, now_ms, out)
            case SessionExpired() | PendingMemberExpired() | NewMemberJoinTimeout() | InitialDelayExpired() \
                    | RebalanceTimeout() | SyncTimeout():
                self._timer(event, now_ms, out)
            case BeginLoading(partition=partition):
                if self.partitions is not None:
                    self.partitions[partition] = PartitionStatus.LOADING
                for group_id in [g.group_id for g in self.groups.values() if g.partition == partition]:
                    del self.groups[group_id]
            case LoadCompleted(partition=partition, records=records):
                self._load(partition, records, now_ms, out)
            case Resign(partition=partition):
                self._resign(partition, out)
            case ConsumerGroupDowngraded(partition=partition, records=records, reason=reason):
                self._load(partition, records, now_ms, out)
                for record in records:
                    group = self.groups.get(record.group_id)
                    if isinstance(record, GroupMetadataRecord) and group is not None and group.members:
                        self._prepare_rebalance(group, reason, now_ms, out)
            case RebalanceRequested(group_id=group_id, reason=reason):
                group = self.groups.get(group_id)
                if group is not None and group.state is GroupState.STABLE:
                    self._prepare_rebalance(group, reason, now_ms, out)
            case _:
                assert_never(event)
        return out

    def _request(self, connection: str, request: GroupRequest, now: int, out: list[CoordinatorOutput]) -> None:
        match request:
            case HeartbeatRequest():
                out.append(Respond(connection, _HEARTBEAT_ANSWERS[self._heartbeat(request, now, out)]))
            case JoinGroupRequest():
                self._join(connection, request, now, out)
            case SyncGroupRequest():
                self._sync(connection, request, now, out)
            case LeaveGroupRequest():
                out.append(Respond(connection, self._leave(request, now, out)))
            case OffsetCommitRequest():
                out.append(Respond(connection, self._commit(request, now, out)))
            case OffsetFetchRequest():
                out.append(Respond(connection, self._fetch(request)))
            case DescribeGroupsRequest(groups=names):
                out.append(Respond(connection, DescribeGroupsResponse(tuple(self.describe(g) for g in names))))
            case ListGroupsRequest():
                out.append(Respond(connection, self._list(request)))
            case DeleteGroupsRequest():
                out.append(Respond(connection, self._delete(request, out)))
            case _:
                assert_never(request)

    def _timer(self, timer: CoordinatorTimer, now: int, out: list[CoordinatorOutput]) -> None:
        group = self.groups.get(timer.group_id)
        if group is None or group.state is GroupState.DEAD:
            return
        match timer:
            case SessionExpired(member_id=member_id):
                self._session_expired(group, member_id, now, out)
            case PendingMemberExpired(member_id=member_id):
                if member_id in group.pending_members:
                    group.pending_members.discard(member_id)
                    self._maybe_complete_join(group, now, out)
            case NewMemberJoinTimeout(member_id=member_id):
                self._new_member_join_timeout(group, member_id, now, out)
            case InitialDelayExpired():
                if group.state is GroupState.PREPARING_REBALANCE:
                    self._initial_delay_expired(group, now, out)
            case RebalanceTimeout():
                if group.state is GroupState.PREPARING_REBALANCE:
                    self._complete_join(group, now, out)
            case SyncTimeout(generation_id=generation):
                if generation == group.generation:
                    self._sync_expired(group, now, out)
            case _:
                assert_never(timer)

    # ------------------------------------------------------------------ helpers

    def _log(self, out: list[CoordinatorOutput], record: LogRecord) -> None:
        out.append(Log(record))

    def _new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{uuid.UUID(int=self._rng.getrandbits(128), version=4)}"

    def _arm_session(self, group: ClassicGroup, member: MemberMetadata, now: int, out: list[CoordinatorOutput]) -> None:
        member.session_deadline = now + member.session_timeout_ms
        if not member.timer_armed:
            member.timer_armed = True
            out.append(ArmTimer(SessionExpired(group.group_id, member.member_id), member.session_deadline))

    def _group_status(self, group_id: str) -> ErrorCode | None:
        """Kafka's validateGroupStatus: is this broker the group's coordinator, and loaded?"""
        if self.partitions is None:
            return None
        status = self.partitions.get(self.partition_for(group_id))
        if status is None:
            return ErrorCode.NOT_COORDINATOR
        if status is PartitionStatus.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def _new_group(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(group_id, self.partition_for(group_id))
        self.groups[group_id] = group
        return group

    def _persist_group(self, group: ClassicGroup, out: list[CoordinatorOutput]) -> None:
        members = tuple(
            PersistedMember(m.member_id, m.group_instance_id, m.client_id, m.rebalance_timeout_ms,
                            m.session_timeout_ms, m.metadata(group.protocol_name), m.assignment)
            for m in group.members.values())
        out.append(Persist(group.partition, GroupMetadataRecord(
            group.group_id, group.protocol_type, group.generation, group.protocol_name, group.leader, members)))

    # ------------------------------------------------------------------ rebalance phases

    def _prepare_rebalance(self, group: ClassicGroup, reason: str, now: int, out: list[CoordinatorOutput]) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for member in group.members.values():
                if member.sync_connection is not None:
                    out.append(Respond(member.sync_connection, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS)))
                    member.sync_connection = None
        group.pending_sync.clear()
        old_state = group.state
        if old_state is GroupState.EMPTY:
            delay = self.config.group_initial_rebalance_delay_ms
            group.in_initial_delay = True
            group.new_member_added = False
            group.initial_remaining_ms = max(group.max_rebalance_timeout() - delay, 0)
            out.append(ArmTimer(InitialDelayExpired(group.group_id), now + delay))
        else:
            group.in_initial_delay = False
            out.append(ArmTimer(RebalanceTimeout(group.group_id), now + group.max_rebalance_timeout()))
        group.transition(GroupState.PREPARING_REBALANCE)
        self._log(out, PreparingRebalance(now, group.group_id, old_state.value, group.generation, reason))
        # DelayedJoin.tryComplete at once (maybeCompleteJoinElseSchedule): everyone may be in already.
        self._maybe_complete_join(group, now, out)

    def _maybe_prepare_rebalance(self, group: ClassicGroup, reason: str, now: int,
                                 out: list[CoordinatorOutput]) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group, reason, now, out)

    def _maybe_complete_join(self, group: ClassicGroup, now: int, out: list[CoordinatorOutput]) -> None:
        if group.state is GroupState.PREPARING_REBALANCE and not group.in_initial_delay and group.all_joined():
            self._complete_join(group, now, out)

    def _initial_delay_expired(self, group: ClassicGroup, now: int, out: list[CoordinatorOutput]) -> None:
        if not group.in_initial_delay:
            return
        if group.new_member_added and group.initial_remaining_ms > 0:
            delay = min(self.config.group_initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - self.config.group_initial_rebalance_delay_ms, 0)
            group.new_member_added = False
            out.append(ArmTimer(InitialDelayExpired(group.group_id), now + delay))
            return
        group.in_initial_delay = False
        self._complete_join(group, now, out)

    def _complete_join(self, group: ClassicGroup, now: int, out: list[CoordinatorOutput]) -> None:
        out.append(CancelTimer(RebalanceTimeout(group.group_id)))
        out.append(CancelTimer(InitialDelayExpired(group.group_id)))
        for member in list(group.members.values()):
            if member.join_connection is None and member.group_instance_id is None:
                self._log(out, MemberFailed(now, group.group_id, member.member_id))
                self._remove_member(group, member.member_id, out)
        # Pending (KIP-394) ids outlive the join phase, as in Kafka's completeClassicGroupJoin:
        # they join later or expire on their own timer (PendingMemberExpired).
        joined = [m for m in group.members.values() if m.join_connection is not None]
        group.in_initial_delay = False
        if not group.members:
            group.generation += 1
            group.protocol_name = None
            group.leader = None
            group.transition(GroupState.EMPTY)
            self._log(out, GroupEmpty(now, group.group_id, group.generation))
            self._persist_group(group, out)
            return
        if not joined:
            # Only static members that have not rejoined remain: wait for them another round.
            out.append(ArmTimer(RebalanceTimeout(group.group_id), now + group.max_rebalance_timeout()))
            return
        group.generation += 1
        if group.leader is None or group.members[group.leader].join_connection is None:
            group.leader = joined[0].member_id
        group.protocol_name = select_strategy([m.protocol_names for m in group.members.values()])
        group.transition(GroupState.COMPLETING_REBALANCE)
        self._log(out, Stabilized(now, group.group_id, group.generation, tuple(group.members), group.leader,
                                  group.protocol_name))
        everyone = self._member_list(group)
        for member in joined:
            is_leader = member.member_id == group.leader
            assert member.join_connection is not None
            out.append(Respond(member.join_connection, JoinGroupResponse(
                ErrorCode.NONE, group.generation, group.protocol_type, group.protocol_name, group.leader, False,
                member.member_id, everyone if is_leader else ())))
            group.set_join_connection(member, None)
        for member in group.members.values():
            # onCompleteJoin: every member's heartbeat expiration restarts, not only the joiners'.
            if member.is_new:
                member.is_new = False
                out.append(CancelTimer(NewMemberJoinTimeout(group.group_id, member.member_id)))
            self._arm_session(group, member, now, out)
        group.pending_sync = set(group.members)
        out.append(ArmTimer(SyncTimeout(group.group_id, group.generation), now + group.max_rebalance_timeout()))

    def _member_list(self, group: ClassicGroup) -> tuple[JoinGroupResponseMember, ...]:
        return tuple(JoinGroupResponseMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                     for m in group.members.values())

    def _sync_expired(self, group: ClassicGroup, now: int, out: list[CoordinatorOutput]) -> None:
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or not group.pending_sync:
            return
        for member_id in [m for m in group.members if m in group.pending_sync]:
            self._log(out, MemberFailed(now, group.group_id, member_id))
            self._remove_member(group, member_id, out)
        group.pending_sync.clear()
        self._maybe_prepare_rebalance(group, "removing members who did not send SyncGroup in time", now, out)

    # ------------------------------------------------------------------ membership

    def _add_member(self, group: ClassicGroup, connection: str, request: JoinGroupRequest, member_id: str, now: int,
                    out: list[CoordinatorOutput]) -> MemberMetadata:
        member = MemberMetadata(
            member_id=member_id, group_instance_id=request.group_instance_id, client_id=request.client_id,
            session_timeout_ms=request.session_timeout_ms, rebalance_timeout_ms=request.rebalance_timeout_ms,
            protocols=request.protocols, join_connection=connection, is_new=True,
        )
        if not group.members:
            group.protocol_type = request.protocol_type
        group.add_member(member)
        if request.group_instance_id is not None:
            group.static_members[request.group_instance_id] = member_id
        if group.leader is None:
            group.leader = member_id
        self._arm_session(group, member, now, out)
        # KIP-394: a new member's JoinGroup waits at most NEW_MEMBER_JOIN_TIMEOUT_MS.
        out.append(ArmTimer(NewMemberJoinTimeout(group.group_id, member_id), now + NEW_MEMBER_JOIN_TIMEOUT_MS))
        if group.state is GroupState.PREPARING_REBALANCE and group.generation == 0:
            group.new_member_added = True  # the initial delay may be extended (addMemberAndRebalance)
        return member

    def _remove_member(self, group: ClassicGroup, member_id: str, out: list[CoordinatorOutput]) -> None:
        member = group.pop_member(member_id)
        group.pending_sync.discard(member_id)
        if member is None:
            group.pending_members.discard(member_id)
            return
        if member.group_instance_id is not None and group.static_members.get(member.group_instance_id) == member_id:
            del group.static_members[member.group_instance_id]
        if member.join_connection is not None:
            out.append(Respond(member.join_connection,
                               JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)))
        if member.sync_connection is not None:
            out.append(Respond(member.sync_connection, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID)))
        if group.leader == member_id:
            group.leader = next(iter(group.members), None)

    def _remove_and_update(self, group: ClassicGroup, member_id: str, reason: str, now: int,
                           out: list[CoordinatorOutput]) -> None:
        self._remove_member(group, member_id, out)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason, now, out)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group, now, out)

    def _session_expired(self, group: ClassicGroup, member_id: str, now: int, out: list[CoordinatorOutput]) -> None:
        member = group.members.get(member_id)
        if member is None:
            return
        member.timer_armed = False
        awaiting = member.join_connection is not None or member.sync_connection is not None
        if awaiting or member.session_deadline > now:
            # Kafka keeps members alive while they wait for a join or sync response.
            deadline = now + member.session_timeout_ms if awaiting else member.session_deadline
            member.session_deadline = deadline
            member.timer_armed = True
            out.append(ArmTimer(SessionExpired(group.group_id, member_id), deadline))
            return
        self._log(out, MemberFailed(now, group.group_id, member_id))
        self._remove_and_update(group, member_id, f"removing member {member_id} on heartbeat expiration", now, out)

    def _new_member_join_timeout(self, group: ClassicGroup, member_id: str, now: int,
                                 out: list[CoordinatorOutput]) -> None:
        member = group.members.get(member_id)
        if member is None or not member.is_new:
            return
        self._log(out, MemberFailed(now, group.group_id, member_id))
        self._remove_and_update(group, member_id, f"removing member {member_id} on heartbeat expiration", now, out)

    # ------------------------------------------------------------------ JoinGroup

    def _join(self, connection: str, req: JoinGroupRequest, now: int, out: list[CoordinatorOutput]) -> None:
        def reply(error: ErrorCode, member_id: str = req.member_id) -> None:
            out.append(Respond(connection, JoinGroupResponse(error, member_id=member_id)))

        status = self._group_status(req.group_id)
        if status is not None:
            return reply(status)
        cfg = self.config
        if not cfg.allows_session_timeout(req.session_timeout_ms):
            return reply(ErrorCode.INVALID_SESSION_TIMEOUT)
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_id != UNKNOWN_MEMBER_ID:
                return reply(ErrorCode.UNKNOWN_MEMBER_ID)
            group = self._new_group(req.group_id)
        if not self._accepts_joining_member(group, req.member_id):
            # Kafka also drops the member it turns away (acceptJoiningMember; group.remove).
            reply(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID)
            if req.member_id in group.members:
                self._remove_member(group, req.member_id, out)
                self._maybe_complete_join(group, now, out)
            return None
        if group.state is GroupState.DEAD:
            return reply(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not self._supports(group, req.protocol_type, req.protocols):
            return reply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        instance = req.group_instance_id
        if req.member_id == UNKNOWN_MEMBER_ID:
            if instance is not None and instance in group.static_members:
                return self._replace_static_member(group, connection, req, now, out)
            new_id = self._new_member_id(instance if instance is not None else req.client_id)
            if instance is None:
                # KIP-394: a dynamic member first learns its id, then joins with it.
                group.pending_members.add(new_id)
                out.append(ArmTimer(PendingMemberExpired(group.group_id, new_id), now + req.session_timeout_ms))
                return reply(ErrorCode.MEMBER_ID_REQUIRED, new_id)
            self._add_member(group, connection, req, new_id, now, out)
            return self._after_new_member(group, new_id, req.reason, now, out)
        if req.member_id in group.pending_members:
            group.pending_members.discard(req.member_id)
            self._add_member(group, connection, req, req.member_id, now, out)
            return self._after_new_member(group, req.member_id, req.reason, now, out)
        error = self._check_member(group, req.member_id, instance)
        if error is not None:
            return reply(error)
        member = group.members[req.member_id]
        if group.state is GroupState.EMPTY:
            return reply(ErrorCode.UNKNOWN_MEMBER_ID)
        # Kafka compares the whole protocol metadata, owned partitions included: that is what makes
        # a cooperative member's rejoin after revoking start the follow-up rebalance.
        changed = not member.same_metadata(req.protocols)
        group.update_protocols(member, req.protocols)
        member.session_timeout_ms, member.rebalance_timeout_ms = req.session_timeout_ms, req.rebalance_timeout_ms
        group.set_join_connection(member, connection)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group, now, out)
        elif group.state is GroupState.COMPLETING_REBALANCE:
            if changed:
                self._prepare_rebalance(
                    group, f"updating metadata for member {req.member_id} during CompletingRebalance", now, out)
            else:
                # It likely missed its JoinGroup response: answer it again, and the leader again
                # gets the member list it needs to compute the assignment (as Kafka does).
                self._reply_current_generation(group, member, out, with_members=member.member_id == group.leader)
        elif group.state is GroupState.STABLE:
            if changed or req.member_id == group.leader:
                why = "leader" if not changed else "member"
                reason = (f"Updating metadata for {why} {req.member_id} during Stable"
                          + (f"; client reason: {req.reason}" if req.reason else ""))
                self._prepare_rebalance(group, reason, now, out)
            else:
                self._reply_current_generation(group, member, out)
        if group.state is GroupState.PREPARING_REBALANCE:
            # handleJoinGroup: rebalancePurgatory.checkAndComplete after every JoinGroup.
            self._maybe_complete_join(group, now, out)

    def _after_new_member(self, group: ClassicGroup, member_id: str, reason: str | None, now: int,
                          out: list[CoordinatorOutput]) -> None:
        member = group.members[member_id]
        if group.state is not GroupState.PREPARING_REBALANCE:
            instance = f"Some({member.group_instance_id})" if member.group_instance_id else "None"
            self._prepare_rebalance(group, f"Adding new member {member_id} with group instance id {instance}", now, out)
        self._maybe_complete_join(group, now, out)

    def _reply_current_generation(self, group: ClassicGroup, member: MemberMetadata, out: list[CoordinatorOutput],
                                  with_members: bool = False) -> None:
        assert member.join_connection is not None
        out.append(Respond(member.join_connection, JoinGroupResponse(
            ErrorCode.NONE, group.generation, group.protocol_type, group.protocol_name,
            group.leader or UNKNOWN_MEMBER_ID, False, member.member_id,
            self._member_list(group) if with_members else ())))
        group.set_join_connection(member, None)

    def _replace_static_member(self, group: ClassicGroup, connection: str, req: JoinGroupRequest, now: int,
                               out: list[CoordinatorOutput]) -> None:
        """GroupCoordinator.updateStaticMemberAndRebalance: the known group.instance.id gets a new
        member id in place (the old id is fenced); in Stable a rebalance follows only if the
        group's selected protocol would change (KIP-345), and a static leader coming back learns
        it leads without running the assignor (KIP-814 skip_assignment, JoinGroup v9+)."""
        instance = req.group_instance_id
        assert instance is not None
        old_id = group.static_members[instance]
        old = group.members[old_id]
        current_leader = group.leader
        new_id = self._new_member_id(instance)
        if old.join_connection is not None:
            out.append(Respond(old.join_connection, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id)))
        if old.sync_connection is not None:
            out.append(Respond(old.sync_connection, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID)))
        replacement = MemberMetadata(
            member_id=new_id, group_instance_id=instance, client_id=req.client_id,
            session_timeout_ms=req.session_timeout_ms, rebalance_timeout_ms=req.rebalance_timeout_ms,
            protocols=req.protocols, assignment=old.assignment,
        )
        group.replace_member(old_id, replacement)
        group.static_members[instance] = new_id
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        if group.leader == old_id:
            group.leader = new_id
        self._arm_session(group, replacement, now, out)
        group.set_join_connection(replacement, connection)
        reason = req.reason or "not provided"
        if group.state is GroupState.STABLE:
            selected = select_strategy([m.protocol_names for m in group.members.values()])
            if selected == group.protocol_name:
                self._persist_group(group, out)
                is_leader = group.leader == new_id
                skip = is_leader and req.api_version >= 9
                out.append(Respond(connection, JoinGroupResponse(
                    ErrorCode.NONE, group.generation, group.protocol_type, group.protocol_name,
                    new_id if skip else (current_leader or UNKNOWN_MEMBER_ID), skip, new_id,
                    self._member_list(group) if skip else ())))
                group.set_join_connection(replacement, None)
            else:
                self._prepare_rebalance(
                    group, f"Group's selectedProtocol will change because static member {new_id} with instance id "
                    f"{instance} joined with change of protocol; client reason: {reason}", now, out)
        elif group.state is GroupState.COMPLETING_REBALANCE:
            self._prepare_rebalance(group, f"Updating metadata for static member {new_id} (instance {instance})",
                                    now, out)
        self._maybe_complete_join(group, now, out)

    def _accepts_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        """GroupCoordinator.acceptJoiningMember: while preparing a rebalance only members awaiting
        a join count (so the last rejoining members are the ones turned away); otherwise known
        members are always accepted and new ones while the group is below group.max.size.
        Pending (KIP-394) member ids never count."""
        limit = self.config.group_max_size
        state = group.state
        if state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        member = group.members.get(member_id)
        if state is GroupState.PREPARING_REBALANCE:
            if member is not None and member.join_connection is not None:
                return True
            return group.awaiting_join < limit
        return member is not None or len(group.members) < limit

    def _supports(self, group: ClassicGroup, protocol_type: str,
                  protocols: tuple[JoinGroupRequestProtocol, ...]) -> bool:
        """GroupMetadata.supportsProtocols: an empty group takes any non-empty protocol type and
        list; otherwise the type must be the group's and one protocol must be every member's."""
        if not group.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != group.protocol_type:
            return False
        return group.supports_one_of(p.name for p in protocols)

    def _check_member(self, group: ClassicGroup, member_id: str, instance: str | None) -> ErrorCode | None:
        """GroupCoordinator.validateCurrentMember: a group instance id must be known and mapped to
        this member id (else UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID); the member id must be known."""
        if instance is not None:
            current = group.static_members.get(instance)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    # ------------------------------------------------------------------ SyncGroup

    def _sync(self, connection: str, req: SyncGroupRequest, now: int, out: list[CoordinatorOutput]) -> None:
        def reply(error: ErrorCode) -> None:
            out.append(Respond(connection, SyncGroupResponse(error)))

        status = self._group_status(req.group_id)
        if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # Kafka: the rebalance state is lost while loading; REBALANCE_IN_PROGRESS makes the
            # member rejoin without rediscovering the coordinator.
            return reply(ErrorCode.REBALANCE_IN_PROGRESS)
        if status is not None:
            return reply(status)
        group = self.groups.get(req.group_id)
        if group is None:
            return reply(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is GroupState.DEAD:
            return reply(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        error = self._check_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            return reply(error)
        if group.state is GroupState.EMPTY:
            return reply(ErrorCode.UNKNOWN_MEMBER_ID)
        if req.generation_id != group.generation:
            return reply(ErrorCode.ILLEGAL_GENERATION)
        if ((req.protocol_type is not None and req.protocol_type != group.protocol_type)
                or (req.protocol_name is not None and req.protocol_name != group.protocol_name)):
            return reply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[req.member_id]
        if group.state is GroupState.PREPARING_REBALANCE:
            return reply(ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync.discard(req.member_id)
        self._arm_session(group, member, now, out)
        if group.state is GroupState.STABLE:
            out.append(Respond(connection, SyncGroupResponse(ErrorCode.NONE, group.protocol_type, group.protocol_name,
                                                             member.assignment)))
            return
        member.sync_connection = connection
        if req.member_id != group.leader:
            return
        assignments = {a.member_id: a.assignment for a in req.assignments}
        for member_id, m in group.members.items():
            m.assignment = tuple(assignments.get(member_id, ()))
        self._log(out, AssignmentReceived(
            now, group.group_id, group.generation, group.leader, group.static_count(),
            tuple(MemberAssignment(mid, m.assignment) for mid, m in group.members.items())))
        group.transition(GroupState.STABLE)
        self._persist_group(group, out)
        for m in group.members.values():
            if m.sync_connection is not None:
                out.append(Respond(m.sync_connection, SyncGroupResponse(
                    ErrorCode.NONE, group.protocol_type, group.protocol_name, m.assignment)))
                m.sync_connection = None
                self._arm_session(group, m, now, out)

    # ------------------------------------------------------------------ Heartbeat, LeaveGroup

    def _heartbeat(self, req: HeartbeatRequest, now: int, out: list[CoordinatorOutput]) -> ErrorCode:
        # Groups exist only in loaded partitions this broker leads, so a known group needs no status check.
        group = self.groups.get(req.group_id)
        if group is None:
            status = self._group_status(req.group_id)
            if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                return ErrorCode.NONE  # Kafka answers blindly while the group loads
            return ErrorCode.UNKNOWN_MEMBER_ID if status is None else status
        state = group.state
        if state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        # GroupCoordinator.validateHeartbeat: member, then generation, then the group state.
        error = self._check_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._arm_session(group, group.members[req.member_id], now, out)
        if state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _leave(self, req: LeaveGroupRequest, now: int, out: list[CoordinatorOutput]) -> LeaveGroupResponse:
        status = self._group_status(req.group_id)
        if status is not None:
            return LeaveGroupResponse(status)
        group = self.groups.get(req.group_id)
        if group is None:
            return LeaveGroupResponse(ErrorCode.NONE, tuple(
                LeaveGroupResponseMember(m.member_id, m.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
                for m in req.members))
        if group.state is GroupState.DEAD:
            return LeaveGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        results = tuple(
            LeaveGroupResponseMember(m.member_id, m.group_instance_id, self._leave_one(group, m, now, out))
            for m in req.members)
        if len(results) == 1:
            # v0-v2 carry one member and a top-level error (what a single-member batch means here).
            return LeaveGroupResponse(results[0].error_code, results)
        return LeaveGroupResponse(ErrorCode.NONE, results)

    def _leave_one(self, group: ClassicGroup, leaving: MemberIdentity, now: int,
                   out: list[CoordinatorOutput]) -> ErrorCode:
        member_id = leaving.member_id
        reason = leaving.reason or "not provided"
        if member_id == UNKNOWN_MEMBER_ID:
            current = group.static_members.get(leaving.group_instance_id or "")
            if leaving.group_instance_id is None or current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            member_id = current
        elif member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._maybe_complete_join(group, now, out)
            return ErrorCode.NONE
        else:
            error = self._check_member(group, member_id, leaving.group_instance_id)
            if error is not None:
                return error
        self._log(out, MemberLeft(now, group.group_id, member_id, reason))
        self._remove_and_update(group, member_id, f"removing member {member_id} on LeaveGroup; client reason: {reason}",
                                now, out)
        return ErrorCode.NONE

    # ------------------------------------------------------------------ offsets

    def _commit(self, req: OffsetCommitRequest, now: int, out: list[CoordinatorOutput]) -> OffsetCommitResponse:
        status = self._group_status(req.group_id)
        if status is not None:
            return OffsetCommitResponse(status)
        group = self.groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                return OffsetCommitResponse(ErrorCode.ILLEGAL_GENERATION)
            group = self._new_group(req.group_id)
        state = group.state
        # GroupCoordinator.validateOffsetCommit, then doCommitOffsets by state.
        if state is GroupState.DEAD:
            return OffsetCommitResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if req.generation_id < 0 and state is GroupState.EMPTY:
            self._store_offsets(group, req.offsets, out)  # a commit from outside group management
            return OffsetCommitResponse(ErrorCode.NONE, req.offsets)
        if req.generation_id >= 0 or req.member_id != UNKNOWN_MEMBER_ID or req.group_instance_id is not None:
            error = self._check_member(group, req.member_id, req.group_instance_id)
            if error is not None:
                return OffsetCommitResponse(error)
            if req.generation_id != group.generation:
                return OffsetCommitResponse(ErrorCode.ILLEGAL_GENERATION)
        elif state is not GroupState.EMPTY:
            return OffsetCommitResponse(ErrorCode.UNKNOWN_MEMBER_ID)
        if state is GroupState.COMPLETING_REBALANCE:
            return OffsetCommitResponse(ErrorCode.REBALANCE_IN_PROGRESS)
        if state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self._arm_session(group, group.members[req.member_id], now, out)
        self._store_offsets(group, req.offsets, out)
        return OffsetCommitResponse(ErrorCode.NONE, req.offsets)

    def _store_offsets(self, group: ClassicGroup, offsets: tuple[PartitionOffset, ...],
                       out: list[CoordinatorOutput]) -> None:
        stored = group.offsets
        for entry in offsets:
            stored[entry.partition] = entry.offset
        out.append(Persist(group.partition, OffsetCommitRecord(group.group_id, offsets)))

    def _fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        status = self._group_status(req.group_id)
        if status is not None:
            return OffsetFetchResponse(status)
        group = self.groups.get(req.group_id)
        if group is not None and group.state is GroupState.DEAD:
            return OffsetFetchResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        stored = group.offsets if group is not None else {}
        return OffsetFetchResponse(ErrorCode.NONE, tuple(PartitionOffset(p, stored.get(p, -1)) for p in req.partitions))

    # ------------------------------------------------------------------ admin

    def _list(self, req: ListGroupsRequest) -> ListGroupsResponse:
        loading = self.partitions is not None and PartitionStatus.LOADING in self.partitions.values()
        wanted = {s.lower() for s in req.states_filter}
        groups = tuple(
            ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
            for g in self.groups.values()
            if g.state is not GroupState.DEAD and self._group_status(g.group_id) is None
            and (not wanted or g.state.value.lower() in wanted))
        return ListGroupsResponse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE, groups)

    def _delete(self, req: DeleteGroupsRequest, out: list[CoordinatorOutput]) -> DeleteGroupsResponse:
        results = []
        for group_id in req.groups_names:
            status = self._group_status(group_id)
            group = self.groups.get(group_id)
            if status is not None:
                error = status
            elif group is None or group.state is GroupState.DEAD:
                error = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state is GroupState.EMPTY:
                group.transition(GroupState.DEAD)
                del self.groups[group_id]
                out.append(Persist(group.partition, GroupTombstone(group_id)))
                error = ErrorCode.NONE
            else:
                error = ErrorCode.NON_EMPTY_GROUP
            results.append(DeletableGroupResult(group_id, error))
        return DeleteGroupsResponse(tuple(results))

    # ------------------------------------------------------------------ coordinator movement

    def _resign(self, partition: int, out: list[CoordinatorOutput]) -> None:
        """onResignation/onGroupUnloaded: waiting JoinGroup and SyncGroup requests get NOT_COORDINATOR."""
        if self.partitions is None:  # led every partition: now all but this one
            self.partitions = {p: PartitionStatus.LOADED for p in range(self.config.offsets_topic_num_partitions)}
        self.partitions.pop(partition, None)
        for group_id, group in list(self.groups.items()):
            if group.partition != partition:
                continue
            for member in group.members.values():
                responses: list[tuple[str | None, GroupResponse]] = [
                    (member.join_connection, JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=member.member_id)),
                    (member.sync_connection, SyncGroupResponse(ErrorCode.NOT_COORDINATOR))]
                for connection, response in responses:
                    if connection is not None:
                        out.append(Respond(connection, response))
                group.set_join_connection(member, None)
                member.sync_connection = None
            group.transition(GroupState.DEAD)
            del self.groups[group_id]

    def _load(self, partition: int, records: tuple[PersistedRecord, ...], now: int,
              out: list[CoordinatorOutput]) -> None:
        """Rebuild the partition's groups from their records (last one wins), then onGroupLoaded:
        every member's session restarts now; a group over capacity rebalances."""
        if self.partitions is not None:
            self.partitions[partition] = PartitionStatus.LOADED
        metadata: dict[str, GroupMetadataRecord | None] = {}
        offsets: dict[str, dict[str, int]] = {}
        for record in records:
            match record:
                case GroupMetadataRecord():
                    metadata[record.group_id] = record
                case OffsetCommitRecord():
                    committed = offsets.setdefault(record.group_id, {})
                    for entry in record.offsets:
                        committed[entry.partition] = entry.offset
                case GroupTombstone():
                    metadata[record.group_id] = None
                    offsets.pop(record.group_id, None)
                case _:
                    assert_never(record)
        for group_id in sorted(set(metadata) | set(offsets)):
            stored = metadata.get(group_id)
            if stored is None and group_id in metadata:
                continue  # deleted
            group = self._new_group(group_id)
            group.offsets = offsets.get(group_id, {})
            if stored is None:
                continue
            group.generation = stored.generation
            group.protocol_type = stored.protocol_type
            if not stored.members:
                continue
            group.protocol_name = stored.protocol_name
            group.leader = stored.leader
            group.state = GroupState.STABLE  # the loaded form of a group with members
            for persisted in stored.members:
                protocol = JoinGroupRequestProtocol(stored.protocol_name or "", persisted.subscription)
                member = MemberMetadata(
                    member_id=persisted.member_id, group_instance_id=persisted.group_instance_id,
                    client_id=persisted.client_id, session_timeout_ms=persisted.session_timeout_ms,
                    rebalance_timeout_ms=persisted.rebalance_timeout_ms, protocols=(protocol,),
                    assignment=persisted.assignment)
                group.add_member(member)
                if member.group_instance_id is not None:
                    group.static_members[member.group_instance_id] = member.member_id
                self._arm_session(group, member, now, out)
            if len(group.members) > self.config.group_max_size:
                self._prepare_rebalance(
                    group, f"Freshly-loaded group is over capacity ({self.config.group_max_size}). "
                    "Rebalancing in order to give a chance for consumers to commit offsets", now, out)


__all__ = ["CONSUMER_PROTOCOL_TYPE", "NO_GENERATION", "GroupCoordinator"]
