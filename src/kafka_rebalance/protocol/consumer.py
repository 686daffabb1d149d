"""The client-side consumer coordinator (Kafka's ConsumerCoordinator), sans-I/O.

Inputs: ``poll(now)`` (the application called ``KafkaConsumer.poll``), ``on_response``,
``on_timer``, ``on_metadata``, ``subscribe``, ``close``. Each returns a ``ConsumerOutput`` with
requests for the group coordinator, listener callbacks as events
(``("revoked", parts)``, ``("assigned", parts)``, ``("lost", parts)``,
``("positions", {part: committed offset})`` once committed offsets are fetched,
``("left", reason)``, ``("fatal", error)``) and timers to arm.

The application state the client needs (consumed positions, for commits) comes from a
``positions`` callable the owner supplies: a pure function of the caller's state, not I/O.

Where the Java client is multi-threaded (KIP-62: a heartbeat thread next to the poll loop),
``background_heartbeat=True`` lets heartbeats and the poll-timeout check run on timers at any
time, while joining only ever starts from ``poll``. With ``background_heartbeat=False``
(kafka-python < 1.4), heartbeats only go out from ``poll`` and there is no poll timeout; the
rebalance timeout is then the session timeout (JoinGroup v0).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.assignors.api import assign
from kafka_rebalance.model import InvalidInput, RebalanceProtocol
from kafka_rebalance.protocol.messages import (
    NO_GENERATION,
    UNKNOWN_MEMBER,
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
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


class MemberState(StrEnum):
    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # JoinGroup in flight
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # SyncGroup in flight
    STABLE = "STABLE"


def rebalance_protocol(strategies: tuple[str, ...]) -> RebalanceProtocol:
    """Kafka's choice: the highest protocol every configured assignor supports."""
    common: set[RebalanceProtocol] | None = None
    for name in strategies:
        supported = set(get_assignor(name).supported_protocols)
        common = supported if common is None else common & supported
    if not common:
        raise InvalidInput("strategies", f"the assignors {list(strategies)} support no common rebalance protocol")
    return max(common, key=lambda p: p.rank)


def partition_topic(partition: str) -> str:
    return partition.rpartition("-")[0]


def partition_sort_key(partition: str) -> tuple[str, int]:
    topic, _, number = partition.rpartition("-")
    return topic, int(number)


def sorted_partitions(parts) -> list[str]:
    return sorted(parts, key=partition_sort_key)


@dataclass(slots=True)
class ConsumerConfig:
    client_id: str
    group_id: str
    strategies: tuple[str, ...]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    group_instance_id: str | None = None
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    background_heartbeat: bool = True
    retry_backoff_ms: int = 100


@dataclass(slots=True)
class ConsumerOutput:
    requests: list[Any] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)
    timers: list[tuple[int, tuple]] = field(default_factory=list)


