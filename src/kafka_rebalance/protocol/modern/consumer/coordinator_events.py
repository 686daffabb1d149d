"""Every input and output of the consumer group coordinator (``ConsumerGroupCoordinator``).

Messages follow ``ConsumerGroupHeartbeatRequest.json`` / ``Response.json`` (v1) in snake_case;
``None`` in a request field means what Kafka's null means there: "unchanged since the last
heartbeat". Partitions are keyed by topic name (Kafka: topic Uuid; see ``assignment``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from kafka_rebalance.protocol.classic import coordinator_events as classic
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.modern.consumer.coordinator_records import PersistConsumerGroup

LEAVE_GROUP_MEMBER_EPOCH = -1
"""ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH: the member leaves the group."""
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
"""ConsumerGroupHeartbeatRequest.LEAVE_GROUP_STATIC_MEMBER_EPOCH: a static member leaves for now
and keeps its assignment until it rejoins or its session expires."""
JOIN_GROUP_MEMBER_EPOCH = 0
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
"""ConsumerGroupHeartbeat v1 (Kafka 4.0, KIP-1082): the consumer generates its member id and
sends it in every request; v0 consumers (Kafka 3.7-3.9) join with an empty one."""
CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    client_id: str = "consumer"
    api_version: int = CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error_code: ErrorCode
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[TopicPartitions, ...] | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    """OffsetCommit v9+ as a member of a consumer group sends it: ``generation_id_or_member_epoch``
    is the member epoch."""

    group_id: str
    member_id: str
    generation_id_or_member_epoch: int
    offsets: tuple[tuple[str, int], ...]  # (partition "topic-n", next offset)


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    member_id: str | None
    member_epoch: int
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error_code: ErrorCode
    offsets: tuple[tuple[str, int], ...] = ()  # -1: nothing committed


# A consumer group also answers its members that still speak the classic protocol (a rolling
# upgrade): JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and OffsetCommit/OffsetFetch below
# version 9 (generation id, no member epoch), as in ``protocol/classic``.
ClassicRequest: TypeAlias = (classic.JoinGroupRequest | classic.SyncGroupRequest | classic.HeartbeatRequest
                             | classic.LeaveGroupRequest | classic.OffsetCommitRequest | classic.OffsetFetchRequest)
ClassicResponse: TypeAlias = (classic.JoinGroupResponse | classic.SyncGroupResponse | classic.HeartbeatResponse
                              | classic.LeaveGroupResponse | classic.OffsetCommitResponse
                              | classic.OffsetFetchResponse)
Request: TypeAlias = ConsumerGroupHeartbeatRequest | OffsetCommitRequest | OffsetFetchRequest | ClassicRequest
Response: TypeAlias = ConsumerGroupHeartbeatResponse | OffsetCommitResponse | OffsetFetchResponse | ClassicResponse


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """A request arrives from ``connection``."""

    connection: str
    request: Request


@dataclass(frozen=True, slots=True)
class SessionTimeout:
    """``group.consumer.session.timeout.ms`` passed without a heartbeat from the member."""

    member_id: str


@dataclass(frozen=True, slots=True)
class RebalanceTimeout:
    """The member did not revoke within its rebalance timeout (armed per epoch; Kafka's
    ``scheduleConsumerGroupRebalanceTimeout``)."""

    member_id: str


@dataclass(frozen=True, slots=True)
class TopicsChanged:
    """A new metadata image: topic -> partition count (topics created, partitions added)."""

    topics: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[str, ...]  # the JoinGroup protocols (assignor names), in preference order
    topics: tuple[str, ...]  # the subscription of the selected protocol's metadata
    assignment: tuple[str, ...]  # "topic-n", the last assignment the member got


@dataclass(frozen=True, slots=True)
class ClassicGroupSnapshot:
    """A classic group as its GroupMetadata record describes it (the online migration's input and output)."""

    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    state: str  # Kafka's ClassicGroupState name: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    members: tuple[ClassicGroupMember, ...]




@dataclass(frozen=True, slots=True)
class ConvertedToClassic:
    """The last consumer-protocol member left: the group is now this classic group, which must
    start a rebalance (``GroupMetadataManager.convertToClassicGroup``). The consumer group is DEAD."""

    classic: ClassicGroupSnapshot


@dataclass(frozen=True, slots=True)
class ClassicJoinTimeout:
    """A classic member told to rejoin did not within its rebalance timeout
    (``scheduleConsumerGroupJoinTimeoutIfAbsent``)."""

    member_id: str


@dataclass(frozen=True, slots=True)
class ClassicSyncTimeout:
    """A classic member that joined did not send SyncGroup within its rebalance timeout
    (``scheduleConsumerGroupSyncTimeout``)."""

    member_id: str


@dataclass(frozen=True, slots=True)
class GroupLoaded:
    """A new coordinator replayed the group from its records (``records.replay``): its timers
    start again (``GroupMetadataManager.onLoaded``)."""


Timer: TypeAlias = SessionTimeout | RebalanceTimeout | ClassicJoinTimeout | ClassicSyncTimeout
Input: TypeAlias = (RequestReceived | SessionTimeout | RebalanceTimeout | ClassicJoinTimeout | ClassicSyncTimeout | TopicsChanged
                    | GroupLoaded)


@dataclass(frozen=True, slots=True)
class Respond:
    connection: str
    response: Response


Output: TypeAlias = Respond | ArmTimer[Timer] | CancelTimer[Timer] | Log | ConvertedToClassic | PersistConsumerGroup
