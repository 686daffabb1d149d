"""The coordinator's log records as typed events: what happened, not how a broker prints it.

``protocol.logformat`` has one formatter per Kafka log format and renders each record kind
below; the log parsers read the same kinds back. The list of record kinds exists once, here:
``RECORD_TYPES`` (and ``KIND`` on each class, the name the parsers and the pipeline use).

Every record carries the virtual time it happened (``time_ms``) and its ``group_id``; the
broker id and ``__consumer_offsets`` partition are properties of the coordinator that wrote the
line, so the formatter takes them as context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kafka_rebalance.model import GroupProtocol


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    member_id: str
    partitions: tuple[str, ...]  # TopicPartition.toString() ("t0-1")


@dataclass(frozen=True, slots=True)
class PreparingRebalance:
    """``Preparing to rebalance group G in state S with old generation N (reason: R)``."""

    KIND: ClassVar[str] = "preparing_rebalance"
    time_ms: int
    group_id: str
    state: str  # the group state the rebalance started from, as Kafka prints it ("Stable")
    old_generation: int
    reason: str


@dataclass(frozen=True, slots=True)
class Stabilized:
    """``Stabilized group G generation N with M members`` (the join phase completed)."""

    KIND: ClassVar[str] = "stabilized"
    time_ms: int
    group_id: str
    generation: int
    member_ids: tuple[str, ...]  # in join order
    leader: str
    protocol_name: str | None


@dataclass(frozen=True, slots=True)
class AssignmentReceived:
    """``Assignment received from leader L for group G for generation N ...`` (group Stable)."""

    KIND: ClassVar[str] = "assignment_received"
    time_ms: int
    group_id: str
    generation: int
    leader: str
    static_members: int
    assignment: tuple[MemberAssignment, ...]  # every member of the generation, in join order


@dataclass(frozen=True, slots=True)
class MemberFailed:
    """``Member M in group G has failed, removing it from the group`` (session or join/sync expiry)."""

    KIND: ClassVar[str] = "member_failed"
    time_ms: int
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class MemberLeft:
    """An explicit LeaveGroup (only the 3.7+/4.x coordinator logs it at INFO)."""

    KIND: ClassVar[str] = "member_left"
    time_ms: int
    group_id: str
    member_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class GroupEmpty:
    """``Group G with generation N is now empty``."""

    KIND: ClassVar[str] = "group_empty"
    time_ms: int
    group_id: str
    generation: int


# --------------------------------------------------------------------------- KIP-848 consumer groups
# Written by protocol/modern/consumer: the consumer-group lines of GroupMetadataManager (4.x).


class ConsumerGroupRecord:
    """Base of the consumer-group records: ``case ConsumerGroupRecord():`` matches them all."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupEpochBumped(ConsumerGroupRecord):
    """``[GroupId {}] Bumped group epoch to {}.``"""

    KIND: ClassVar[str] = "consumer_group_epoch_bumped"
    time_ms: int
    group_id: str
    epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerTargetAssignmentComputed(ConsumerGroupRecord):
    """``[GroupId {}] Computed a new target assignment for epoch {} with '{}' assignor in {}ms.``"""

    KIND: ClassVar[str] = "consumer_target_assignment_computed"
    time_ms: int
    group_id: str
    epoch: int
    assignor: str
    assignor_time_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerMemberJoined(ConsumerGroupRecord):
    """``[GroupId {}] Member {} joins the consumer group using the {} protocol.`` (and the static
    variant ``Static member {} with instance id {} joins ...``)."""

    KIND: ClassVar[str] = "consumer_member_joined"
    time_ms: int
    group_id: str
    member_id: str
    instance_id: str | None
    protocol: GroupProtocol


