"""Every input and output of the classic group coordinator (``classic.coordinator``).

Requests and responses are named and shaped as in Kafka's message schemas
(``clients/src/main/resources/common/message/*.json``), in snake_case. Where Kafka carries
bytes, the typed value travels instead: a protocol's ``metadata`` is the
``ConsumerProtocolSubscription`` the consumer encoded, an ``assignment`` is the tuple of
``TopicPartition.toString()`` strings (``"t0-1"``). Throttle times and authorized operations
are left out (the coordinator never throttles here).

Inputs (``CoordinatorInput``): ``RequestReceived(connection, request)``, the coordinator's timers,
and the partition life cycle of ``__consumer_offsets`` (``BeginLoading``, ``LoadCompleted``,
``Resign``), and a consumer group converted back (``ConsumerGroupDowngraded``). Outputs (``CoordinatorOutput``): ``Respond(connection, response)``,
``ArmTimer``/``CancelTimer`` of those timers, ``Log`` records and ``Persist`` (a record
appended to ``__consumer_offsets``, read back by the next coordinator when it loads).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
CONSUMER_PROTOCOL_TYPE = "consumer"


# --------------------------------------------------------------------------- payloads

@dataclass(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    """ConsumerProtocolSubscription v2: topics, the assignor's user data, owned partitions and
    the generation they were owned in."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[str, ...] = ()
    generation_id: int = NO_GENERATION


@dataclass(frozen=True, slots=True)
class JoinGroupRequestProtocol:
    name: str
    metadata: ConsumerProtocolSubscription


