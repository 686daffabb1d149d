"""The consumer groups a new coordinator rebuilds from the records of its ``__consumer_offsets``
partition (Kafka's ``GroupMetadataManager.replay`` of each record kind, then ``onLoaded``), and
the records that create a consumer group whole (``ConsumerGroup.createConsumerGroupRecords``,
written when a classic group converts).

Kafka writes every change of a consumer group as records in the same operation that makes it
(``coordinator_records``), so the compacted partition holds each group's state exactly. What is
not written is lost when the coordinator moves: timers (the new coordinator arms a session
timeout for every member, classic members included, of ``group.consumer.session.timeout.ms``,
and a rebalance timeout for members still revoking: ``onLoaded``, the ``GroupLoaded`` input),
the classic members' pending join timeouts, and the metadata refresh deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeAlias, assert_never

from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.modern.consumer.assignment import MemberAssignment, Partitions
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupMember,
    ServerAssign,
    default_server_assign,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import (
    ConsumerGroupCurrentMemberAssignmentRecord,
    ConsumerGroupMemberMetadataRecord,
    ConsumerGroupMetadataRecord,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMemberRecord,
    ConsumerGroupTargetAssignmentMetadataRecord,
    ConsumerGroupTombstone,
    ConsumerGroupValue,
    RecordKey,
)

OffsetsTopicRecord: TypeAlias = cl.PersistedRecord | ConsumerGroupRecord
"""Any record of a ``__consumer_offsets`` partition: a classic group's, a consumer group's, an offset."""


def group_records(group: ConsumerGroupCoordinator) -> list[ConsumerGroupRecord]:
    """Every record of ``group`` as it stands (Kafka's ``ConsumerGroup.createConsumerGroupRecords``,
    written by ``convertToConsumerGroup``): members, the group epoch, targets, the assignment
    epoch, current assignments."""
    group_id = group.group_id
    out: list[ConsumerGroupRecord] = [
        ConsumerGroupMemberMetadataRecord(group_id, m.member_id, m.instance_id, m.rack_id, m.client_id,
                                          m.rebalance_timeout_ms, m.subscribed_topic_names, m.subscribed_topic_regex,
                                          m.server_assignor, m.classic)
        for m in group.members.values()]
    out.append(ConsumerGroupMetadataRecord(group_id, group.group_epoch, tuple(group.subscription_metadata.items())))
    out.extend(ConsumerGroupTargetAssignmentMemberRecord(group_id, member_id, target)
               for member_id, target in group.target.items())
    out.append(ConsumerGroupTargetAssignmentMetadataRecord(group_id, group.assignment_epoch))
    out.extend(ConsumerGroupCurrentMemberAssignmentRecord(group_id, m.member_id, m.assignment)
               for m in group.members.values())
    return out


def replay(records: Iterable[OffsetsTopicRecord], topics: Mapping[str, int], config: ConsumerGroupConfig | None = None,
           assign: ServerAssign = default_server_assign, seed: int | Callable[[], int] = 0,
           ) -> tuple[dict[str, ConsumerGroupCoordinator], tuple[cl.PersistedRecord, ...]]:
    """The partition's records in log order -> its consumer groups, rebuilt (each group's timers
    come from ``handle(GroupLoaded(), now)``: ``onLoaded``), and the records of every other group,
    for the classic coordinator's ``LoadCompleted``.

    Each key keeps its last value; a tombstone removes it. A group whose consumer group records
    are live is a consumer group: the classic records written before it converted (its
    GroupMetadata, which ``convertToConsumerGroup`` tombstones) are not replayed, only its
    offsets. A group converted back has its consumer group records tombstoned and is classic.
    ``seed``: where each group's random stream starts (a function: called once per group)."""
    live: dict[RecordKey, ConsumerGroupValue] = {}
    classic: list[cl.PersistedRecord] = []
    for record in records:
        match record:
            case ConsumerGroupTombstone():
                live.pop(record.key, None)
            case (ConsumerGroupMetadataRecord() | ConsumerGroupMemberMetadataRecord()
                  | ConsumerGroupTargetAssignmentMemberRecord() | ConsumerGroupTargetAssignmentMetadataRecord()
                  | ConsumerGroupCurrentMemberAssignmentRecord()):
                live[record.key] = record
            case cl.GroupMetadataRecord() | cl.OffsetCommitRecord() | cl.GroupTombstone():
                classic.append(record)
            case _:
                assert_never(record)
    values: dict[str, list[ConsumerGroupValue]] = {}
    for value in live.values():
        values.setdefault(value.group_id, []).append(value)
    consumer = {group_id for group_id, group_values in values.items()
                if any(type(v) is ConsumerGroupMetadataRecord for v in group_values)}
    offsets: dict[str, dict[str, int]] = {}
    for record in classic:
        if record.group_id not in consumer:
            continue
        match record:
            case cl.OffsetCommitRecord():
                committed = offsets.setdefault(record.group_id, {})
                for entry in record.offsets:
                    committed[entry.partition] = entry.offset
            case cl.GroupTombstone():
                offsets.pop(record.group_id, None)
            case cl.GroupMetadataRecord():
                pass  # the classic group before it converted
            case _:
                assert_never(record)
    groups = {group_id: replay_group(group_id, values[group_id], offsets.get(group_id, {}), topics, config, assign,
                                     seed() if callable(seed) else seed)
              for group_id in sorted(consumer)}
    return groups, tuple(record for record in classic if record.group_id not in consumer)