@dataclass(frozen=True, slots=True)
class ConsumerStaticMemberReplaced(ConsumerGroupRecord):
    """``[GroupId {}] Static member with instance id {} re-joins the consumer group using the {}
    protocol. Created a new member {} to replace the existing member {}.``"""

    KIND: ClassVar[str] = "consumer_static_member_replaced"
    time_ms: int
    group_id: str
    instance_id: str
    protocol: GroupProtocol
    member_id: str
    replaced_member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerMemberLeft(ConsumerGroupRecord):
    """``[GroupId {}] Member {} left the consumer group.`` / ``Static Member {} with instance id {}
    left the consumer group.`` / ``... temporarily left the consumer group.`` (``temporarily``)."""

    KIND: ClassVar[str] = "consumer_member_left"
    time_ms: int
    group_id: str
    member_id: str
    instance_id: str | None
    temporarily: bool


@dataclass(frozen=True, slots=True)
class ConsumerMemberFenced(ConsumerGroupRecord):
    """``[GroupId {}] Member {} fenced from the group because {}.`` (session expiry), or because
    ``it failed to transition from epoch {} within {}ms.`` (rebalance timeout)."""

    KIND: ClassVar[str] = "consumer_member_fenced"
    time_ms: int
    group_id: str
    member_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ConsumerMemberAssignmentUpdated(ConsumerGroupRecord):
    """``[GroupId {}] Member {} new assignment state: epoch={}, previousEpoch={}, state={},
    assignedPartitions={} and revokedPartitions={}.`` (Kafka logs it at DEBUG)."""

    KIND: ClassVar[str] = "consumer_member_assignment_updated"
    time_ms: int
    group_id: str
    member_id: str
    epoch: int
    previous_epoch: int
    state: str
    assigned: tuple[str, ...]
    revoking: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupStateChanged(ConsumerGroupRecord):
    """The group's state moved (Kafka records it in its metrics, ``onConsumerGroupStateTransition``;
    there is no log line for it)."""

    KIND: ClassVar[str] = "consumer_group_state_changed"
    time_ms: int
    group_id: str
    old_state: str
    new_state: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupConverted(ConsumerGroupRecord):
    """The online migration: ``upgrade`` (classic -> consumer) or ``downgrade``."""

    KIND: ClassVar[str] = "consumer_group_converted"
    time_ms: int
    group_id: str
    direction: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupLoaded(ConsumerGroupRecord):
    """``Loaded consumer group {} with {} members.`` (``onLoaded``, a new coordinator replayed the group)."""

    KIND: ClassVar[str] = "consumer_group_loaded"
    time_ms: int
    group_id: str
    members: int


ConsumerGroupLogRecord = (
    ConsumerGroupEpochBumped | ConsumerTargetAssignmentComputed | ConsumerMemberJoined | ConsumerStaticMemberReplaced
    | ConsumerMemberLeft | ConsumerMemberFenced | ConsumerMemberAssignmentUpdated | ConsumerGroupStateChanged
    | ConsumerGroupConverted | ConsumerGroupLoaded
)
ClassicGroupLogRecord = PreparingRebalance | Stabilized | AssignmentReceived | MemberFailed | MemberLeft | GroupEmpty
LogRecord = ClassicGroupLogRecord | ConsumerGroupLogRecord

RECORD_TYPES: tuple[type[ClassicGroupLogRecord], ...] = (
    PreparingRebalance, Stabilized, AssignmentReceived, MemberFailed, MemberLeft, GroupEmpty,
)
RECORD_KINDS: tuple[str, ...] = tuple(t.KIND for t in RECORD_TYPES)
# The consumer-group kinds (rendered by protocol/modern/consumer/logformat.py).
CONSUMER_GROUP_RECORD_TYPES: tuple[type[ConsumerGroupLogRecord], ...] = (
    ConsumerGroupEpochBumped, ConsumerTargetAssignmentComputed, ConsumerMemberJoined, ConsumerStaticMemberReplaced,
    ConsumerMemberLeft, ConsumerMemberFenced, ConsumerMemberAssignmentUpdated, ConsumerGroupStateChanged,
    ConsumerGroupConverted, ConsumerGroupLoaded,
)