@dataclass(frozen=True, slots=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: ConsumerProtocolSubscription


@dataclass(frozen=True, slots=True)
class SyncGroupRequestAssignment:
    member_id: str
    assignment: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """One member of a LeaveGroup v3+ batch (KIP-345)."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    partition: str
    offset: int  # OffsetFetch: -1 when nothing is committed


@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: ConsumerProtocolSubscription | None
    member_assignment: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str  # the selected protocol (assignor) while Stable, else ""
    members: tuple[DescribedGroupMember, ...]


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class DeletableGroupResult:
    group_id: str
    error_code: ErrorCode


# --------------------------------------------------------------------------- requests

@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[JoinGroupRequestProtocol, ...]  # in the member's preference order
    reason: str | None = None
    client_id: str = "consumer"  # the request header's client.id (member ids start with it)
    api_version: int = 9  # the request header's version (v9+: the leader may be told to skip assignment)


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()  # the leader's only


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    """v3+: a batch of members, each by member id and/or group instance id (KIP-345)."""

    group_id: str
    members: tuple[MemberIdentity, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    offsets: tuple[PartitionOffset, ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()  # group states as Kafka names them ("Stable"); empty: all


@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    groups_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FindCoordinatorRequest:
    """Answered by any broker from the placement of the group's ``__consumer_offsets`` partition
    (not by a group coordinator)."""

    key: str
    key_type: int = 0  # 0: group


# --------------------------------------------------------------------------- responses

@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = UNKNOWN_MEMBER_ID
    skip_assignment: bool = False
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[JoinGroupResponseMember, ...] = ()  # the leader's response only


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveGroupResponseMember, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    error_code: ErrorCode  # Kafka repeats it per partition; one group-level answer here
    offsets: tuple[PartitionOffset, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error_code: ErrorCode
    offsets: tuple[PartitionOffset, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...]


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]


@dataclass(frozen=True, slots=True)
class FindCoordinatorResponse:
    error_code: ErrorCode
    node_id: int = -1


GroupRequest = (JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest | OffsetCommitRequest
                | OffsetFetchRequest | DescribeGroupsRequest | ListGroupsRequest | DeleteGroupsRequest)
GroupResponse = (JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse | OffsetCommitResponse
                 | OffsetFetchResponse | DescribeGroupsResponse | ListGroupsResponse | DeleteGroupsResponse)


# --------------------------------------------------------------------------- __consumer_offsets records

@dataclass(frozen=True, slots=True)
class PersistedMember:
    """A member as GroupMetadataValue stores it: only the selected protocol's metadata."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: ConsumerProtocolSubscription
    assignment: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    """GroupMetadataValue: written when a generation's assignment is stored and when the group
    empties (Kafka's storeGroup)."""

    group_id: str
    protocol_type: str | None
    generation: int
    protocol_name: str | None
    leader: str | None
    members: tuple[PersistedMember, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    """The OffsetCommitValue records of one commit (one per partition in Kafka)."""

    group_id: str
    offsets: tuple[PartitionOffset, ...]


@dataclass(frozen=True, slots=True)
class GroupTombstone:
    """The group's metadata deleted (DeleteGroups)."""

    group_id: str


PersistedRecord = GroupMetadataRecord | OffsetCommitRecord | GroupTombstone


# --------------------------------------------------------------------------- inputs

@dataclass(frozen=True, slots=True)
class RequestReceived:
    """A request arrived on ``connection``."""

    connection: str
    request: GroupRequest


@dataclass(frozen=True, slots=True)
class SessionExpired:
    """A member's session deadline passed (heartbeat expiration)."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class PendingMemberExpired:
    """A member id handed out with MEMBER_ID_REQUIRED was not used within the session timeout."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class NewMemberJoinTimeout:
    """KIP-394: a new member that joined and never came back for its JoinGroup response."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class InitialDelayExpired:
    """``group.initial.rebalance.delay.ms`` (or one of its extensions) passed."""

    group_id: str


@dataclass(frozen=True, slots=True)
class RebalanceTimeout:
    """The join phase reached the rebalance timeout."""

    group_id: str


@dataclass(frozen=True, slots=True)
class SyncTimeout:
    """Members of ``generation_id`` that never sent SyncGroup are removed."""

    group_id: str
    generation_id: int


@dataclass(frozen=True, slots=True)
class BeginLoading:
    """This broker became leader of ``__consumer_offsets`` partition ``partition``: its groups
    answer COORDINATOR_LOAD_IN_PROGRESS until ``LoadCompleted``."""

    partition: int


@dataclass(frozen=True, slots=True)
class LoadCompleted:
    """The partition's records are read; groups are rebuilt from them (onGroupLoaded)."""

    partition: int
    records: tuple[PersistedRecord, ...]


@dataclass(frozen=True, slots=True)
class Resign:
    """This broker is no longer the partition's leader: waiting requests and every later one get
    NOT_COORDINATOR (onResignation)."""

    partition: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupDowngraded:
    """A consumer group converted back to this classic group (GroupMetadataManager.convertToClassicGroup):
    the classic group's records (``createClassicGroupRecords``) are loaded as the group, every
    member's heartbeat is rescheduled, and a rebalance starts for ``reason``."""

    partition: int
    records: tuple[PersistedRecord, ...]
    reason: str


CoordinatorTimer = (SessionExpired | PendingMemberExpired | NewMemberJoinTimeout | InitialDelayExpired
                    | RebalanceTimeout | SyncTimeout)
@dataclass(frozen=True, slots=True)
class RebalanceRequested:
    """An operator asks a Stable group to rebalance (serve's control: a test's command). Kafka
    calls ``prepareRebalance`` from inside the coordinator (a member's changed metadata, a
    leader's rejoin); this input reaches the same step from outside, so members learn it as
    they would learn any rebalance: REBALANCE_IN_PROGRESS on their next heartbeat."""

    group_id: str
    reason: str


CoordinatorInput = (RequestReceived | CoordinatorTimer | BeginLoading | LoadCompleted | Resign | ConsumerGroupDowngraded
                    | RebalanceRequested)


# --------------------------------------------------------------------------- outputs

@dataclass(frozen=True, slots=True)
class Respond:
    connection: str
    response: GroupResponse


@dataclass(frozen=True, slots=True)
class Persist:
    """Append a record to the group's ``__consumer_offsets`` partition."""

    partition: int
    record: PersistedRecord


CoordinatorOutput = Respond | ArmTimer[CoordinatorTimer] | CancelTimer[CoordinatorTimer] | Log | Persist
