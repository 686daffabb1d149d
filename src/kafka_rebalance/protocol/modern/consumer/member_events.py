"""Every input and output of the new consumer's membership manager (``ConsumerMembershipManager``).

The application side is explicit input (``Subscribe``, ``Poll``, ``Unsubscribe``,
``CallbacksCompleted``); listener callbacks and the auto-commit before revocation are outputs,
emitted in the order Kafka runs them (commit, then ``on_partitions_revoked``, then
``on_partitions_assigned``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)


@dataclass(frozen=True, slots=True)
class Subscribe:
    """``consumer.subscribe(topics)`` or ``subscribe(Pattern)`` (a regex resolved by the broker)."""

    topics: tuple[str, ...] = ()
    regex: str | None = None


@dataclass(frozen=True, slots=True)
class Poll:
    """The application called ``poll()``: resets the poll timer (and rejoins a STALE member)."""


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """``unsubscribe()`` or ``close()``: release the assignment, then leave the group."""


@dataclass(frozen=True, slots=True)
class CallbacksCompleted:
    """The listener callbacks the member asked for (and the commit before them) have run."""


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    response: ConsumerGroupHeartbeatResponse


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """The heartbeat got no answer (coordinator unavailable, disconnected): retry after backoff."""


@dataclass(frozen=True, slots=True)
class HeartbeatDue:
    """The heartbeat interval the coordinator asked for has passed."""


@dataclass(frozen=True, slots=True)
class PollTimerExpired:
    """``max.poll.interval.ms`` passed without a call to ``poll()``."""


Timer: TypeAlias = HeartbeatDue | PollTimerExpired
Input: TypeAlias = Subscribe | Poll | Unsubscribe | CallbacksCompleted | ResponseReceived | RequestFailed | HeartbeatDue | PollTimerExpired


@dataclass(frozen=True, slots=True)
class Send:
    """Send a heartbeat; with ``ignore_response`` its answer must not come back (the leave
    heartbeat of an expired poll timer: ``makeHeartbeatRequest(currentTimeMs, true)``)."""

    request: ConsumerGroupHeartbeatRequest
    ignore_response: bool = False


@dataclass(frozen=True, slots=True)
class CommitOffsets:
    """Auto-commit (sync) of the consumed positions before a reconciliation revokes anything
    (Kafka: ``maybeAutoCommitSyncBeforeRevocation``)."""

    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionsRevoked:
    """``ConsumerRebalanceListener.onPartitionsRevoked``."""

    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionsAssigned:
    """``ConsumerRebalanceListener.onPartitionsAssigned`` (the added partitions; Kafka calls it
    even when nothing was added)."""

    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionsLost:
    """``ConsumerRebalanceListener.onPartitionsLost``: fenced or stale, nothing is committed."""

    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Fatal:
    error_code: ErrorCode
    message: str | None


Output: TypeAlias = (Send | ArmTimer[Timer] | CancelTimer[Timer] | CommitOffsets | PartitionsRevoked
                     | PartitionsAssigned | PartitionsLost | Fatal)
