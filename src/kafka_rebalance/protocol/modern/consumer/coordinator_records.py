"""The ``__consumer_offsets`` records a consumer group's coordinator writes (Kafka's
``GroupCoordinatorRecordHelpers``), as typed values, and their compaction.

Kafka writes every change of a consumer group as records in the same operation that makes it
(``CoordinatorResult(records, response)``); a new coordinator rebuilds the group by replaying
them (``GroupMetadataManager.replay``). Each record has a key: the last value written under a
key is the one that counts, and a tombstone (a key with no value) removes the key, as log
compaction does. The kinds (Kafka 4.1):

- ``ConsumerGroupMetadataRecord``: ConsumerGroupMetadataKey/Value, the group epoch, and the
  subscribed topics' metadata the epoch was computed from (Kafka 4.1 stores a hash of it in the
  same value, ``metadataHash``; earlier versions the ConsumerGroupPartitionMetadata record).
- ``ConsumerGroupMemberMetadataRecord``: ConsumerGroupMemberMetadataKey/Value, a member's
  subscription, instance id, rack, client, rebalance timeout, server assignor and, for a member
  on the classic protocol, its session timeout and protocols (``ClassicMemberMetadata``).
- ``ConsumerGroupTargetAssignmentMemberRecord``: ConsumerGroupTargetAssignmentMemberKey/Value,
  one member's target (written only for members whose target changed, as Kafka's
  ``TargetAssignmentBuilder`` does).
- ``ConsumerGroupTargetAssignmentMetadataRecord``: ConsumerGroupTargetAssignmentMetadataValue,
  the assignment epoch.
- ``ConsumerGroupCurrentMemberAssignmentRecord``: ConsumerGroupCurrentMemberAssignmentKey/Value,
  a member's epochs, state, assigned and revoking partitions.
- ``ConsumerGroupTombstone``: any of those keys deleted (a member leaving, the group converted).

Committed offsets are the classic protocol's ``OffsetCommitRecord`` (``protocol/classic``): the
same records whatever the group's type, which is why they survive a conversion.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TypeAlias

from kafka_rebalance.protocol.classic.coordinator_events import OffsetCommitRecord
from kafka_rebalance.protocol.modern.consumer.assignment import MemberAssignment, Partitions


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """A member that speaks the classic protocol inside a consumer group (Kafka's
    ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``)."""

    session_timeout_ms: int
    protocols: tuple[str, ...]


class RecordKind(Enum):
    """The key type of a consumer group record (what a tombstone deletes)."""

    GROUP_METADATA = "ConsumerGroupMetadata"
    MEMBER_METADATA = "ConsumerGroupMemberMetadata"
    TARGET_ASSIGNMENT_MEMBER = "ConsumerGroupTargetAssignmentMember"
    TARGET_ASSIGNMENT_METADATA = "ConsumerGroupTargetAssignmentMetadata"
    CURRENT_MEMBER_ASSIGNMENT = "ConsumerGroupCurrentMemberAssignment"


RecordKey: TypeAlias = tuple[RecordKind, str, str | None]
"""(kind, group id, member id or None for the group's own records)."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataRecord:
    group_id: str
    epoch: int
    subscription_metadata: tuple[tuple[str, int], ...]  # topic -> partition count, topics ascending

    @property
    def key(self) -> RecordKey:
        return RecordKind.GROUP_METADATA, self.group_id, None


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataRecord:
    group_id: str
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    classic: ClassicMemberMetadata | None

    @property
    def key(self) -> RecordKey:
        return RecordKind.MEMBER_METADATA, self.group_id, self.member_id


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberRecord:
    group_id: str
    member_id: str
    partitions: Partitions

    @property
    def key(self) -> RecordKey:
        return RecordKind.TARGET_ASSIGNMENT_MEMBER, self.group_id, self.member_id


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataRecord:
    group_id: str
    assignment_epoch: int

    @property
    def key(self) -> RecordKey:
        return RecordKind.TARGET_ASSIGNMENT_METADATA, self.group_id, None


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentRecord:
    group_id: str
    member_id: str
    assignment: MemberAssignment

    @property
    def key(self) -> RecordKey:
        return RecordKind.CURRENT_MEMBER_ASSIGNMENT, self.group_id, self.member_id


@dataclass(frozen=True, slots=True)
class ConsumerGroupTombstone:
    """The key ``kind``/``group_id``/``member_id`` deleted (Kafka: the key with a null value)."""

    kind: RecordKind
    group_id: str
    member_id: str | None = None

    @property
    def key(self) -> RecordKey:
        return self.kind, self.group_id, self.member_id


ConsumerGroupRecord: TypeAlias = (ConsumerGroupMetadataRecord | ConsumerGroupMemberMetadataRecord
                                  | ConsumerGroupTargetAssignmentMemberRecord
                                  | ConsumerGroupTargetAssignmentMetadataRecord
                                  | ConsumerGroupCurrentMemberAssignmentRecord | ConsumerGroupTombstone)
ConsumerGroupValue: TypeAlias = (ConsumerGroupMetadataRecord | ConsumerGroupMemberMetadataRecord
                                 | ConsumerGroupTargetAssignmentMemberRecord
                                 | ConsumerGroupTargetAssignmentMetadataRecord
                                 | ConsumerGroupCurrentMemberAssignmentRecord)


@dataclass(frozen=True, slots=True)
class PersistConsumerGroup:
    """Append ``record`` to the group's ``__consumer_offsets`` partition (the consumer group's
    analogue of the classic coordinator's ``Persist``)."""

    record: ConsumerGroupRecord | OffsetCommitRecord


def member_tombstones(group_id: str, member_id: str) -> tuple[ConsumerGroupTombstone, ...]:
    """A member removed (Kafka's ``removeMember``: current assignment, target, subscription)."""
    return (ConsumerGroupTombstone(RecordKind.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
            ConsumerGroupTombstone(RecordKind.TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
            ConsumerGroupTombstone(RecordKind.MEMBER_METADATA, group_id, member_id))


def group_tombstones(group_id: str, member_ids: Iterable[str]) -> list[ConsumerGroupTombstone]:
    """The whole group deleted or converted (Kafka's ``ConsumerGroup.createGroupTombstoneRecords``):
    every member's records, then the target assignment metadata and the group epoch."""
    out = [tombstone for member_id in member_ids for tombstone in member_tombstones(group_id, member_id)]
    out.append(ConsumerGroupTombstone(RecordKind.TARGET_ASSIGNMENT_METADATA, group_id))
    out.append(ConsumerGroupTombstone(RecordKind.GROUP_METADATA, group_id))
    return out


__all__ = [
    "ClassicMemberMetadata", "ConsumerGroupCurrentMemberAssignmentRecord", "ConsumerGroupMemberMetadataRecord",
    "ConsumerGroupMetadataRecord", "ConsumerGroupRecord", "ConsumerGroupTargetAssignmentMemberRecord",
    "ConsumerGroupTargetAssignmentMetadataRecord", "ConsumerGroupTombstone", "ConsumerGroupValue",
    "PersistConsumerGroup", "RecordKey", "RecordKind", "group_tombstones", "member_tombstones",
]
