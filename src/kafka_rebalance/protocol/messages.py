"""Requests and responses of the classic group protocol, and Kafka's error codes.

Partitions travel as Kafka's ``TopicPartition.toString()`` strings (``"t0-1"``). Messages are
plain slotted dataclasses: the state machines create many heartbeats, so they stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Errors(IntEnum):
    """Kafka protocol error codes (kafka-facts.md)."""

    NONE = 0
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82


UNKNOWN_MEMBER = ""
NO_GENERATION = -1


@dataclass(slots=True)
class Subscription:
    """ConsumerProtocolSubscription v2: topics, owned partitions and their generation, plus each
    protocol's (assignor's) user data: JoinGroup carries one metadata blob per protocol, and the
    leader reads the one of the protocol the vote chose."""

    topics: tuple[str, ...]
    owned: tuple[str, ...] = ()
    generation: int = NO_GENERATION
    user_data: tuple[tuple[str, bytes], ...] = ()

    def user_data_for(self, protocol: str | None) -> bytes | None:
        return dict(self.user_data).get(protocol) if protocol else None


@dataclass(slots=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[str, ...]  # assignor names in preference order
    subscription: Subscription
    group_instance_id: str | None = None
    client_id: str = "consumer"
    reason: str | None = None


@dataclass(slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    subscription: Subscription


@dataclass(slots=True)
class JoinGroupResponse:
    error: Errors
    generation: int = NO_GENERATION
    protocol_name: str | None = None
    leader: str = UNKNOWN_MEMBER
    member_id: str = UNKNOWN_MEMBER
    members: tuple[JoinGroupMember, ...] = ()  # only the leader's response carries them


@dataclass(slots=True)
class SyncGroupRequest:
    group_id: str
    member_id: str
    generation: int
    group_instance_id: str | None = None
    assignments: dict[str, tuple[str, ...]] = field(default_factory=dict)  # leader only


@dataclass(slots=True)
class SyncGroupResponse:
    error: Errors
    assignment: tuple[str, ...] = ()
    protocol_name: str | None = None


@dataclass(slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    generation: int
    group_instance_id: str | None = None


@dataclass(slots=True)
class HeartbeatResponse:
    error: Errors


@dataclass(slots=True)
class LeaveGroupRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None = None
    reason: str = "the consumer is being closed"


@dataclass(slots=True)
class LeaveGroupResponse:
    error: Errors


@dataclass(slots=True)
class OffsetCommitRequest:
    group_id: str
    member_id: str
    generation: int
    offsets: dict[str, int]
    group_instance_id: str | None = None


@dataclass(slots=True)
class OffsetCommitResponse:
    error: Errors
    offsets: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[str, ...]


@dataclass(slots=True)
class OffsetFetchResponse:
    error: Errors
    offsets: dict[str, int] = field(default_factory=dict)  # -1: nothing committed


Request = (JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest | OffsetCommitRequest
           | OffsetFetchRequest)
Response = (JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse | OffsetCommitResponse
            | OffsetFetchResponse)