def replay_group(group_id: str, values: Sequence[ConsumerGroupValue], offsets: Mapping[str, int],
                 topics: Mapping[str, int], config: ConsumerGroupConfig | None = None,
                 assign: ServerAssign = default_server_assign, seed: int = 0) -> ConsumerGroupCoordinator:
    """One consumer group from its live record values, in log order (``GroupMetadataManager.replay``
    per kind: the members in the order their metadata was first written, as the coordinator's
    own map holds them)."""
    epoch, assignment_epoch = 0, 0
    subscription_metadata: tuple[tuple[str, int], ...] = ()
    members: dict[str, ConsumerGroupMemberMetadataRecord] = {}
    current: dict[str, MemberAssignment] = {}
    targets: dict[str, Partitions] = {}
    for value in values:
        match value:
            case ConsumerGroupMetadataRecord():
                epoch, subscription_metadata = value.epoch, value.subscription_metadata
            case ConsumerGroupMemberMetadataRecord():
                members[value.member_id] = value
            case ConsumerGroupTargetAssignmentMemberRecord():
                targets[value.member_id] = value.partitions
            case ConsumerGroupTargetAssignmentMetadataRecord():
                assignment_epoch = value.assignment_epoch
            case ConsumerGroupCurrentMemberAssignmentRecord():
                current[value.member_id] = value.assignment
            case _:
                assert_never(value)
    group = ConsumerGroupCoordinator.loaded(
        group_id, topics, epoch, assignment_epoch,
        [ConsumerGroupMember(m.member_id, m.instance_id, m.rack_id, m.rebalance_timeout_ms, m.client_id,
                             m.subscribed_topic_names, m.subscribed_topic_regex, m.server_assignor,
                             current.get(m.member_id, MemberAssignment()), m.classic)
         for m in members.values()],
        targets, config=config, assign=assign, seed=seed)
    # The stored subscription metadata, not one computed from today's topics: a topic change not
    # yet seen bumps the epoch on the next heartbeat, as it would have on the old coordinator.
    group.subscription_metadata = dict(subscription_metadata)
    group.offsets = dict(offsets)
    group.metadata_refresh_needed = False  # set by GroupLoaded, as onLoaded's reset deadline does
    return group


__all__ = ["OffsetsTopicRecord", "group_records", "replay", "replay_group"]
