"""The client-side consumer coordinator (Kafka's ConsumerCoordinator), sans-I/O.

One entry point: ``ConsumerCoordinator.handle(event, now_ms) -> list[ConsumerOutput]`` with the
closed event types of ``consumer_events``. The application is explicit input (``Poll``,
``PollReturned``, ``AutoCommitDue``, ``Subscribe``, ``MetadataUpdate``, ``Close``); nothing
reaches into the machine. A driver reads its public state (``state``, ``owned``, ``in_poll``,
``wants_poll``...) to decide when the application would call poll again.

Where the Java client is multi-threaded (KIP-62: a heartbeat thread next to the poll loop),
``background_heartbeat=True`` lets heartbeats and the poll-timeout check run on timers at any
time, while joining only ever starts from ``Poll``. With ``background_heartbeat=False``
(kafka-python < 1.4), heartbeats only go out from ``Poll`` and there is no poll timeout; the
rebalance timeout is then the session timeout (JoinGroup v0).

Coordinator discovery: the machine starts with the coordinator node it is given (or none) and
sends FindCoordinator whenever it does not know one: at the start without one, and after a
response says NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (AbstractCoordinator
.markCoordinatorUnknown). Group requests wait until the coordinator is known again.

Request timeouts (``request_timeout_ms`` set: a network that can lose requests or responses).
Every request waits at most ``request.timeout.ms`` for its response; JoinGroup waits
max(request.timeout.ms, rebalance.timeout.ms + 5000) (AbstractCoordinator.sendJoinGroupRequest,
JOIN_GROUP_TIMEOUT_LAPSE). When one times out, NetworkClient.handleTimedOutRequests closes the
connection and every request in flight on it fails with a DisconnectException
(cancelInFlightRequests; ``Disconnect`` tells the driver to drop what is still on the wire); each
handler then marks the coordinator unknown (CoordinatorResponseHandler.onFailure), FindCoordinator
runs again, and the failed request is retried as its own retriable-error path does: JoinGroup and
SyncGroup rejoin after retry.backoff.ms with the member id and generation the member holds (a lost
JoinGroup response leaves a new member without its id: it joins again as a new member), a commit
before the join is made again, OffsetFetch retries after the backoff, FindCoordinator too. Without
``request_timeout_ms`` every request is answered (the driver's network loses nothing) and no
timeout is armed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any, assert_never

import numpy as np

from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.model import (
    ColumnarGroup,
    GroupSnapshot,
    InvalidInput,
    MemberSubscription,
    RebalanceProtocol,
    TopicMetadata,
)
from kafka_rebalance.protocol.classic.consumer_events import (
    ANY_BROKER,
    ApiKey,
    AutoCommitDue,
    Close,
    CommittedOffsetsFetched,
    ConsumerInput,
    ConsumerOutput,
    Disconnect,
    Fatal,
    HeartbeatDue,
    LeftGroup,
    MetadataUpdate,
    PartitionLoadsMeasured,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Poll,
    PollIntervalExpired,
    PollReturned,
    RequestTimedOut,
    ResponseReceived,
    RetryFetch,
    RetryFindCoordinator,
    RetryJoin,
    Send,
    Subscribe,
)
from kafka_rebalance.protocol.classic.coordinator_events import (
    CONSUMER_PROTOCOL_TYPE,
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    ConsumerProtocolSubscription,
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    GroupRequest,
    GroupResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsResponse,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionOffset,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, StateTable
from kafka_rebalance.protocol.errors import ErrorCode


class ClassicMemberState(Enum):
    """The classic consumer's member states (Kafka: AbstractCoordinator.MemberState)."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # JoinGroup in flight
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # SyncGroup in flight
    STABLE = "STABLE"


# Each state and the states it may be entered from. A failed JoinGroup/SyncGroup of a member
# that still has a generation returns it to STABLE (it keeps its partitions and rejoins).
MEMBER_STATES: StateTable[ClassicMemberState] = StateTable("consumer member", {
    ClassicMemberState.UNJOINED: frozenset({ClassicMemberState.PREPARING_REBALANCE, ClassicMemberState.COMPLETING_REBALANCE,
                                     ClassicMemberState.STABLE}),
    ClassicMemberState.PREPARING_REBALANCE: frozenset({ClassicMemberState.UNJOINED, ClassicMemberState.STABLE}),
    ClassicMemberState.COMPLETING_REBALANCE: frozenset({ClassicMemberState.PREPARING_REBALANCE}),
    ClassicMemberState.STABLE: frozenset({ClassicMemberState.COMPLETING_REBALANCE, ClassicMemberState.PREPARING_REBALANCE}),
})

