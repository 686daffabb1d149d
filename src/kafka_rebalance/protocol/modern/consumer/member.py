"""The client side of KIP-848: the new consumer's membership manager (Kafka's
``AbstractMembershipManager`` / ``ConsumerMembershipManager`` with the heartbeat rules of
``AbstractHeartbeatRequestManager`` and ``ConsumerHeartbeatRequestManager``).

The member states and their valid previous states are Kafka's ``ConsumerMemberState`` table; an
illegal transition raises. Reconciliation: commit (when auto-commit is on), then
``on_partitions_revoked``, then ``on_partitions_assigned``; when the application reports the
callbacks done, the member acknowledges its new assignment with an immediate heartbeat.
Fencing (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) loses the partitions (``on_partitions_lost``)
and rejoins with epoch 0; an expired poll timer sends a leave heartbeat, loses the partitions
and stays STALE until the application polls again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import assert_never

from kafka_rebalance.protocol.effects import ArmTimer, StateTable
from kafka_rebalance.protocol.errors import ErrorCode, IllegalStateTransition
from kafka_rebalance.protocol.modern.consumer.assignment import (
    Partitions,
    difference,
    partitions,
    sorted_numbers,
    to_strings,
    union,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kafka_rebalance.protocol.modern.consumer.member_events import (
    CallbacksCompleted,
    CommitOffsets,
    Fatal,
    HeartbeatDue,
    Input,
    Output,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Poll,
    PollTimerExpired,
    RequestFailed,
    ResponseReceived,
    Send,
    Subscribe,
    Unsubscribe,
)


class ConsumerMemberState(Enum):
    """Kafka's client ``ConsumerMemberState``."""

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"
    FATAL = "FATAL"
    STALE = "STALE"

    # Members are singletons compared by identity; hashing by identity keeps the state checks on
    # every heartbeat (``state in _NOT_IN_GROUP``) off Enum's Python-level __hash__.
    __hash__ = object.__hash__


S = ConsumerMemberState
VALID_PREVIOUS_STATES: Mapping[ConsumerMemberState, frozenset[ConsumerMemberState]] = {
    S.STABLE: frozenset({S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}),
    S.RECONCILING: frozenset({S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}),
    S.ACKNOWLEDGING: frozenset({S.RECONCILING}),
    S.FATAL: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING,
                        S.UNSUBSCRIBED}),
    S.FENCED: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING}),
    S.JOINING: frozenset({S.FENCED, S.UNSUBSCRIBED, S.STALE}),
    S.PREPARE_LEAVING: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED}),
    S.LEAVING: frozenset({S.PREPARE_LEAVING}),
    S.UNSUBSCRIBED: frozenset({S.PREPARE_LEAVING, S.LEAVING, S.FENCED}),
    S.STALE: frozenset({S.LEAVING}),
}
MEMBER_STATES = StateTable("ConsumerMemberState", VALID_PREVIOUS_STATES)

_NOT_IN_GROUP = frozenset({S.UNSUBSCRIBED, S.FENCED, S.FATAL, S.STALE})
_CAN_TAKE_ASSIGNMENT = VALID_PREVIOUS_STATES[S.RECONCILING]
_RETRIABLE = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
_FENCING = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
_POLL_TIMER_EXPIRED = PollTimerExpired()  # one instance: every poll re-arms it


@dataclass(frozen=True, slots=True)
class MemberConfig:
    group_id: str
    group_instance_id: str | None = None
    max_poll_interval_ms: int = 300000  # also the rebalance timeout the member announces
    server_assignor: str | None = None
    enable_auto_commit: bool = True
    retry_backoff_ms: int = 100
    rack_id: str | None = None
    client_id: str = "consumer"


class _Pending(Enum):
    RECONCILE = 0  # onPartitionsAssigned, the last step of a reconciliation
    LOST_FENCED = 1
    LOST_STALE = 2
    LEAVE = 3
    COMMIT = 4  # the auto-commit before a reconciliation's callbacks
    REVOKE = 5  # onPartitionsRevoked of a reconciliation


