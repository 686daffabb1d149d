"""Every input and output of the classic consumer-side coordinator (``classic.consumer``).

Inputs (``ConsumerInput``):
- ``ResponseReceived(response)``: a response from the group coordinator (or FindCoordinator's).
- The application, explicitly: ``Poll(positions)`` (the application called
  ``KafkaConsumer.poll``; ``positions`` are its consumed positions, what auto-commit commits),
  ``PollReturned()`` (poll returned records and the application is processing them, outside
  poll, until its next ``Poll``), ``AutoCommitDue(tick_ms, positions)`` (a driver that
  summarises a consumer continuously inside poll: the auto-commit of the last interval tick,
  with the positions at that tick), ``Subscribe``, ``MetadataUpdate``, ``Close(positions)``.
- Its timers: ``HeartbeatDue``, ``PollIntervalExpired``, ``RetryJoin``, ``RetryFetch``,
  ``RetryFindCoordinator``, ``RequestTimedOut(api)`` (only with ``request_timeout_ms`` set: the
  oldest in-flight request of ``api`` had no response within its timeout).

Outputs (``ConsumerOutput``): ``Send(request, node_id)`` (to the coordinator node, or to any
broker for FindCoordinator), listener callbacks (``PartitionsRevoked``, ``PartitionsAssigned``,
``PartitionsLost``), ``CommittedOffsetsFetched`` (positions to start from), ``LeftGroup``,
``Fatal``, ``Disconnect(node_id)`` (a request timed out: the connection is closed and the responses
still on their way over it are never read), and ``ArmTimer``/``CancelTimer`` of the timers above.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from kafka_rebalance.protocol.classic.coordinator_events import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    GroupRequest,
    GroupResponse,
    PartitionOffset,
)
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer
from kafka_rebalance.protocol.errors import ErrorCode

ANY_BROKER = -1
_NO_POSITIONS: Mapping[str, int] = MappingProxyType({})


def _no_positions() -> Mapping[str, int]:
    return _NO_POSITIONS


# --------------------------------------------------------------------------- inputs

@dataclass(frozen=True, slots=True)
class ResponseReceived:
    response: GroupResponse | FindCoordinatorResponse


@dataclass(frozen=True, slots=True)
class Poll:
    """The application called poll(); ``positions`` are its consumed positions (partition ->
    next offset), read during this call only."""

    positions: Mapping[str, int] = field(default_factory=_no_positions)


@dataclass(frozen=True, slots=True)
class PollReturned:
    """poll() returned records; the application processes them outside poll until its next Poll."""


@dataclass(frozen=True, slots=True)
class AutoCommitDue:
    """The auto-commit a continuously polling application made at ``tick_ms`` (positions then)."""

    tick_ms: int
    positions: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Subscribe:
    topics: tuple[str, ...] = ()
    pattern: str | None = None


@dataclass(frozen=True, slots=True)
class MetadataUpdate:
    """A metadata refresh: topic -> partition count."""

    topics: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class PartitionLoadsMeasured:
    """What the application measured of each partition's load (topic -> one load per partition,
    any non-negative unit: records/s, bytes/s); the next assignment this member makes as leader
    passes them to the assignor (``GroupSnapshot.partition_loads``; ``load-aware`` reads them)."""

    loads: Mapping[str, tuple[float, ...]]


@dataclass(frozen=True, slots=True)
class Close:
    """KafkaConsumer.close(): commit (auto-commit), revoke, LeaveGroup (dynamic members)."""

    positions: Mapping[str, int] = field(default_factory=_no_positions)


@dataclass(frozen=True, slots=True)
class HeartbeatDue:
    pass


@dataclass(frozen=True, slots=True)
class PollIntervalExpired:
    """max.poll.interval.ms may have passed since the last poll."""


@dataclass(frozen=True, slots=True)
class RetryJoin:
    """retry.backoff.ms after a failed JoinGroup/SyncGroup."""


@dataclass(frozen=True, slots=True)
class RetryFetch:
    """retry.backoff.ms after a failed OffsetFetch."""


@dataclass(frozen=True, slots=True)
class RetryFindCoordinator:
    """retry.backoff.ms after a failed FindCoordinator."""


class ApiKey(Enum):
    """The requests a consumer sends (Kafka's ApiKeys), for in-flight bookkeeping."""

    FIND_COORDINATOR = "FindCoordinator"
    JOIN_GROUP = "JoinGroup"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    OFFSET_COMMIT = "OffsetCommit"
    OFFSET_FETCH = "OffsetFetch"
    LEAVE_GROUP = "LeaveGroup"


@dataclass(frozen=True, slots=True)
class RequestTimedOut:
    """The oldest in-flight ``api`` request got no response within its timeout
    (request.timeout.ms; JoinGroup: max(request.timeout.ms, rebalance.timeout.ms + 5000))."""

    api: ApiKey


ConsumerTimer = (HeartbeatDue | PollIntervalExpired | RetryJoin | RetryFetch | RetryFindCoordinator
                 | RequestTimedOut)
AppInput = Poll | PollReturned | AutoCommitDue | Subscribe | MetadataUpdate | PartitionLoadsMeasured | Close
ConsumerInput = ResponseReceived | AppInput | ConsumerTimer


# --------------------------------------------------------------------------- outputs

@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request`` to broker ``node_id`` (ANY_BROKER: the least loaded one)."""

    request: GroupRequest | FindCoordinatorRequest
    node_id: int


@dataclass(frozen=True, slots=True)
class PartitionsRevoked:
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionsAssigned:
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionsLost:
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommittedOffsetsFetched:
    """Where consumption of these newly assigned partitions starts (-1: nothing committed)."""

    offsets: tuple[PartitionOffset, ...]


@dataclass(frozen=True, slots=True)
class LeftGroup:
    reason: str


@dataclass(frozen=True, slots=True)
class Fatal:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Close the connection to broker ``node_id`` (NetworkClient, on a request timeout): the
    responses still on their way over it are never read."""

    node_id: int


ListenerCallback = PartitionsRevoked | PartitionsAssigned | PartitionsLost
ConsumerOutput = (Send | ListenerCallback | CommittedOffsetsFetched | LeftGroup | Fatal | Disconnect
                  | ArmTimer[ConsumerTimer] | CancelTimer[ConsumerTimer])