_HEARTBEAT_DUE = HeartbeatDue()
_POLL_INTERVAL_EXPIRED = PollIntervalExpired()
_RETRY_JOIN = RetryJoin()
_RETRY_FETCH = RetryFetch()
_RETRY_FIND_COORDINATOR = RetryFindCoordinator()
_COORDINATOR_GONE = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE)
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000  # AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE
_API_OF: dict[type, ApiKey] = {
    FindCoordinatorRequest: ApiKey.FIND_COORDINATOR, FindCoordinatorResponse: ApiKey.FIND_COORDINATOR,
    JoinGroupRequest: ApiKey.JOIN_GROUP, JoinGroupResponse: ApiKey.JOIN_GROUP,
    SyncGroupRequest: ApiKey.SYNC_GROUP, SyncGroupResponse: ApiKey.SYNC_GROUP,
    HeartbeatRequest: ApiKey.HEARTBEAT, HeartbeatResponse: ApiKey.HEARTBEAT,
    OffsetCommitRequest: ApiKey.OFFSET_COMMIT, OffsetCommitResponse: ApiKey.OFFSET_COMMIT,
    OffsetFetchRequest: ApiKey.OFFSET_FETCH, OffsetFetchResponse: ApiKey.OFFSET_FETCH,
    LeaveGroupRequest: ApiKey.LEAVE_GROUP, LeaveGroupResponse: ApiKey.LEAVE_GROUP,
}
_TIMED_OUT = {api: RequestTimedOut(api) for api in ApiKey}


def rebalance_protocol(strategies: tuple[str, ...]) -> RebalanceProtocol:
    """Kafka's choice: the highest protocol every configured assignor supports."""
    common: set[RebalanceProtocol] | None = None
    for name in strategies:
        supported = set(get_assignor(name).supported_protocols)
        common = supported if common is None else common & supported
    if not common:
        raise InvalidInput("strategies", f"the assignors {list(strategies)} support no common rebalance protocol")
    return max(common, key=lambda p: p.rank)


# Both are asked for every owned partition at every rebalance and commit; the names repeat.
@lru_cache(maxsize=1 << 16)
def partition_topic(partition: str) -> str:
    return partition.rpartition("-")[0]


@lru_cache(maxsize=1 << 16)
def partition_sort_key(partition: str) -> tuple[str, int]:
    topic, _, number = partition.rpartition("-")
    return topic, int(number)


def sorted_partitions(parts: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(parts, key=partition_sort_key))


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
    # request.timeout.ms (Kafka's default: 30000); None: every request is answered, no timeouts.
    request_timeout_ms: int | None = None
    # Options for the consumer's assignors (``PartitionAssignor.configured``: load-aware's
    # max_count_skew, min_gain); assignors without options ignore them.
    strategy_options: Mapping[str, Any] = field(default_factory=dict)


