"""The broker-side group coordinator (Kafka's classic GroupCoordinator), sans-I/O.

``GroupCoordinator.handle(connection, request, now)`` and ``on_timer(key, now)`` return an
``Output``: responses addressed to connections, timers to arm (``(deadline_ms, key)``; a timer
that fires after the state moved on is ignored, so callers never cancel), and log records
(dicts that ``logformat.format_record`` prints in Kafka's format). A response may go to a
connection other than the caller's: JoinGroup responses are held until the join phase
completes and followers' SyncGroup responses until the leader's assignment arrives.

Choices where Kafka has no defined behaviour (documented here, deterministic):
- Strategy vote ties: ``kafka_rebalance.assignors.select_strategy`` (first member's preference).
- Member ids use ``uuid4`` drawn from a ``random.Random(seed)``, so a seed fixes them.
- Members removed because they did not rejoin before the rebalance timeout, or did not send
  SyncGroup in time, are logged with the "has failed" line (Kafka 2.x logs a summary line
  instead; the parse-back stays one line per member this way).
- Coordinator failover: the new coordinator loads the group (generation, members, offsets) as
  Kafka does, then starts a rebalance (reason ``coordinator failover``), as kafka-facts.md
  describes; members' sessions restart at the load time.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kafka_rebalance.assignors import select_strategy
from kafka_rebalance.protocol.messages import (
    NO_GENERATION,
    UNKNOWN_MEMBER,
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Subscription,
    SyncGroupRequest,
    SyncGroupResponse,
)


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Each state and the states it may be entered from (Kafka's ClassicGroupState).
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(RuntimeError):
    """A transition Kafka's state machine does not allow (a bug in the caller or in us)."""


@dataclass(slots=True)
class CoordinatorConfig:
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = 2**31 - 1
    offsets_topic_num_partitions: int = 50
    broker_id: int = 0

    def allows_session_timeout(self, session_timeout_ms: int) -> bool:
        return self.group_min_session_timeout_ms <= session_timeout_ms <= self.group_max_session_timeout_ms


@dataclass(slots=True)
class Output:
    responses: list[tuple[str, Any]] = field(default_factory=list)
    timers: list[tuple[int, tuple]] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[str, ...]
    subscription: Subscription
    session_deadline: int = 0
    timer_armed: bool = False
    join_connection: str | None = None  # awaiting a JoinGroup response
    sync_connection: str | None = None  # awaiting a SyncGroup response
    assignment: tuple[str, ...] = ()
    connection: str = ""


def coordinator_partition(group_id: str, num_partitions: int = 50) -> int:
    """abs(String.hashCode(group.id)) % offsets.topic.num.partitions; abs(MIN_VALUE) is 0 as in Kafka's Utils.abs."""
    from kafka_rebalance.model import java_string_hash

    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