class ConsumerCoordinator:
    def __init__(self, config: ConsumerConfig, positions: Callable[[int], dict[str, int]] | None = None):
        self.config = config
        self.protocol = rebalance_protocol(config.strategies)
        # One assignor instance per configured strategy: some keep state between rebalances
        # (StickyAssignor remembers its last assignment for its user data).
        self.assignors = {name: get_assignor(name) for name in config.strategies}
        self._pattern = re.compile(config.pattern) if config.pattern else None
        self.positions = positions or (lambda now: {})
        self.state = MemberState.UNJOINED
        self.member_id = UNKNOWN_MEMBER
        self.generation = NO_GENERATION
        self.leader: str | None = None
        self.protocol_name: str | None = None
        self.owned: set[str] = set()
        self.metadata: dict[str, int] = {}
        self.subscribed: tuple[str, ...] = tuple(config.topics)
        self._joined_subscription: tuple[str, ...] | None = None
        self._assignment_metadata: dict[str, int] | None = None  # leader: partition counts it assigned from
        self.rejoin_needed = True
        self.rejoin_reason = "initial join"
        self.app_in_poll = True
        self.fatal: str | None = None
        self._commit_before_join = False
        self._heartbeat_epoch = 0
        self._heartbeat_due = False
        self._poll_epoch = 0
        self._poll_timer_armed = False
        self.last_poll_ms = 0
        self.next_auto_commit_ms = 0
        self.closed = False

    # ------------------------------------------------------------------ helpers

    @property
    def rebalance_timeout_ms(self) -> int:
        c = self.config
        return c.max_poll_interval_ms if c.background_heartbeat else c.session_timeout_ms

    @property
    def is_static(self) -> bool:
        return self.config.group_instance_id is not None

    def _request_rejoin(self, reason: str) -> None:
        if not self.rejoin_needed:
            self.rejoin_needed = True
            self.rejoin_reason = reason

    def _reset_generation(self, reset_member_id: bool) -> None:
        self.generation = NO_GENERATION
        if reset_member_id:
            self.member_id = UNKNOWN_MEMBER
        self.state = MemberState.UNJOINED
        self._heartbeat_epoch += 1

    def _start_heartbeats(self, now: int, out: ConsumerOutput) -> None:
        self._heartbeat_epoch += 1
        self._heartbeat_due = False
        out.timers.append((now + self.config.heartbeat_interval_ms, ("heartbeat", self._heartbeat_epoch)))

    def _heartbeat_request(self) -> HeartbeatRequest:
        return HeartbeatRequest(self.config.group_id, self.member_id, self.generation, self.config.group_instance_id)

    def _resolve_subscription(self) -> tuple[str, ...]:
        if self._pattern is None:
            return tuple(sorted(self.config.topics))
        return tuple(sorted(t for t in self.metadata if self._pattern.fullmatch(t)))

    # ------------------------------------------------------------------ application inputs

    @property
    def ready_to_join(self) -> bool:
        """A rejoin is wanted and nothing stands in its way (not mid-rebalance, no commit before
        the join still under way)."""
        return (self.rejoin_needed and self.state in (MemberState.UNJOINED, MemberState.STABLE)
                and not self._commit_before_join)

    def poll(self, now: int) -> ConsumerOutput:
        """The application entered poll(): heartbeat (old clients), auto-commit, (re)join."""
        out = ConsumerOutput()
        if self.closed or self.fatal:
            return out
        self.last_poll_ms = now
        if self.config.background_heartbeat:
            if not self._poll_timer_armed:
                # One timer at a time; when it fires early (poll was called since) it re-arms.
                self._poll_timer_armed = True
                out.timers.append((now + self.config.max_poll_interval_ms, ("poll_timeout", self._poll_epoch)))
        elif self._heartbeat_due and self.state in (MemberState.STABLE, MemberState.COMPLETING_REBALANCE):
            out.requests.append(self._heartbeat_request())
            self._start_heartbeats(now, out)
        if self._joined_subscription is not None and self._joined_subscription != self.subscribed:
            self._request_rejoin("subscription changed")
        if self.ready_to_join:
            self._prepare_join(now, out)
        elif self.state is MemberState.STABLE and self.config.enable_auto_commit and now >= self.next_auto_commit_ms:
            self._auto_commit(now, out)
        return out

    def _auto_commit(self, now: int, out: ConsumerOutput) -> None:
        self.next_auto_commit_ms = now + self.config.auto_commit_interval_ms
        request = self.commit_request(now)
        if request is not None:
            out.requests.append(request)

    def commit_request(self, now: int, offsets: dict[str, int] | None = None) -> OffsetCommitRequest | None:
        """An OffsetCommit of the consumed positions of owned partitions (None if nothing to commit)."""
        if self.generation == NO_GENERATION or not self.owned:
            return None
        if offsets is None:
            offsets = self.positions(now)
        offsets = {p: o for p, o in offsets.items() if p in self.owned}
        if not offsets:
            return None
        return OffsetCommitRequest(self.config.group_id, self.member_id, self.generation, offsets,
                                   self.config.group_instance_id)

    def _prepare_join(self, now: int, out: ConsumerOutput) -> None:
        if self.config.enable_auto_commit and self.generation != NO_GENERATION and self.owned:
            request = self.commit_request(now)
            if request is not None:
                # Java commits synchronously before rejoining; the join waits for the answer.
                self._commit_before_join = True
                out.requests.append(request)
                return
        self._send_join(now, out)

    def _send_join(self, now: int, out: ConsumerOutput) -> None:
        self.subscribed = self._resolve_subscription()
        if self.generation == NO_GENERATION and self.owned:
            out.events.append(("lost", sorted_partitions(self.owned)))
            self.owned = set()
        elif self.protocol is RebalanceProtocol.EAGER and self.owned:
            out.events.append(("revoked", sorted_partitions(self.owned)))
            self.owned = set()
        elif self.owned:
            gone = {p for p in self.owned if partition_topic(p) not in self.subscribed}
            if gone:
                out.events.append(("revoked", sorted_partitions(gone)))
                self.owned -= gone
        self.state = MemberState.PREPARING_REBALANCE
        self._heartbeat_epoch += 1  # the heartbeat thread pauses while joining
        self._joined_subscription = self.subscribed
        out.requests.append(self._join_request())

    def _join_request(self) -> JoinGroupRequest:
        c = self.config
        user_data = tuple(
            (name, data)
            for name, assignor in self.assignors.items()
            if (data := assignor.subscription_user_data(self.subscribed)) is not None
        )
        subscription = Subscription(self.subscribed, tuple(sorted_partitions(self.owned)), self.generation, user_data)
        return JoinGroupRequest(c.group_id, self.member_id, c.session_timeout_ms, self.rebalance_timeout_ms,
                                c.strategies, subscription, c.group_instance_id, c.client_id, self.rejoin_reason)

    def subscribe(self, topics: tuple[str, ...] = (), pattern: str | None = None) -> None:
        self.config.topics = tuple(topics)
        self.config.pattern = pattern
        self._pattern = re.compile(pattern) if pattern else None
        self.subscribed = self._resolve_subscription()

    def on_metadata(self, topics: dict[str, int], now: int) -> ConsumerOutput:
        """A metadata refresh: new topics for a pattern, partition count changes (leader)."""
        self.metadata = dict(topics)
        self.subscribed = self._resolve_subscription()
        if self._joined_subscription is not None and self._joined_subscription != self.subscribed:
            self._request_rejoin("subscribed topics changed")
        snapshot = self._assignment_metadata
        if snapshot is not None and any(topics.get(t) != n for t, n in snapshot.items()):
            self._request_rejoin("partition count of a subscribed topic changed")
        return ConsumerOutput()

    def close(self, now: int) -> ConsumerOutput:
        """KafkaConsumer.close(): commit, revoke, and (dynamic members only) LeaveGroup."""
        out = ConsumerOutput()
        if self.closed:
            return out
        if self.config.enable_auto_commit:
            request = self.commit_request(now)
            if request is not None:
                out.requests.append(request)
        if self.owned:
            out.events.append(("revoked", sorted_partitions(self.owned)))
            self.owned = set()
        if not self.is_static and self.member_id != UNKNOWN_MEMBER and self.generation != NO_GENERATION:
            out.requests.append(LeaveGroupRequest(self.config.group_id, self.member_id, None,
                                                  "the consumer is being closed"))
        self.closed = True
        self._heartbeat_epoch += 1
        self._poll_epoch += 1
        self._poll_timer_armed = False
        return out

    # ------------------------------------------------------------------ timers

    def on_timer(self, key: tuple, now: int) -> ConsumerOutput:
        out = ConsumerOutput()
        if self.closed or self.fatal:
            return out
        kind = key[0]
        if kind == "heartbeat" and key[1] == self._heartbeat_epoch:
            if self.state in (MemberState.STABLE, MemberState.COMPLETING_REBALANCE):
                if self.config.background_heartbeat or self.app_in_poll:
                    out.requests.append(self._heartbeat_request())
                    out.timers.append((now + self.config.heartbeat_interval_ms, ("heartbeat", self._heartbeat_epoch)))
                else:
                    self._heartbeat_due = True
        elif kind == "poll_timeout" and key[1] == self._poll_epoch and self.config.background_heartbeat:
            self._poll_timer_armed = False
            deadline = self.last_poll_ms + self.config.max_poll_interval_ms
            if self.app_in_poll or deadline > now:
                self._poll_timer_armed = True
                out.timers.append((max(deadline, now + 1), ("poll_timeout", self._poll_epoch)))
            else:
                self._poll_timeout(now, out)
        elif kind == "retry_join" and self.app_in_poll and self.ready_to_join:
            self._prepare_join(now, out)
        return out

    def _poll_timeout(self, now: int, out: ConsumerOutput) -> None:
        reason = ("consumer poll timeout has expired. This means the time between subsequent calls to poll() "
                  "was longer than the configured max.poll.interval.ms")
        if self.owned:
            out.events.append(("revoked", sorted_partitions(self.owned)))
            self.owned = set()
        if not self.is_static and self.member_id != UNKNOWN_MEMBER and self.state is not MemberState.UNJOINED:
            out.requests.append(LeaveGroupRequest(self.config.group_id, self.member_id, None, reason))
        out.events.append(("left", "poll timeout"))
        self._reset_generation(reset_member_id=True)
        self.rejoin_needed = True
        self.rejoin_reason = "rejoining after the poll timeout"

    # ------------------------------------------------------------------ responses

    def on_response(self, response: Any, now: int) -> ConsumerOutput:
        out = ConsumerOutput()
        if self.closed or self.fatal:
            return out
        if isinstance(response, HeartbeatResponse):
            self._on_heartbeat(response, now, out)
        elif isinstance(response, JoinGroupResponse):
            self._on_join(response, now, out)
        elif isinstance(response, SyncGroupResponse):
            self._on_sync(response, now, out)
        elif isinstance(response, OffsetCommitResponse):
            if self._commit_before_join:
                self._commit_before_join = False
                if self.ready_to_join:
                    self._send_join(now, out)
        elif isinstance(response, OffsetFetchResponse):
            if response.error is Errors.NONE:
                fetched = {p: o for p, o in response.offsets.items() if p in self.owned}
                out.events.append(("positions", fetched))
            else:
                out.timers.append((now + self.config.retry_backoff_ms, ("retry_fetch",)))
        elif isinstance(response, LeaveGroupResponse):
            pass
        return out

    def _on_heartbeat(self, response: HeartbeatResponse, now: int, out: ConsumerOutput) -> None:
        error = response.error
        if error is Errors.NONE:
            return
        if error is Errors.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self._request_rejoin("group is rebalancing")
        elif error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            if self.state in (MemberState.STABLE, MemberState.COMPLETING_REBALANCE):
                self._reset_generation(reset_member_id=error is Errors.UNKNOWN_MEMBER_ID)
                self._request_rejoin(f"heartbeat failed with {error.name}")
        elif error is Errors.FENCED_INSTANCE_ID:
            self._fatal(error, out)
        # COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR: the owner rediscovers the coordinator;
        # heartbeats go on against the new one.

    def _fatal(self, error: Errors, out: ConsumerOutput) -> None:
        self.fatal = error.name
        if self.owned:
            out.events.append(("lost", sorted_partitions(self.owned)))
            self.owned = set()
        out.events.append(("fatal", error.name))
        self._reset_generation(reset_member_id=True)

    def _retry_join(self, now: int, out: ConsumerOutput) -> None:
        self.state = MemberState.UNJOINED if self.generation == NO_GENERATION else MemberState.STABLE
        self.rejoin_needed = True
        out.timers.append((now + self.config.retry_backoff_ms, ("retry_join",)))

    def _on_join(self, response: JoinGroupResponse, now: int, out: ConsumerOutput) -> None:
        if self.state is not MemberState.PREPARING_REBALANCE:
            return
        error = response.error
        if error is Errors.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            out.requests.append(self._join_request())
            return
        if error is Errors.UNKNOWN_MEMBER_ID:
            self._reset_generation(reset_member_id=True)
            self._retry_join(now, out)
            return
        if error in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR, Errors.REBALANCE_IN_PROGRESS):
            self._retry_join(now, out)
            return
        if error is not Errors.NONE:
            self._fatal(error, out)
            return
        self.member_id = response.member_id
        self.generation = response.generation
        self.leader = response.leader
        self.protocol_name = response.protocol_name
        self.state = MemberState.COMPLETING_REBALANCE
        assignments: dict[str, tuple[str, ...]] = {}
        if response.leader == self.member_id and response.members:
            assignments = self._run_assignor(response)
        out.requests.append(SyncGroupRequest(self.config.group_id, self.member_id, self.generation,
                                             self.config.group_instance_id, assignments))
        self._start_heartbeats(now, out)

    def _run_assignor(self, response: JoinGroupResponse) -> dict[str, tuple[str, ...]]:
        """The leader assigns with the strategy the coordinator's vote chose, from its metadata."""
        group_topics = sorted({t for m in response.members for t in m.subscription.topics})
        topics = {t: self.metadata[t] for t in group_topics if t in self.metadata}
        assignor = self.assignors.get(response.protocol_name) or get_assignor(response.protocol_name)
        members = []
        for m in response.members:
            owned, generation = assignor.member_data(
                m.subscription.owned, m.subscription.generation, m.subscription.user_data_for(response.protocol_name)
            )
            members.append({"member_id": m.member_id, "topics": list(m.subscription.topics), "owned": owned,
                            "generation": generation, "group_instance_id": m.group_instance_id})
        snapshot = {"strategy": response.protocol_name, "topics": topics, "members": members}
        self._assignment_metadata = topics
        result = assign(snapshot)
        return {member: tuple(parts) for member, parts in result["assignment"].items()}

    def _on_sync(self, response: SyncGroupResponse, now: int, out: ConsumerOutput) -> None:
        if self.state is not MemberState.COMPLETING_REBALANCE:
            return
        error = response.error
        if error is Errors.NONE:
            self.state = MemberState.STABLE
            self.rejoin_needed = False
            assigned = set(response.assignment)
            if self.protocol is RebalanceProtocol.COOPERATIVE:
                revoked = self.owned - assigned
                if revoked:
                    out.events.append(("revoked", sorted_partitions(revoked)))
                    # The follow-up rebalance hands the revoked partitions to their new owners.
                    self._request_rejoin("need to revoke partitions and re-join")
            added = assigned - self.owned
            self.owned = assigned
            chosen = self.assignors.get(self.protocol_name or "")
            if chosen is not None:
                chosen.on_assignment(sorted_partitions(assigned), self.generation)
            out.events.append(("assigned", sorted_partitions(added)))
            if self.leader != self.member_id:
                self._assignment_metadata = None
            self.next_auto_commit_ms = now + self.config.auto_commit_interval_ms
            if added:
                out.requests.append(OffsetFetchRequest(self.config.group_id, tuple(sorted_partitions(added))))
            return
        if error is Errors.REBALANCE_IN_PROGRESS:
            self._retry_join(now, out)
            self.rejoin_reason = "group is rebalancing"
            return
        if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            self._reset_generation(reset_member_id=error is Errors.UNKNOWN_MEMBER_ID)
            self._retry_join(now, out)
            return
        if error in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR):
            self._retry_join(now, out)
            return
        self._fatal(error, out)

    def refetch_positions(self) -> OffsetFetchRequest | None:
        if not self.owned:
            return None
        return OffsetFetchRequest(self.config.group_id, tuple(sorted_partitions(self.owned)))