class ConsumerCoordinator:
    def __init__(self, config: ConsumerConfig, metadata: Mapping[str, int] | None = None,
                 coordinator_id: int | None = None):
        self.config = config
        self.protocol = rebalance_protocol(config.strategies)
        # One assignor instance per configured strategy: some keep state between rebalances
        # (StickyAssignor remembers its last assignment for its user data).
        self._assignors = {name: get_assignor(name).configured(config.strategy_options) for name in config.strategies}
        self._partition_loads: dict[str, np.ndarray] = {}  # the latest PartitionLoadsMeasured
        self._topics = tuple(config.topics)
        self._pattern = re.compile(config.pattern) if config.pattern else None
        self._metadata: dict[str, int] = dict(metadata or {})
        self.coordinator_id = coordinator_id
        self._finding_coordinator = False
        self.state = ClassicMemberState.UNJOINED
        self.member_id = UNKNOWN_MEMBER_ID
        self.generation = NO_GENERATION
        # The generation whose assignment the member holds (its last SyncGroup): the generation
        # of a JoinGroup whose SyncGroup then failed is newer.
        self.assignment_generation = NO_GENERATION
        self.leader: str | None = None
        self.protocol_name: str | None = None
        self._owned: set[str] = set()
        self._awaiting_positions: set[str] = set()  # assigned, committed offset not fetched yet
        self._fetch_in_flight = False
        self.subscribed: tuple[str, ...] = self._resolve_subscription()
        self._joined_subscription: tuple[str, ...] | None = None
        self._assignment_metadata: dict[str, int] | None = None  # leader: partition counts it assigned from
        self.rejoin_needed = True
        self.rejoin_reason = "initial join"
        self.in_poll = True
        self.fatal: ErrorCode | None = None
        self._commit_before_join = False
        self._join_backing_off = False  # a retriable JoinGroup error: wait retry.backoff.ms
        self._commits_in_flight = 0  # responses come back in order on the connection
        self._heartbeat_due = False
        self._heartbeat_send: Send | None = None  # requests are immutable: one per generation
        self._heartbeat_member = UNKNOWN_MEMBER_ID
        self._heartbeat_generation = NO_GENERATION
        self._poll_timer_armed = False
        self.last_poll_ms = 0
        self.next_auto_commit_ms = 0
        self.closed = False
        self._now = 0
        # Deadlines of the requests in flight per API, oldest first (only with request_timeout_ms).
        self._in_flight: dict[ApiKey, list[int]] | None = (
            None if config.request_timeout_ms is None else {api: [] for api in ApiKey})

    # ------------------------------------------------------------------ public state

    @property
    def owned(self) -> frozenset[str]:
        return frozenset(self._owned)

    @property
    def rebalance_timeout_ms(self) -> int:
        c = self.config
        return c.max_poll_interval_ms if c.background_heartbeat else c.session_timeout_ms

    @property
    def is_static(self) -> bool:
        return self.config.group_instance_id is not None

    @property
    def ready_to_join(self) -> bool:
        """A rejoin is wanted and nothing stands in its way (coordinator known, not
        mid-rebalance, no commit before the join still under way)."""
        return (self.rejoin_needed and self.state in (ClassicMemberState.UNJOINED, ClassicMemberState.STABLE)
                and not self._commit_before_join and not self._join_backing_off and self.coordinator_id is not None)

    @property
    def wants_poll(self) -> bool:
        """An application inside poll() would act now (rejoin, or an old client's due heartbeat)."""
        return self._heartbeat_due or (self.rejoin_needed and self.ready_to_join)

    # ------------------------------------------------------------------ entry point

    def handle(self, event: ConsumerInput, now_ms: int) -> list[ConsumerOutput]:
        out: list[ConsumerOutput] = []
        if self.closed or self.fatal is not None:
            return out
        self._now = now_ms
        match event:
            case HeartbeatDue():
                self._heartbeat_timer(now_ms, out)
            case ResponseReceived(response=response):
                self._on_response(response, now_ms, out)
            case Poll(positions=positions):
                self._poll(positions, now_ms, out)
            case PollReturned():
                if self.in_poll:
                    self.last_poll_ms = now_ms
                self.in_poll = False
            case AutoCommitDue(tick_ms=tick, positions=positions):
                self.next_auto_commit_ms = tick + self.config.auto_commit_interval_ms
                self._commit(positions, out)
            case Subscribe(topics=topics, pattern=pattern):
                self._topics = tuple(topics)
                self._pattern = re.compile(pattern) if pattern else None
                self.subscribed = self._resolve_subscription()
            case MetadataUpdate(topics=topics):
                self._on_metadata(topics)
            case PartitionLoadsMeasured(loads=loads):
                self._partition_loads = {t: np.asarray(values, dtype=np.float64) for t, values in loads.items()}
            case Close(positions=positions):
                self._close(positions, out)
            case PollIntervalExpired():
                self._poll_interval_timer(now_ms, out)
            case RetryJoin():
                self._join_backing_off = False  # the application's poll loop, woken, rejoins (see ready_to_join)
            case RetryFetch():
                self._fetch_positions(out)
            case RetryFindCoordinator():
                self._find_coordinator(out)
            case RequestTimedOut(api=api):
                self._request_timed_out(api, now_ms, out)
            case _:
                assert_never(event)
        return out

    # ------------------------------------------------------------------ helpers

    def _set_state(self, target: ClassicMemberState) -> None:
        if target is not self.state:
            self.state = MEMBER_STATES.check(self.state, target)

    def _send(self, request: GroupRequest, out: list[ConsumerOutput]) -> None:
        assert self.coordinator_id is not None
        out.append(Send(request, self.coordinator_id))
        if self._in_flight is not None:
            self._sent(_API_OF[type(request)], out)

    def _request_rejoin(self, reason: str) -> None:
        if not self.rejoin_needed:
            self.rejoin_needed = True
            self.rejoin_reason = reason

    def _reset_generation(self, reset_member_id: bool, out: list[ConsumerOutput]) -> None:
        self.generation = NO_GENERATION
        if reset_member_id:
            self.member_id = UNKNOWN_MEMBER_ID
        self._set_state(ClassicMemberState.UNJOINED)
        self._stop_heartbeats(out)

    def _start_heartbeats(self, now: int, out: list[ConsumerOutput]) -> None:
        self._heartbeat_due = False
        out.append(ArmTimer(_HEARTBEAT_DUE, now + self.config.heartbeat_interval_ms))

    def _stop_heartbeats(self, out: list[ConsumerOutput]) -> None:
        out.append(CancelTimer(_HEARTBEAT_DUE))

    def _heartbeat(self, out: list[ConsumerOutput]) -> None:
        send = self._heartbeat_send
        if (send is None or send.node_id != self.coordinator_id or self._heartbeat_member != self.member_id
                or self._heartbeat_generation != self.generation):
            assert self.coordinator_id is not None
            self._heartbeat_member, self._heartbeat_generation = self.member_id, self.generation
            send = Send(HeartbeatRequest(self.config.group_id, self.generation, self.member_id,
                                         self.config.group_instance_id), self.coordinator_id)
            self._heartbeat_send = send
        out.append(send)
        if self._in_flight is not None:
            self._sent(ApiKey.HEARTBEAT, out)

    def _resolve_subscription(self) -> tuple[str, ...]:
        if self._pattern is None:
            return tuple(sorted(self._topics))
        pattern = self._pattern
        return tuple(sorted(t for t in self._metadata if pattern.fullmatch(t)))

    def _coordinator_unknown(self, out: list[ConsumerOutput]) -> None:
        """markCoordinatorUnknown: forget the coordinator and look for it again. With request
        timeouts it also disconnects from the old coordinator (client.disconnectAsync), so the
        requests in flight to it fail; without them, they are still answered."""
        if self._in_flight is not None and self.coordinator_id is not None:
            self._disconnect(self._now, out)
            return
        self.coordinator_id = None
        self._find_coordinator(out)

    def _find_coordinator(self, out: list[ConsumerOutput]) -> None:
        if self.coordinator_id is None and not self._finding_coordinator:
            self._finding_coordinator = True
            out.append(Send(FindCoordinatorRequest(self.config.group_id), ANY_BROKER))
            if self._in_flight is not None:
                self._sent(ApiKey.FIND_COORDINATOR, out)

    # ------------------------------------------------------------------ request timeouts

    def _sent(self, api: ApiKey, out: list[ConsumerOutput]) -> None:
        assert self._in_flight is not None and self.config.request_timeout_ms is not None
        timeout = self.config.request_timeout_ms
        if api is ApiKey.JOIN_GROUP:
            timeout = max(timeout, self.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        deadlines = self._in_flight[api]
        deadlines.append(self._now + timeout)
        if len(deadlines) == 1:
            out.append(ArmTimer(_TIMED_OUT[api], deadlines[0]))

    def _answered(self, api: ApiKey, out: list[ConsumerOutput]) -> bool:
        """A response of ``api`` arrived (False: nothing of ``api`` is in flight, the request
        already failed and the response is not read).

        Responses carry no correlation id here, so which request it answers is inferred:
        responses come back in order on a connection, so when two are in flight and an answer
        comes, the older one was answered or lost; taking the newest off keeps the oldest
        deadline, so a lost request times out at its own deadline (Kafka: each in-flight request
        is timed on its own, InFlightRequests.nodesWithTimedOutRequests). When instead the newer
        one is lost, the timeout fires earlier than Kafka's by the time between the two sends."""
        assert self._in_flight is not None
        deadlines = self._in_flight[api]
        if not deadlines:
            return False
        deadlines.pop()
        out.append(ArmTimer(_TIMED_OUT[api], deadlines[0]) if deadlines else CancelTimer(_TIMED_OUT[api]))
        return True

    def _request_timed_out(self, api: ApiKey, now: int, out: list[ConsumerOutput]) -> None:
        """NetworkClient.handleTimedOutRequests: the connection the request went over is closed
        and every request in flight on it fails (a DisconnectException); FindCoordinator goes to
        any broker, every other request to the coordinator."""
        in_flight = self._in_flight
        if in_flight is None:
            return
        deadlines = in_flight[api]
        if not deadlines:
            return
        if deadlines[0] > now:
            out.append(ArmTimer(_TIMED_OUT[api], deadlines[0]))
            return
        if api is ApiKey.FIND_COORDINATOR:
            deadlines.clear()
            self._finding_coordinator = False  # ensureCoordinatorReady: retriable, back off and ask again
            out.append(ArmTimer(_RETRY_FIND_COORDINATOR, now + self.config.retry_backoff_ms))
            return
        self._disconnect(now, out)

    def _disconnect(self, now: int, out: list[ConsumerOutput]) -> None:
        """The connection to the coordinator is closed: every request in flight on it fails with a
        DisconnectException (NetworkClient.cancelInFlightRequests), the coordinator is unknown
        (CoordinatorResponseHandler.onFailure: markCoordinatorUnknown) and each failed request
        takes its retriable-failure path."""
        in_flight = self._in_flight
        assert in_flight is not None
        failed = {a: len(d) for a, d in in_flight.items() if d and a is not ApiKey.FIND_COORDINATOR}
        for failed_api in failed:
            in_flight[failed_api].clear()
            out.append(CancelTimer(_TIMED_OUT[failed_api]))
        if self.coordinator_id is not None:
            out.append(Disconnect(self.coordinator_id))
        self.coordinator_id = None
        self._find_coordinator(out)
        if ApiKey.OFFSET_COMMIT in failed:
            self._commits_in_flight = max(self._commits_in_flight - failed[ApiKey.OFFSET_COMMIT], 0)
            if self._commit_before_join and self._commits_in_flight == 0:
                # ConsumerCoordinator.onJoinPrepare: a commit that failed retriably is made again
                # before the join (the next poll commits the positions then).
                self._commit_before_join = False
        if ApiKey.OFFSET_FETCH in failed:
            self._fetch_in_flight = False
            out.append(ArmTimer(_RETRY_FETCH, now + self.config.retry_backoff_ms))
        if ((ApiKey.JOIN_GROUP in failed and self.state is ClassicMemberState.PREPARING_REBALANCE)
                or (ApiKey.SYNC_GROUP in failed and self.state is ClassicMemberState.COMPLETING_REBALANCE)):
            # joinGroupIfNeeded: a retriable failure; requestRejoin, sleep retry.backoff.ms, find
            # the coordinator and send JoinGroup again with generation.memberId.
            self._retry_join(now, out, backoff=True)
            self.rejoin_reason = "rebalance failed due to DisconnectException"

    # ------------------------------------------------------------------ application inputs

    def _poll(self, positions: Mapping[str, int], now: int, out: list[ConsumerOutput]) -> None:
        """The application entered poll(): heartbeat (old clients), auto-commit, (re)join."""
        self.in_poll = True
        self.last_poll_ms = now
        if self.config.background_heartbeat:
            if not self._poll_timer_armed:
                # One timer at a time; when it fires early (poll was called since) it re-arms.
                self._poll_timer_armed = True
                out.append(ArmTimer(_POLL_INTERVAL_EXPIRED, now + self.config.max_poll_interval_ms))
        elif (self._heartbeat_due and self.coordinator_id is not None
              and self.state in (ClassicMemberState.STABLE, ClassicMemberState.COMPLETING_REBALANCE)):
            self._heartbeat(out)
            self._start_heartbeats(now, out)
        if self.coordinator_id is None:
            self._find_coordinator(out)
        if self._joined_subscription is not None and self._joined_subscription != self.subscribed:
            self._request_rejoin("subscription changed")
        if self.ready_to_join:
            self._prepare_join(positions, now, out)
        elif (self.state is ClassicMemberState.STABLE and self.config.enable_auto_commit
              and now >= self.next_auto_commit_ms):
            self.next_auto_commit_ms = now + self.config.auto_commit_interval_ms
            self._commit(positions, out)

    def _commit_request(self, positions: Mapping[str, int]) -> OffsetCommitRequest | None:
        """An OffsetCommit of the consumed positions of owned partitions (None if nothing to commit)."""
        if self.generation == NO_GENERATION or not self._owned or self.coordinator_id is None:
            return None
        owned = self._owned
        offsets = tuple([PartitionOffset(p, o) for p, o in positions.items() if p in owned])
        if not offsets:
            return None
        return OffsetCommitRequest(self.config.group_id, self.generation, self.member_id,
                                   self.config.group_instance_id, offsets)

    def _commit(self, positions: Mapping[str, int], out: list[ConsumerOutput]) -> bool:
        request = self._commit_request(positions)
        if request is None:
            return False
        self._commits_in_flight += 1
        self._send(request, out)
        return True

    def _prepare_join(self, positions: Mapping[str, int], now: int, out: list[ConsumerOutput]) -> None:
        if (self.config.enable_auto_commit and self.generation != NO_GENERATION and self._owned
                and self._commit(positions, out)):
            # Java commits synchronously before rejoining; the join waits for the answer.
            self._commit_before_join = True
            return
        self._send_join(out)

    def _send_join(self, out: list[ConsumerOutput]) -> None:
        self.subscribed = self._resolve_subscription()
        if self.generation == NO_GENERATION and self._owned:
            out.append(PartitionsLost(sorted_partitions(self._owned)))
            self._drop(self._owned)
        elif self.protocol is RebalanceProtocol.EAGER and self._owned:
            out.append(PartitionsRevoked(sorted_partitions(self._owned)))
            self._drop(self._owned)
        elif self._owned:
            gone = {p for p in self._owned if partition_topic(p) not in self.subscribed}
            if gone:
                out.append(PartitionsRevoked(sorted_partitions(gone)))
                self._drop(gone)
        self._set_state(ClassicMemberState.PREPARING_REBALANCE)
        self._stop_heartbeats(out)  # the heartbeat thread pauses while joining
        self._joined_subscription = self.subscribed
        self._send(self._join_request(), out)

    def _drop(self, partitions: Iterable[str]) -> None:
        dropped = set(partitions)
        self._owned -= dropped
        self._awaiting_positions -= dropped

    def _join_request(self) -> JoinGroupRequest:
        c = self.config
        owned = sorted_partitions(self._owned)
        protocols = tuple(
            JoinGroupRequestProtocol(name, ConsumerProtocolSubscription(
                self.subscribed, self._assignors[name].subscription_user_data(self.subscribed), owned, self.generation))
            for name in c.strategies)
        return JoinGroupRequest(c.group_id, c.session_timeout_ms, self.rebalance_timeout_ms, self.member_id,
                                c.group_instance_id, CONSUMER_PROTOCOL_TYPE, protocols, self.rejoin_reason, c.client_id)

    def _on_metadata(self, topics: Mapping[str, int]) -> None:
        """A metadata refresh: new topics for a pattern, partition count changes (leader)."""
        self._metadata = dict(topics)
        self.subscribed = self._resolve_subscription()
        if self._joined_subscription is not None and self._joined_subscription != self.subscribed:
            self._request_rejoin("subscribed topics changed")
        snapshot = self._assignment_metadata
        if snapshot is not None and any(topics.get(t, 0) != n for t, n in snapshot.items()):
            self._request_rejoin("partition count of a subscribed topic changed")

    def _close(self, positions: Mapping[str, int], out: list[ConsumerOutput]) -> None:
        if self.config.enable_auto_commit:
            self._commit(positions, out)
        if self._owned:
            out.append(PartitionsRevoked(sorted_partitions(self._owned)))
            self._drop(self._owned)
        if (not self.is_static and self.member_id != UNKNOWN_MEMBER_ID and self.generation != NO_GENERATION
                and self.coordinator_id is not None):
            self._send(LeaveGroupRequest(self.config.group_id, (
                MemberIdentity(self.member_id, None, "the consumer is being closed"),)), out)
        self.closed = True
        self._stop_heartbeats(out)
        out.append(CancelTimer(_POLL_INTERVAL_EXPIRED))
        self._poll_timer_armed = False

    # ------------------------------------------------------------------ timers

    def _heartbeat_timer(self, now: int, out: list[ConsumerOutput]) -> None:
        if self.state not in (ClassicMemberState.STABLE, ClassicMemberState.COMPLETING_REBALANCE):
            return
        if self.config.background_heartbeat or self.in_poll:
            if self.coordinator_id is not None:
                self._heartbeat(out)
            out.append(ArmTimer(_HEARTBEAT_DUE, now + self.config.heartbeat_interval_ms))
        else:
            self._heartbeat_due = True

    def _poll_interval_timer(self, now: int, out: list[ConsumerOutput]) -> None:
        if not self.config.background_heartbeat:
            return
        self._poll_timer_armed = False
        if self.in_poll:
            self.last_poll_ms = now  # inside poll() all along: as good as a poll() call now
        deadline = self.last_poll_ms + self.config.max_poll_interval_ms
        if deadline > now:
            self._poll_timer_armed = True
            out.append(ArmTimer(_POLL_INTERVAL_EXPIRED, deadline))
            return
        reason = ("consumer poll timeout has expired. This means the time between subsequent calls to poll() "
                  "was longer than the configured max.poll.interval.ms")
        if self._owned:
            out.append(PartitionsRevoked(sorted_partitions(self._owned)))
            self._drop(self._owned)
        if (not self.is_static and self.member_id != UNKNOWN_MEMBER_ID and self.state is not ClassicMemberState.UNJOINED
                and self.coordinator_id is not None):
            self._send(LeaveGroupRequest(self.config.group_id, (MemberIdentity(self.member_id, None, reason),)), out)
        out.append(LeftGroup("poll timeout"))
        self._reset_generation(reset_member_id=True, out=out)
        self.rejoin_needed = True
        self.rejoin_reason = "rejoining after the poll timeout"

    def _fetch_positions(self, out: list[ConsumerOutput]) -> None:
        """OffsetFetch of the assigned partitions whose committed offsets are not known yet."""
        waiting = self._awaiting_positions & self._owned
        if not waiting or self._fetch_in_flight:
            return
        if self.coordinator_id is None:
            self._find_coordinator(out)
            return
        self._fetch_in_flight = True
        self._send(OffsetFetchRequest(self.config.group_id, sorted_partitions(waiting)), out)

    # ------------------------------------------------------------------ responses

    def _on_response(self, response: GroupResponse | FindCoordinatorResponse, now: int,
                     out: list[ConsumerOutput]) -> None:
        if self._in_flight is not None:
            api = _API_OF.get(type(response))
            if api is not None and not self._answered(api, out):
                return
        match response:
            case HeartbeatResponse():
                self._on_heartbeat(response, out)
            case JoinGroupResponse():
                self._on_join(response, now, out)
            case SyncGroupResponse():
                self._on_sync(response, now, out)
            case OffsetCommitResponse():
                self._commits_in_flight = max(self._commits_in_flight - 1, 0)
                if response.error_code in _COORDINATOR_GONE:
                    self._coordinator_unknown(out)
                if self._commit_before_join and self._commits_in_flight == 0:
                    # The join waited for its own (synchronous) commit, the last one sent.
                    self._commit_before_join = False
                    if self.ready_to_join:
                        self._send_join(out)
            case OffsetFetchResponse():
                self._on_fetch(response, now, out)
            case FindCoordinatorResponse():
                self._finding_coordinator = False
                if response.error_code is ErrorCode.NONE:
                    self.coordinator_id = response.node_id
                    self._fetch_positions(out)
                else:
                    out.append(ArmTimer(_RETRY_FIND_COORDINATOR, now + self.config.retry_backoff_ms))
            case LeaveGroupResponse() | DescribeGroupsResponse() | ListGroupsResponse() | DeleteGroupsResponse():
                pass
            case _:
                assert_never(response)

    def _on_fetch(self, response: OffsetFetchResponse, now: int, out: list[ConsumerOutput]) -> None:
        self._fetch_in_flight = False
        error = response.error_code
        if error is ErrorCode.NONE:
            fetched = tuple(o for o in response.offsets if o.partition in self._owned)
            self._awaiting_positions -= {o.partition for o in fetched}
            out.append(CommittedOffsetsFetched(fetched))
            return
        if error in _COORDINATOR_GONE:
            self._coordinator_unknown(out)
        out.append(ArmTimer(_RETRY_FETCH, now + self.config.retry_backoff_ms))

    def _on_heartbeat(self, response: HeartbeatResponse, out: list[ConsumerOutput]) -> None:
        error = response.error_code
        if error is ErrorCode.NONE:
            return
        if error is ErrorCode.REBALANCE_IN_PROGRESS:
            if self.state is ClassicMemberState.STABLE:
                self._request_rejoin("group is rebalancing")
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            if self.state in (ClassicMemberState.STABLE, ClassicMemberState.COMPLETING_REBALANCE):
                self._reset_generation(reset_member_id=error is ErrorCode.UNKNOWN_MEMBER_ID, out=out)
                self._request_rejoin(f"heartbeat failed with {error.name}")
        elif error is ErrorCode.FENCED_INSTANCE_ID:
            self._fail(error, out)
        elif error in _COORDINATOR_GONE:
            self._coordinator_unknown(out)

    def _fail(self, error: ErrorCode, out: list[ConsumerOutput]) -> None:
        self.fatal = error
        if self._owned:
            out.append(PartitionsLost(sorted_partitions(self._owned)))
            self._drop(self._owned)
        out.append(Fatal(error))
        self._reset_generation(reset_member_id=True, out=out)

    def _retry_join(self, now: int, out: list[ConsumerOutput], *, backoff: bool = False) -> None:
        """Rejoin: at once after UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS, after retry.backoff.ms
        after COORDINATOR_LOAD_IN_PROGRESS (AbstractCoordinator.joinGroupIfNeeded; without the
        backoff a loading coordinator and a zero-latency network loop forever at one instant)."""
        self._set_state(ClassicMemberState.UNJOINED if self.generation == NO_GENERATION else ClassicMemberState.STABLE)
        self.rejoin_needed = True
        self._join_backing_off = backoff
        out.append(ArmTimer(_RETRY_JOIN, now + self.config.retry_backoff_ms))

    def _on_join(self, response: JoinGroupResponse, now: int, out: list[ConsumerOutput]) -> None:
        if self.state is not ClassicMemberState.PREPARING_REBALANCE:
            return
        error = response.error_code
        if error is ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self._send(self._join_request(), out)
            return
        if error is ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_generation(reset_member_id=True, out=out)
            self._retry_join(now, out)
            return
        if error in _COORDINATOR_GONE:
            self._coordinator_unknown(out)
            self._retry_join(now, out)  # the FindCoordinator round trip comes first
            return
        if error in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            self._retry_join(now, out, backoff=error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            return
        if error is not ErrorCode.NONE:
            self._fail(error, out)
            return
        self.member_id = response.member_id
        self.generation = response.generation_id
        self.leader = response.leader
        self.protocol_name = response.protocol_name
        self._set_state(ClassicMemberState.COMPLETING_REBALANCE)
        assignments: tuple[SyncGroupRequestAssignment, ...] = ()
        if response.leader == self.member_id and response.members and not response.skip_assignment:
            assignments = self._run_assignor(response)
        elif response.leader == self.member_id and response.skip_assignment:
            # A returning static leader keeps its assignment but leads from now on: it watches the
            # group's topics for partition changes (ConsumerCoordinator.onLeaderElected:
            # assignmentSnapshot = metadataSnapshot).
            group_topics = {t for m in response.members for t in m.metadata.topics} or set(self.subscribed)
            self._assignment_metadata = {t: self._metadata[t] for t in sorted(group_topics) if t in self._metadata}
        self._send(SyncGroupRequest(self.config.group_id, self.generation, self.member_id,
                                    self.config.group_instance_id, response.protocol_type, response.protocol_name,
                                    assignments), out)
        self._start_heartbeats(now, out)

    def _run_assignor(self, response: JoinGroupResponse) -> tuple[SyncGroupRequestAssignment, ...]:
        """The leader assigns with the strategy the coordinator's vote chose, from its metadata."""
        name = response.protocol_name or ""
        group_topics = sorted({t for m in response.members for t in m.metadata.topics})
        topics = {t: self._metadata[t] for t in group_topics if t in self._metadata}
        # The instance that read the members' user data assigns them, through the columnar API
        # (the group as arrays, no validation of a JSON document on every rebalance).
        assignor = self._assignors.get(name) or get_assignor(name)
        members = []
        for m in response.members:
            owned, generation = assignor.member_data(
                m.metadata.owned_partitions, m.metadata.generation_id, m.metadata.user_data)
            members.append(MemberSubscription(member_id=m.member_id, topics=tuple(m.metadata.topics), owned=tuple(owned),
                                              generation=generation, group_instance_id=m.group_instance_id))
        # Topics a member subscribes to that the leader's metadata does not know yet count as 0
        # partitions: when they appear, the leader rejoins and assigns them (Java's leader fetches
        # them before assigning, ConsumerCoordinator.performAssignment -> ensureFreshMetadata).
        self._assignment_metadata = {t: topics.get(t, 0) for t in group_topics}
        group = ColumnarGroup.from_snapshot(GroupSnapshot(
            topics={t: TopicMetadata(t, count) for t, count in topics.items()}, members=tuple(members), strategy=name,
            partition_loads={t: loads for t, loads in self._partition_loads.items()
                             if t in topics and len(loads) == topics[t]}))
        assignment = group.assignment_lists(assignor.assign_columnar(group))
        return tuple(SyncGroupRequestAssignment(member, tuple(parts)) for member, parts in assignment.items())

    def _on_sync(self, response: SyncGroupResponse, now: int, out: list[ConsumerOutput]) -> None:
        if self.state is not ClassicMemberState.COMPLETING_REBALANCE:
            return
        error = response.error_code
        if error is ErrorCode.NONE:
            self._set_state(ClassicMemberState.STABLE)
            self.assignment_generation = self.generation
            self.rejoin_needed = False
            assigned = set(response.assignment)
            if self.protocol is RebalanceProtocol.COOPERATIVE:
                revoked = self._owned - assigned
                if revoked:
                    out.append(PartitionsRevoked(sorted_partitions(revoked)))
                    # The follow-up rebalance hands the revoked partitions to their new owners.
                    self._request_rejoin("need to revoke partitions and re-join")
            added = assigned - self._owned
            self._owned = assigned
            self._awaiting_positions = (self._awaiting_positions & assigned) | added
            chosen = self._assignors.get(self.protocol_name or "")
            if chosen is not None:
                chosen.on_assignment(list(sorted_partitions(assigned)), self.generation)
            out.append(PartitionsAssigned(sorted_partitions(added)))
            if self.leader != self.member_id:
                self._assignment_metadata = None
            self.next_auto_commit_ms = now + self.config.auto_commit_interval_ms
            if added:
                self._fetch_in_flight = True
                self._send(OffsetFetchRequest(self.config.group_id, sorted_partitions(added)), out)
            return
        if error is ErrorCode.REBALANCE_IN_PROGRESS:
            self._retry_join(now, out)
            self.rejoin_reason = "group is rebalancing"
            return
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._reset_generation(reset_member_id=error is ErrorCode.UNKNOWN_MEMBER_ID, out=out)
            self._retry_join(now, out)
            return
        if error in _COORDINATOR_GONE:
            self._coordinator_unknown(out)
            self._retry_join(now, out)
            return
        self._fail(error, out)