class GroupCoordinator:
    """One consumer group on its coordinator broker."""

    def __init__(self, group_id: str, config: CoordinatorConfig | None = None, seed: int = 0):
        self.group_id = group_id
        self.config = config or CoordinatorConfig()
        self.partition = coordinator_partition(group_id, self.config.offsets_topic_num_partitions)
        self.state = GroupState.EMPTY
        self.generation = 0
        self.protocol_name: str | None = None
        self.leader: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.pending_members: set[str] = set()
        self.static_members: dict[str, str] = {}
        self.pending_sync: set[str] = set()
        self.offsets: dict[str, int] = {}
        self.offset_regressions = 0
        self._rng = random.Random(seed)
        self._join_epoch = 0
        self._in_initial_delay = False
        self._new_member_joined = False
        self._initial_remaining_ms = 0

    # ------------------------------------------------------------------ state machine core

    def _transition(self, target: GroupState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateTransition(f"group {self.group_id}: {self.state.value} -> {target.value}")
        self.state = target

    def _new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{uuid.UUID(int=self._rng.getrandbits(128), version=4)}"

    def _max_rebalance_timeout(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def _log(self, out: Output, now: int, kind: str, **fields: Any) -> None:
        fields["kind"] = kind
        fields["time_ms"] = now
        out.logs.append(fields)

    def _arm_session(self, member: MemberMetadata, now: int, out: Output) -> None:
        member.session_deadline = now + member.session_timeout_ms
        if not member.timer_armed:
            member.timer_armed = True
            out.timers.append((member.session_deadline, ("session", member.member_id)))

    # ------------------------------------------------------------------ entry points

    def handle(self, connection: str, request: Any, now: int) -> Output:
        out = Output()
        if isinstance(request, HeartbeatRequest):
            out.responses.append((connection, HeartbeatResponse(self._heartbeat(request, now, out))))
        elif isinstance(request, JoinGroupRequest):
            self._join(connection, request, now, out)
        elif isinstance(request, SyncGroupRequest):
            self._sync(connection, request, now, out)
        elif isinstance(request, LeaveGroupRequest):
            out.responses.append((connection, LeaveGroupResponse(self._leave(request, now, out))))
        elif isinstance(request, OffsetCommitRequest):
            out.responses.append((connection, self._commit(request, now, out)))
        elif isinstance(request, OffsetFetchRequest):
            out.responses.append((connection, self._fetch(request)))
        else:
            raise TypeError(f"not a group request: {type(request).__name__}")
        return out

    def on_timer(self, key: tuple, now: int) -> Output:
        out = Output()
        kind = key[0]
        if self.state is GroupState.DEAD:
            return out
        if kind == "session":
            self._session_timer(key[1], now, out)
        elif kind == "join" and key[1] == self._join_epoch and self.state is GroupState.PREPARING_REBALANCE:
            self._complete_join(now, out)
        elif kind == "initial" and key[1] == self._join_epoch and self.state is GroupState.PREPARING_REBALANCE:
            self._initial_delay_expired(now, out)
        elif kind == "sync" and key[1] == self.generation:
            self._sync_expired(now, out)
        elif kind == "pending" and key[1] in self.pending_members:
            self.pending_members.discard(key[1])
            self._maybe_complete_join(now, out)
        return out

    # ------------------------------------------------------------------ rebalance phases

    def _prepare_rebalance(self, reason: str, now: int, out: Output) -> None:
        if self.state is GroupState.COMPLETING_REBALANCE:
            for member in self.members.values():
                if member.sync_connection is not None:
                    out.responses.append((member.sync_connection, SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)))
                    member.sync_connection = None
        self.pending_sync.clear()
        old_state = self.state
        self._join_epoch += 1
        if old_state is GroupState.EMPTY:
            delay = self.config.group_initial_rebalance_delay_ms
            self._in_initial_delay = True
            self._new_member_joined = False
            self._initial_remaining_ms = max(self._max_rebalance_timeout() - delay, 0)
            out.timers.append((now + delay, ("initial", self._join_epoch)))
        else:
            self._in_initial_delay = False
            out.timers.append((now + self._max_rebalance_timeout(), ("join", self._join_epoch)))
        self._transition(GroupState.PREPARING_REBALANCE)
        self._log(out, now, "preparing_rebalance", state=old_state.value, old_generation=self.generation, reason=reason)

    def _maybe_prepare_rebalance(self, reason: str, now: int, out: Output) -> None:
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(reason, now, out)

    def _all_joined(self) -> bool:
        return not self.pending_members and all(m.join_connection is not None for m in self.members.values())

    def _maybe_complete_join(self, now: int, out: Output) -> None:
        if self.state is GroupState.PREPARING_REBALANCE and not self._in_initial_delay and self._all_joined():
            self._complete_join(now, out)

    def _initial_delay_expired(self, now: int, out: Output) -> None:
        if self._new_member_joined and self._initial_remaining_ms > 0:
            delay = min(self.config.group_initial_rebalance_delay_ms, self._initial_remaining_ms)
            self._initial_remaining_ms = max(self._initial_remaining_ms - self.config.group_initial_rebalance_delay_ms, 0)
            self._new_member_joined = False
            out.timers.append((now + delay, ("initial", self._join_epoch)))
            return
        self._in_initial_delay = False
        self._complete_join(now, out)

    def _complete_join(self, now: int, out: Output) -> None:
        for member in list(self.members.values()):
            if member.join_connection is None and member.group_instance_id is None:
                self._log(out, now, "member_failed", member=member.member_id)
                self._remove_member(member.member_id, out)
        self.pending_members.clear()
        joined = [m for m in self.members.values() if m.join_connection is not None]
        self._in_initial_delay = False
        if not self.members:
            self.generation += 1
            self.protocol_name = None
            self.leader = None
            self._transition(GroupState.EMPTY)
            self._log(out, now, "group_empty", generation=self.generation)
            return
        if not joined:
            # Only static members that have not rejoined remain: wait for them another round.
            self._join_epoch += 1
            out.timers.append((now + self._max_rebalance_timeout(), ("join", self._join_epoch)))
            return
        self.generation += 1
        if self.leader is None or self.members[self.leader].join_connection is None:
            self.leader = joined[0].member_id
        self.protocol_name = select_strategy([m.protocols for m in self.members.values()])
        self._transition(GroupState.COMPLETING_REBALANCE)
        self._log(out, now, "stabilized", generation=self.generation, members=len(self.members),
                  member_ids=list(self.members), leader=self.leader, protocol=self.protocol_name)
        everyone = tuple(JoinGroupMember(m.member_id, m.group_instance_id, m.subscription) for m in self.members.values())
        for member in joined:
            is_leader = member.member_id == self.leader
            out.responses.append((member.join_connection, JoinGroupResponse(
                Errors.NONE, self.generation, self.protocol_name, self.leader, member.member_id,
                everyone if is_leader else ())))
            member.join_connection = None
            self._arm_session(member, now, out)
        self.pending_sync = set(self.members)
        out.timers.append((now + self._max_rebalance_timeout(), ("sync", self.generation)))

    def _sync_expired(self, now: int, out: Output) -> None:
        if self.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or not self.pending_sync:
            return
        for member_id in [m for m in self.members if m in self.pending_sync]:
            self._log(out, now, "member_failed", member=member_id)
            self._remove_member(member_id, out)
        self.pending_sync.clear()
        self._maybe_prepare_rebalance("removing members who did not send SyncGroup in time", now, out)

    # ------------------------------------------------------------------ membership

    def _add_member(self, connection: str, request: JoinGroupRequest, member_id: str, now: int, out: Output) -> MemberMetadata:
        member = MemberMetadata(
            member_id=member_id, group_instance_id=request.group_instance_id, client_id=request.client_id,
            session_timeout_ms=request.session_timeout_ms, rebalance_timeout_ms=request.rebalance_timeout_ms,
            protocols=request.protocols, subscription=request.subscription, join_connection=connection,
            connection=connection,
        )
        self.members[member_id] = member
        if request.group_instance_id is not None:
            self.static_members[request.group_instance_id] = member_id
        if self.leader is None:
            self.leader = member_id
        self._arm_session(member, now, out)
        if self._in_initial_delay:
            self._new_member_joined = True
        return member

    def _remove_member(self, member_id: str, out: Output) -> None:
        member = self.members.pop(member_id, None)
        self.pending_sync.discard(member_id)
        if member is None:
            self.pending_members.discard(member_id)
            return
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if member.join_connection is not None:
            out.responses.append((member.join_connection, JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id=member_id)))
        if member.sync_connection is not None:
            out.responses.append((member.sync_connection, SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID)))
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)

    def _remove_and_update(self, member_id: str, reason: str, now: int, out: Output) -> None:
        self._remove_member(member_id, out)
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(reason, now, out)
        elif self.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(now, out)

    def _session_timer(self, member_id: str, now: int, out: Output) -> None:
        member = self.members.get(member_id)
        if member is None:
            return
        member.timer_armed = False
        awaiting = member.join_connection is not None or member.sync_connection is not None
        if awaiting or member.session_deadline > now:
            # Kafka keeps members alive while they wait for a join or sync response.
            deadline = now + member.session_timeout_ms if awaiting else member.session_deadline
            member.session_deadline = deadline
            member.timer_armed = True
            out.timers.append((deadline, ("session", member_id)))
            return
        self._log(out, now, "member_failed", member=member_id)
        self._remove_and_update(member_id, f"removing member {member_id} on heartbeat expiration", now, out)

    # ------------------------------------------------------------------ requests

    def _join(self, connection: str, req: JoinGroupRequest, now: int, out: Output) -> None:
        def reply(error: Errors, member_id: str = req.member_id) -> None:
            out.responses.append((connection, JoinGroupResponse(error, member_id=member_id)))

        if self.state is GroupState.DEAD:
            return reply(Errors.COORDINATOR_NOT_AVAILABLE)
        cfg = self.config
        if not cfg.allows_session_timeout(req.session_timeout_ms):
            return reply(Errors.INVALID_SESSION_TIMEOUT)
        if self.members and not self._supports(req.protocols):
            return reply(Errors.INCONSISTENT_GROUP_PROTOCOL)
        instance = req.group_instance_id
        if req.member_id == UNKNOWN_MEMBER:
            if instance is not None and instance in self.static_members:
                return self._replace_static_member(connection, req, now, out)
            if len(self.members) + len(self.pending_members) >= cfg.group_max_size:
                return reply(Errors.GROUP_MAX_SIZE_REACHED)
            new_id = self._new_member_id(instance if instance is not None else req.client_id)
            if instance is None:
                # KIP-394: a dynamic member first learns its id, then joins with it.
                self.pending_members.add(new_id)
                # Kafka expires a pending member after its session timeout, so a client that
                # dies before its second JoinGroup does not hold the join phase until the
                # rebalance timeout.
                out.timers.append((now + req.session_timeout_ms, ("pending", new_id)))
                return reply(Errors.MEMBER_ID_REQUIRED, new_id)
            self._add_member(connection, req, new_id, now, out)
            return self._after_new_member(new_id, now, out)
        if instance is not None and self.static_members.get(instance) not in (None, req.member_id):
            return reply(Errors.FENCED_INSTANCE_ID)
        if req.member_id in self.pending_members:
            self.pending_members.discard(req.member_id)
            self._add_member(connection, req, req.member_id, now, out)
            return self._after_new_member(req.member_id, now, out)
        member = self.members.get(req.member_id)
        if member is None:
            return reply(Errors.UNKNOWN_MEMBER_ID)
        # Kafka compares the whole protocol metadata, owned partitions included: that is what makes
        # a cooperative member's rejoin after revoking start the follow-up rebalance.
        changed = (member.protocols != req.protocols or member.subscription.topics != req.subscription.topics
                   or member.subscription.owned != req.subscription.owned)
        member.protocols, member.subscription = req.protocols, req.subscription
        member.session_timeout_ms, member.rebalance_timeout_ms = req.session_timeout_ms, req.rebalance_timeout_ms
        member.join_connection = connection
        member.connection = connection
        if self.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(now, out)
        elif self.state is GroupState.COMPLETING_REBALANCE:
            if changed:
                self._prepare_rebalance(f"updating metadata for member {req.member_id} during CompletingRebalance", now, out)
            else:
                # It likely missed its JoinGroup response: answer it again, and the leader again
                # gets the member list it needs to compute the assignment (as Kafka does).
                self._reply_current_generation(member, out, with_members=member.member_id == self.leader)
        elif self.state is GroupState.STABLE:
            if changed or req.member_id == self.leader:
                why = "leader" if not changed else "member"
                reason = (f"Updating metadata for {why} {req.member_id} during Stable"
                          + (f"; client reason: {req.reason}" if req.reason else ""))
                self._prepare_rebalance(reason, now, out)
            else:
                self._reply_current_generation(member, out)

    def _after_new_member(self, member_id: str, now: int, out: Output) -> None:
        member = self.members[member_id]
        if self.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(now, out)
        else:
            instance = f"Some({member.group_instance_id})" if member.group_instance_id else "None"
            self._prepare_rebalance(f"Adding new member {member_id} with group instance id {instance}", now, out)

    def _reply_current_generation(self, member: MemberMetadata, out: Output, with_members: bool = False) -> None:
        everyone = tuple(JoinGroupMember(m.member_id, m.group_instance_id, m.subscription) for m in self.members.values())
        out.responses.append((member.join_connection, JoinGroupResponse(
            Errors.NONE, self.generation, self.protocol_name, self.leader or UNKNOWN_MEMBER, member.member_id,
            everyone if with_members else ())))
        member.join_connection = None

    def _replace_static_member(self, connection: str, req: JoinGroupRequest, now: int, out: Output) -> None:
        instance = req.group_instance_id
        assert instance is not None
        old_id = self.static_members[instance]
        old = self.members[old_id]
        new_id = self._new_member_id(instance)
        for waiting in (old.join_connection, old.sync_connection):
            if waiting is not None:
                response = JoinGroupResponse(Errors.FENCED_INSTANCE_ID) if waiting == old.join_connection else \
                    SyncGroupResponse(Errors.FENCED_INSTANCE_ID)
                out.responses.append((waiting, response))
        changed = old.protocols != req.protocols or old.subscription.topics != req.subscription.topics
        replacement = MemberMetadata(
            member_id=new_id, group_instance_id=instance, client_id=req.client_id,
            session_timeout_ms=req.session_timeout_ms, rebalance_timeout_ms=req.rebalance_timeout_ms,
            protocols=req.protocols, subscription=req.subscription, assignment=old.assignment, connection=connection,
        )
        # Keep the member's place in join order (the leader choice and the assignors' order depend on it).
        self.members = {(new_id if k == old_id else k): (replacement if k == old_id else v) for k, v in self.members.items()}
        self.static_members[instance] = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        if self.leader == old_id:
            self.leader = new_id
        self._arm_session(replacement, now, out)
        replacement.join_connection = connection
        if self.state is GroupState.STABLE and not changed:
            # KIP-345: a known static member coming back with the same metadata causes no rebalance.
            self._reply_current_generation(replacement, out)
        elif self.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(now, out)
        else:
            self._prepare_rebalance(f"Updating metadata for static member {new_id} (instance {instance})", now, out)

    def _supports(self, protocols: tuple[str, ...]) -> bool:
        common = set(protocols)
        for member in self.members.values():
            common &= set(member.protocols)
        return bool(common)

    def _check_member(self, member_id: str, instance: str | None, generation: int) -> Errors | None:
        member = self.members.get(member_id)
        if instance is not None and self.static_members.get(instance) not in (None, member_id):
            return Errors.FENCED_INSTANCE_ID
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        return None

    def _sync(self, connection: str, req: SyncGroupRequest, now: int, out: Output) -> None:
        def reply(error: Errors) -> None:
            out.responses.append((connection, SyncGroupResponse(error)))

        if self.state is GroupState.DEAD:
            return reply(Errors.COORDINATOR_NOT_AVAILABLE)
        if self.state is GroupState.EMPTY:
            return reply(Errors.UNKNOWN_MEMBER_ID)
        error = self._check_member(req.member_id, req.group_instance_id, req.generation)
        if error is not None:
            return reply(error)
        if req.generation != self.generation:
            return reply(Errors.ILLEGAL_GENERATION)
        member = self.members[req.member_id]
        if self.state is GroupState.PREPARING_REBALANCE:
            return reply(Errors.REBALANCE_IN_PROGRESS)
        self.pending_sync.discard(req.member_id)
        self._arm_session(member, now, out)
        if self.state is GroupState.STABLE:
            out.responses.append((connection, SyncGroupResponse(Errors.NONE, member.assignment, self.protocol_name)))
            return
        member.sync_connection = connection
        if req.member_id != self.leader:
            return
        assignments = req.assignments
        for member_id, m in self.members.items():
            m.assignment = tuple(assignments.get(member_id, ()))
        static = sum(1 for m in self.members.values() if m.group_instance_id is not None)
        self._log(out, now, "assignment_received", generation=self.generation, leader=self.leader,
                  members=len(self.members), static_members=static,
                  assignment={mid: list(m.assignment) for mid, m in self.members.items()})
        self._transition(GroupState.STABLE)
        for m in self.members.values():
            if m.sync_connection is not None:
                out.responses.append((m.sync_connection, SyncGroupResponse(Errors.NONE, m.assignment, self.protocol_name)))
                m.sync_connection = None
                self._arm_session(m, now, out)

    def _heartbeat(self, req: HeartbeatRequest, now: int, out: Output) -> Errors:
        state = self.state
        if state is GroupState.DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if state is GroupState.EMPTY:
            return Errors.UNKNOWN_MEMBER_ID
        error = self._check_member(req.member_id, req.group_instance_id, req.generation)
        if error is not None:
            return error
        member = self.members[req.member_id]
        if state is GroupState.PREPARING_REBALANCE:
            self._arm_session(member, now, out)
            return Errors.REBALANCE_IN_PROGRESS
        if req.generation != self.generation:
            return Errors.ILLEGAL_GENERATION
        self._arm_session(member, now, out)
        return Errors.NONE

    def _leave(self, req: LeaveGroupRequest, now: int, out: Output) -> Errors:
        if self.state is GroupState.DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if req.member_id in self.pending_members:
            self.pending_members.discard(req.member_id)
            self._maybe_complete_join(now, out)
            return Errors.NONE
        error = self._check_member(req.member_id, req.group_instance_id, NO_GENERATION)
        if error is not None:
            return error
        self._log(out, now, "member_left", member=req.member_id, reason=req.reason)
        self._remove_and_update(req.member_id, f"removing member {req.member_id} on LeaveGroup; client reason: {req.reason}",
                                now, out)
        return Errors.NONE

    def _commit(self, req: OffsetCommitRequest, now: int, out: Output) -> OffsetCommitResponse:
        state = self.state
        if state is GroupState.DEAD:
            return OffsetCommitResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        if req.generation < 0 and state is GroupState.EMPTY:
            self._store_offsets(req.offsets)  # a commit from outside group management
            return OffsetCommitResponse(Errors.NONE, dict(req.offsets))
        if state is GroupState.COMPLETING_REBALANCE:
            return OffsetCommitResponse(Errors.REBALANCE_IN_PROGRESS)
        error = self._check_member(req.member_id, req.group_instance_id, req.generation)
        if error is not None:
            return OffsetCommitResponse(error)
        if req.generation != self.generation:
            return OffsetCommitResponse(Errors.ILLEGAL_GENERATION)
        if state is GroupState.STABLE:
            self._arm_session(self.members[req.member_id], now, out)
        self._store_offsets(req.offsets)
        return OffsetCommitResponse(Errors.NONE, dict(req.offsets))

    def _store_offsets(self, offsets: dict[str, int]) -> None:
        stored = self.offsets
        for partition, offset in offsets.items():
            if offset < stored.get(partition, -1):
                self.offset_regressions += 1
            stored[partition] = offset

    def _fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        if self.state is GroupState.DEAD:
            return OffsetFetchResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        return OffsetFetchResponse(Errors.NONE, {p: self.offsets.get(p, -1) for p in req.partitions})

    # ------------------------------------------------------------------ failover

    def unload(self, now: int) -> Output:
        """This broker stops being the coordinator: waiting requests are told so, state -> Dead."""
        out = Output()
        for member in self.members.values():
            for waiting in (member.join_connection, member.sync_connection):
                if waiting is not None:
                    cls = JoinGroupResponse if waiting == member.join_connection else SyncGroupResponse
                    out.responses.append((waiting, cls(Errors.NOT_COORDINATOR)))
            member.join_connection = member.sync_connection = None
        self._transition(GroupState.DEAD)
        return out

    @classmethod
    def load(cls, previous: GroupCoordinator, now: int, broker_id: int, seed: int = 0) -> tuple[GroupCoordinator, Output]:
        """The new coordinator reads the group (generation, members, assignment, offsets) back from
        ``__consumer_offsets`` and starts a rebalance (members' sessions restart now)."""
        config = CoordinatorConfig(**{name: getattr(previous.config, name) for name in CoordinatorConfig.__slots__})
        config.broker_id = broker_id
        group = cls(previous.group_id, config, seed)
        group.generation = previous.generation
        group.offsets = dict(previous.offsets)
        out = Output()
        if not previous.members:
            return group, out
        group.protocol_name = previous.protocol_name
        group.leader = previous.leader
        group.static_members = dict(previous.static_members)
        group.state = GroupState.STABLE  # loaded form of a group with members
        for member_id, old in previous.members.items():
            member = MemberMetadata(
                member_id=member_id, group_instance_id=old.group_instance_id, client_id=old.client_id,
                session_timeout_ms=old.session_timeout_ms, rebalance_timeout_ms=old.rebalance_timeout_ms,
                protocols=old.protocols, subscription=old.subscription, assignment=old.assignment,
                connection=old.connection,
            )
            group.members[member_id] = member
            group._arm_session(member, now, out)
        group._prepare_rebalance("coordinator failover: group loaded by a new coordinator", now, out)
        return group, out
