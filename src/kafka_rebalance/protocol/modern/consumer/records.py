"""A consumer group as ``__consumer_offsets`` holds it, and the group a new coordinator replays
from it (Kafka's ``GroupMetadataManager.replay`` of each record kind, then ``onLoaded``).

Kafka writes every change of a consumer group as records in the same operation that makes it,
so after compaction (the last value per key, tombstones removing keys) the partition holds the
group's state exactly: ``ConsumerGroupRecords`` is that compacted set, one field per record kind.
What is not written is lost when the coordinator moves: timers (the new coordinator arms a
session timeout for every member, classic members included, of ``group.consumer.session.timeout.ms``,
and a rebalance timeout for members still revoking: ``onLoaded``), the classic members' pending
join timeouts, and the metadata refresh deadline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_rebalance.protocol.modern.consumer.assignment import partitions
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupMember,
    ServerAssign,
    default_server_assign,
)


@dataclass(frozen=True, slots=True)
class TargetAssignmentRecord:
    """ConsumerGroupTargetAssignmentMemberValue: one member's target, topic -> partitions."""

    member_id: str
    partitions: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecords:
    """The compacted records of one consumer group (``GroupCoordinatorRecordHelpers``)."""

    group_id: str
    group_epoch: int  # ConsumerGroupMetadataValue
    subscription_metadata: tuple[tuple[str, int], ...]  # ConsumerGroupPartitionMetadataValue: topic -> partitions
    # ConsumerGroupMemberMetadataValue (subscription, instance id, rack, client, rebalance timeout,
    # server assignor, classic protocol metadata) and ConsumerGroupCurrentMemberAssignmentValue
    # (epochs, state, assigned and revoking partitions), per member: both live in ConsumerGroupMember.
    members: tuple[ConsumerGroupMember, ...]
    assignment_epoch: int  # ConsumerGroupTargetAssignmentMetadataValue
    targets: tuple[TargetAssignmentRecord, ...]
    offsets: tuple[tuple[str, int], ...]  # OffsetCommitValue, per partition


def records_of(group: ConsumerGroupCoordinator) -> ConsumerGroupRecords:
    """What the group's writes left in ``__consumer_offsets``."""
    return ConsumerGroupRecords(
        group.group_id, group.group_epoch, tuple(sorted(group.subscription_metadata.items())),
        tuple(group.members.values()), group.assignment_epoch,
        tuple(TargetAssignmentRecord(member_id, tuple((t, tuple(sorted(ps))) for t, ps in sorted(target.items())))
              for member_id, target in group.target.items()),
        tuple(group.offsets.items()))


def replay(records: ConsumerGroupRecords, topics: Mapping[str, int], config: ConsumerGroupConfig | None = None,
           assign: ServerAssign = default_server_assign, seed: int = 0) -> ConsumerGroupCoordinator:
    """The group a new coordinator rebuilds from the records (``GroupMetadataManager.replay``);
    its timers come from ``handle(GroupLoaded(), now)`` (``onLoaded``)."""
    group = ConsumerGroupCoordinator.loaded(
        records.group_id, topics, records.group_epoch, records.assignment_epoch, records.members,
        {t.member_id: partitions(dict(t.partitions)) for t in records.targets}, config=config, assign=assign,
        seed=seed)
    # The stored subscription metadata, not one computed from today's topics: a topic change not
    # yet seen bumps the epoch on the next heartbeat, as it would have on the old coordinator.
    group.subscription_metadata = dict(records.subscription_metadata)
    group.offsets = dict(records.offsets)
    group.metadata_refresh_needed = False  # set by GroupLoaded, as onLoaded's reset deadline does
    return group


__all__ = ["ConsumerGroupRecords", "TargetAssignmentRecord", "records_of", "replay"]