def _tp(assignment: Partitions) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, sorted_numbers(assignment[t])) for t in sorted(assignment))


class ConsumerMembershipManager:
    """One consumer's group membership under ``group.protocol=consumer``. One entry point:
    ``handle(event, now_ms) -> list[Output]``.

    ``member_id`` is the consumer's own, fixed for its lifetime and sent in every heartbeat
    (KIP-1082, Kafka 4.0+: ``AbstractMembershipManager.memberId = Uuid.randomUuid()``); the
    coordinator's answer never renames it. A rejoin after fencing or a leave keeps it."""

    def __init__(self, config: MemberConfig, member_id: str):
        if not member_id.strip():
            raise ValueError("a KIP-848 consumer names itself: member_id can't be empty")
        self.config = config
        self.state = ConsumerMemberState.UNSUBSCRIBED
        self.member_id = member_id
        self.member_epoch = 0
        self.topics: tuple[str, ...] = ()
        self.regex: str | None = None
        self.subscription_updated = False
        self.assignment: Partitions = {}  # what the consumer owns now (Kafka's currentAssignment)
        # Kafka's SubscriptionState.assignedPartitions: what the consumer fetches and what its
        # listener is told it lost or must revoke. It differs from ``assignment`` after a
        # reconciliation aborted once its onPartitionsAssigned ran (see ``_callbacks_completed``).
        self.in_subscription: Partitions = {}
        self.target: Partitions = {}  # the last assignment the coordinator sent
        # LocalAssignment.localEpoch of currentTargetAssignment and of currentAssignment (-1: Kafka's
        # LocalAssignment.NONE, nothing received / reconciled since (re)joining). Kafka's
        # targetAssignmentReconciled compares both, so a target that changes and changes back
        # while a reconciliation runs is not "reconciled" by the partitions alone.
        self._target_epoch = -1
        self._assignment_epoch = -1
        self._reconciling_epoch = -1
        # The running reconciliation's target and what it commits, revokes and adds: worked out
        # once (maybeReconcile), each step asked only when the one before has returned.
        self._plan: tuple[Partitions, Partitions, Partitions, Partitions] = ({}, {}, {}, {})
        # Revoked by the running (or an aborted) reconciliation and still in SubscriptionState,
        # marked pending revocation: not fetched (markPendingRevocationToPauseFetching).
        self._revoking: Partitions = {}
        self.heartbeat_interval_ms = 0
        self.in_flight = False
        self.heartbeat_due = False
        self.poll_timer_expired = False
        self._pending: deque[tuple[_Pending, Partitions]] = deque()
        self._reconciling = False
        self._rejoined_while_reconciling = False
        self._sent_full = False
        self._sent_assignment: Partitions | None = None
        self._sent_subscription: tuple[tuple[str, ...], str | None] | None = None
        self._subscription: tuple[tuple[str, ...], str | None] = ((), None)
        self._local_epoch = 0
        self._sent_local_epoch = -1
        self._last_steady_request: ConsumerGroupHeartbeatRequest | None = None

    # ------------------------------------------------------------------ state table

    def _transition(self, new: ConsumerMemberState) -> None:
        self.state = MEMBER_STATES.check(self.state, new)

    @property
    def pending_callbacks(self) -> int:
        """How many listener-callback batches wait for ``CallbacksCompleted``."""
        return len(self._pending)

    @property
    def owned(self) -> tuple[str, ...]:
        return tuple(to_strings(self.assignment))

    @property
    def pending_revocation(self) -> tuple[str, ...]:
        """Owned partitions whose onPartitionsRevoked has been asked for: the consumer no longer
        fetches them."""
        return tuple(to_strings(self._revoking))

    # ------------------------------------------------------------------ entry point

    def handle(self, event: Input, now_ms: int) -> list[Output]:
        out: list[Output] = []
        match event:  # the two inputs of every heartbeat first
            case HeartbeatDue():
                self.heartbeat_due = True
            case ResponseReceived(response=response):
                # Every answer the network delivers is handled, also one to a heartbeat sent before
                # a leave or a fencing reset the request state: Kafka completes each request with
                # its own handler (AbstractHeartbeatRequestManager.makeHeartbeatRequest's
                # whenComplete), and only a leave sent with ignoreResponse has none.
                self.in_flight = False
                self._on_response(response, now_ms, out)
            case Subscribe(topics=topics, regex=regex):
                self.topics, self.regex = tuple(topics), regex
                self._subscription = (tuple(sorted(self.topics)), self.regex)
                self.subscription_updated = True
            case Poll():
                out.append(ArmTimer(_POLL_TIMER_EXPIRED, now_ms + self.config.max_poll_interval_ms))
                if self.poll_timer_expired:
                    self.poll_timer_expired = False
                    if self.state is S.STALE and not self._pending:
                        self._to_joining()
                if self.subscription_updated and self.state is S.UNSUBSCRIBED:
                    self.subscription_updated = False
                    self._to_joining()
            case Unsubscribe():
                self._leave_group(out)
            case CallbacksCompleted():
                self._callbacks_completed(out)
            case RequestFailed():
                # The next heartbeat waits for the backoff (RequestState.onFailedAttempt), even
                # if the interval passed while this one was out.
                self.in_flight = False
                self.heartbeat_due = False
                self._sent_full = False
                self._sent_assignment = None
                out.append(ArmTimer(HeartbeatDue(), now_ms + self.config.retry_backoff_ms))
            case PollTimerExpired():
                if self.state not in _NOT_IN_GROUP and self.state not in (S.PREPARE_LEAVING, S.LEAVING):
                    self.poll_timer_expired = True
                    self._transition(S.PREPARE_LEAVING)
                    self._to_sending_leave()
                elif self.state in _NOT_IN_GROUP:
                    self.poll_timer_expired = True
            case _:
                assert_never(event)
        self._maybe_heartbeat(now_ms, out)
        if self.state is S.RECONCILING:  # the background thread reconciles on every poll
            self._maybe_reconcile(out)
        return out

    # ------------------------------------------------------------------ heartbeats

    def _maybe_heartbeat(self, now_ms: int, out: list[Output]) -> None:
        """``AbstractHeartbeatRequestManager.poll``: heartbeat now when joining, acknowledging or
        leaving, else when the interval has passed; never while one is in flight (except to leave)."""
        if self.state in _NOT_IN_GROUP:
            return
        now = self.state is S.LEAVING or (self.state in (S.ACKNOWLEDGING, S.JOINING) and not self.in_flight)
        if not now and (not self.heartbeat_due or self.in_flight):
            return
        leaving = self.state is S.LEAVING
        out.append(Send(self._request(), ignore_response=leaving and self.poll_timer_expired))
        self.heartbeat_due = False
        out.append(ArmTimer(HeartbeatDue(), now_ms + self.heartbeat_interval_ms))
        self.in_flight = not leaving
        # onHeartbeatRequestGenerated
        if self.state is S.ACKNOWLEDGING:
            reconciled = self._target_reconciled()
            self._transition(S.STABLE if reconciled else S.RECONCILING)
        elif leaving:
            if self.poll_timer_expired:
                self._transition(S.STALE)
                self._release_lost(_Pending.LOST_STALE, out)
            else:
                self._transition(S.UNSUBSCRIBED)

    def _request(self) -> ConsumerGroupHeartbeatRequest:
        """``ConsumerHeartbeatRequestManager.HeartbeatState.buildRequestData``: everything when
        joining, otherwise only what changed since the last heartbeat."""
        full = self.state is S.JOINING or not self._sent_full
        send_owned = full or self._sent_local_epoch != self._local_epoch
        subscription = self._subscription
        send_subscription = full or subscription != self._sent_subscription
        steady = not send_owned and not send_subscription  # (not full either)
        last = self._last_steady_request
        if steady and last is not None and last.member_epoch == self.member_epoch:
            return last  # every field as last time: the same immutable request
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.config.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.config.group_instance_id,
            rack_id=self.config.rack_id if full else None,
            rebalance_timeout_ms=self.config.max_poll_interval_ms if full else -1,
            subscribed_topic_names=subscription[0] if send_subscription and self.regex is None else None,
            subscribed_topic_regex=self.regex if send_subscription else None,
            server_assignor=self.config.server_assignor if full else None,
            topic_partitions=_tp(self.assignment) if send_owned else None,
            client_id=self.config.client_id,
        )
        self._sent_full = True
        self._sent_local_epoch = self._local_epoch
        self._sent_subscription = subscription
        self._last_steady_request = request if steady else None
        return request

    def _on_response(self, response: ConsumerGroupHeartbeatResponse, now_ms: int, out: list[Output]) -> None:
        code = response.error_code
        if code is ErrorCode.NONE:
            if response.heartbeat_interval_ms != self.heartbeat_interval_ms:
                # HeartbeatRequestState.updateHeartbeatIntervalMs: the timer restarts with the new interval.
                self.heartbeat_interval_ms = response.heartbeat_interval_ms
                self.heartbeat_due = False
                out.append(ArmTimer(HeartbeatDue(), now_ms + self.heartbeat_interval_ms))
            self._on_success(response, out)
        elif code in _FENCING:
            self._sent_full = False
            self._to_fenced(out)
        elif code in _RETRIABLE:
            self._sent_full = False
            out.append(ArmTimer(HeartbeatDue(), now_ms + self.config.retry_backoff_ms))
        else:  # INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR, UNRELEASED_INSTANCE_ID, ...
            self._to_fatal(Fatal(code, response.error_message), out)

    def _on_success(self, response: ConsumerGroupHeartbeatResponse, out: list[Output]) -> None:
        """``ConsumerMembershipManager.onHeartbeatSuccess``."""
        if self.state is S.LEAVING or self.state in _NOT_IN_GROUP:
            return
        self.member_epoch = response.member_epoch
        if response.assignment is None or self.state not in _CAN_TAKE_ASSIGNMENT:
            return
        received = partitions({tp.topic: tp.partitions for tp in response.assignment})
        if self._target_epoch < 0 or received != self.target:  # LocalAssignment.updateWith
            self.target = received
            self._target_epoch += 1
        if not self._target_reconciled():
            if self.state is not S.RECONCILING:
                self._transition(S.RECONCILING)
            self._maybe_reconcile(out)
        elif self.state in (S.RECONCILING, S.JOINING):
            self._transition(S.STABLE)

    # ------------------------------------------------------------------ reconciliation

    def _target_reconciled(self) -> bool:
        """``targetAssignmentReconciled``: currentAssignment.equals(currentTargetAssignment),
        local epochs included."""
        return (self._assignment_epoch >= 0 and self._assignment_epoch == self._target_epoch
                and self.assignment == self.target)

    def _maybe_reconcile(self, out: list[Output]) -> None:
        """``AbstractMembershipManager.maybeReconcile`` and ``revokeAndAssign``: commit, revoke,
        then assign; the new assignment takes effect when the callbacks have completed."""
        if self._target_reconciled() or self._reconciling:
            return
        if self._assignment_epoch >= 0 and self.assignment == self.target:
            # maybeReconcile: same partitions, newer local epoch: bump and acknowledge, no callbacks.
            self._assignment_epoch = self._target_epoch
            self._local_epoch += 1
            self._transition(S.ACKNOWLEDGING)
            return
        self._reconciling_epoch = self._target_epoch
        self._reconciling = True
        self._rejoined_while_reconciling = False
        target = self.target
        # Revoked and added are worked out from SubscriptionState, not from currentAssignment
        # (AbstractMembershipManager.maybeReconcile: ownedPartitions = subscriptions.assignedPartitions()).
        held = self.in_subscription
        self._plan = (target, held, difference(held, target), difference(target, held))
        self._reconcile_step(_Pending.COMMIT, out)

    def _reconcile_step(self, step: _Pending, out: list[Output]) -> None:
        """Commit, then onPartitionsRevoked, then onPartitionsAssigned, each asked only once the
        one before has completed (maybeReconcile's commitResult.whenComplete, revokeAndAssign's
        thenCompose); a step with nothing to do is skipped, except onPartitionsAssigned."""
        target, held, revoked, added = self._plan
        if step is _Pending.COMMIT:
            if self.config.enable_auto_commit and held:
                out.append(CommitOffsets(tuple(to_strings(held))))
                self._pending.append((_Pending.COMMIT, held))
                return
            step = _Pending.REVOKE
        if step is _Pending.REVOKE and revoked:
            out.append(PartitionsRevoked(tuple(to_strings(revoked))))
            self._pending.append((_Pending.REVOKE, revoked))
            self._revoking = union(self._revoking, revoked)
            return
        # assignPartitions: SubscriptionState takes the target before onPartitionsAssigned runs.
        out.append(PartitionsAssigned(tuple(to_strings(added))))
        self._pending.append((_Pending.RECONCILE, target))

    def _callbacks_completed(self, out: list[Output]) -> None:
        if not self._pending:
            raise IllegalStateTransition("no listener callbacks are running")
        kind, partitions_ = self._pending.popleft()
        match kind:
            case _Pending.COMMIT | _Pending.REVOKE:
                if self.state is not S.RECONCILING or self._rejoined_while_reconciling:
                    # maybeAbortReconciliation: SubscriptionState keeps what it held.
                    self._reconciling = False
                    self._rejoined_while_reconciling = False
                else:
                    self._reconcile_step(_Pending.REVOKE if kind is _Pending.COMMIT else _Pending.RECONCILE, out)
            case _Pending.RECONCILE:
                self._reconciling = False
                aborted = self.state is not S.RECONCILING or self._rejoined_while_reconciling
                self._rejoined_while_reconciling = False
                # Its callbacks ran (revocation, then assignFromSubscribedAwaitingCallback and
                # onPartitionsAssigned): SubscriptionState holds the target even when the member,
                # having moved on meanwhile, aborts and keeps its currentAssignment.
                self.in_subscription = partitions_
                self._revoking = {}
                if not aborted:
                    self.assignment = partitions_
                    self._assignment_epoch = self._reconciling_epoch
                    self._local_epoch += 1
                    self._transition(S.ACKNOWLEDGING)
            case _Pending.LOST_FENCED:
                self._clear_assignment()
                if self.state is S.FENCED:
                    self._to_joining()
            case _Pending.LOST_STALE:
                self._clear_assignment()
                if self.state is S.STALE and not self.poll_timer_expired:
                    self._to_joining()
            case _Pending.LEAVE:
                self._clear_assignment()
                if self.state is S.PREPARE_LEAVING:
                    self._to_sending_leave()
            case _:
                assert_never(kind)

    def _assigned_in_subscription(self) -> Partitions:
        """What onPartitionsLost (or a leave's onPartitionsRevoked) is given: SubscriptionState,
        and while a reconciliation's callbacks are pending also its target (revokeAndAssign puts
        it there, assignFromSubscribedAwaitingCallback, before onPartitionsAssigned runs), so a
        member fenced or timed out mid-reconciliation loses what it was being given too."""
        lost: Partitions = self.in_subscription
        for kind, target in self._pending:
            if kind is _Pending.RECONCILE:
                lost = union(lost, target)
        return lost

    def _clear_assignment(self) -> None:
        """``clearAssignment``: the assignment, and with it any target not yet reconciled
        (clearPendingAssignmentsAndLocalNamesCache)."""
        self.in_subscription = {}
        self._revoking = {}
        self.target = {}
        self._target_epoch = -1
        if self.assignment or self._assignment_epoch >= 0:
            self.assignment = {}
            self._assignment_epoch = -1
            self._local_epoch += 1

    # ------------------------------------------------------------------ transitions

    def _to_joining(self) -> None:
        """``transitionToJoining``: epoch 0, a full heartbeat right away."""
        if self.state is S.FATAL:
            return
        if self._reconciling:
            self._rejoined_while_reconciling = True
        self.member_epoch = 0
        self._transition(S.JOINING)
        self.target = {}
        self._target_epoch = -1

    def _to_fenced(self, out: list[Output]) -> None:
        """``transitionToFenced``."""
        if self.state is S.PREPARE_LEAVING:
            self._to_sending_leave()
            self._transition(S.UNSUBSCRIBED)
            return
        if self.state is S.LEAVING:
            self._transition(S.UNSUBSCRIBED)
            return
        if self.state in _NOT_IN_GROUP:
            return
        self._transition(S.FENCED)
        self.member_epoch = 0
        self._release_lost(_Pending.LOST_FENCED, out)

    def _release_lost(self, kind: _Pending, out: list[Output]) -> None:
        """``ConsumerMembershipManager.invokeOnPartitionsLostCallback``: the listener is not called
        for nothing lost and the callback's future completes at once, so the assignment is cleared
        (and a fenced member rejoins) without waiting for the application's next poll()."""
        lost = self._assigned_in_subscription()
        if not lost:
            self._clear_assignment()
            if kind is _Pending.LOST_FENCED:
                self._to_joining()
            return
        self._pending.append((kind, lost))
        out.append(PartitionsLost(tuple(to_strings(lost))))

    def _to_fatal(self, fatal: Fatal, out: list[Output]) -> None:
        if self.state is S.FATAL:
            return
        if self.state is S.STALE:
            # The answer to a heartbeat sent before the poll timeout's leave (e.g. GROUP_ID_NOT_FOUND
            # once that leave converted the group back to classic). Kafka 4.1's state table has no
            # STALE -> FATAL (MemberState.FATAL.previousValidStates): transitionTo throws inside the
            # background thread, which logs it, and the member stays STALE; as for FENCED.
            return
        previous = self.state
        self._transition(S.FATAL)
        out.append(fatal)
        lost = self._assigned_in_subscription()
        if previous not in (S.UNSUBSCRIBED, S.LEAVING, S.PREPARE_LEAVING) and lost:
            out.append(PartitionsLost(tuple(to_strings(lost))))
            self._clear_assignment()

    def _leave_group(self, out: list[Output]) -> None:
        """``leaveGroup``: release the assignment through the callbacks, then leave."""
        self.subscription_updated = False
        if self.state in _NOT_IN_GROUP:
            if self.state is S.FENCED:
                self._clear_assignment()
                self._transition(S.UNSUBSCRIBED)
            return
        if self.state in (S.PREPARE_LEAVING, S.LEAVING):
            return
        self._transition(S.PREPARE_LEAVING)
        dropped = self._assigned_in_subscription()
        if dropped:
            if self.member_epoch > 0:
                if self.config.enable_auto_commit:
                    out.append(CommitOffsets(tuple(to_strings(dropped))))
                out.append(PartitionsRevoked(tuple(to_strings(dropped))))
            else:
                out.append(PartitionsLost(tuple(to_strings(dropped))))
            self._pending.append((_Pending.LEAVE, dropped))
        else:
            self._to_sending_leave()

    def _to_sending_leave(self) -> None:
        """``transitionToSendingLeaveGroup``: epoch -1 (-2 for a static member), LEAVING."""
        self.member_epoch = (LEAVE_GROUP_STATIC_MEMBER_EPOCH if self.config.group_instance_id is not None
                             else LEAVE_GROUP_MEMBER_EPOCH)
        self._transition(S.LEAVING)
