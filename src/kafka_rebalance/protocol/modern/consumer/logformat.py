"""A consumer group's broker log lines, as Kafka 3.7+/4.x's new group coordinator prints them
(the INFO format strings of ``GroupMetadataManager``, logged through the shard's LogContext).

Line shape (log4j ``[%d] %p %m (%c)%n``)::

    [2024-01-01 00:00:05,002] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] [GroupId g] Bumped group epoch to 3. (org.apache.kafka.coordinator.group.GroupMetadataManager)

The messages are Kafka's format strings with their arguments, byte for byte, including the
fencing line's double full stop (``because {}.`` with a reason that ends in a full stop).
``ConsumerMemberAssignmentUpdated`` is Kafka's DEBUG line (written only with ``debug=True``;
partitions as ``assignmentToString`` prints them, ``<topic id>-<n>``, the topic id derived from
the name as ``assignors.server.topic_ids`` does) and ``ConsumerGroupStateChanged`` is not
logged at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from kafka_rebalance.protocol.logline import DEFAULT_EPOCH, OFFSETS_TOPIC, epoch_ms, format_timestamp
from kafka_rebalance.protocol.logrecords import (
    ConsumerGroupConverted,
    ConsumerGroupEpochBumped,
    ConsumerGroupLoaded,
    ConsumerGroupLogRecord,
    ConsumerGroupStateChanged,
    ConsumerMemberAssignmentUpdated,
    ConsumerMemberFenced,
    ConsumerMemberJoined,
    ConsumerMemberLeft,
    ConsumerStaticMemberReplaced,
    ConsumerTargetAssignmentComputed,
)

GROUP_METADATA_MANAGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"


def assignment_to_string(partitions: tuple[str, ...]) -> str:
    """Kafka's ``Utils.assignmentToString``: ``[<topic id>-<n>, ...]``."""
    from kafka_rebalance.assignors.server.topic_ids import derived_topic_id, format_topic_id

    parts = []
    for partition in partitions:
        topic, _, number = partition.rpartition("-")
        parts.append(f"{format_topic_id(derived_topic_id(topic))}-{number}")
    return "[" + ", ".join(parts) + "]"


def assignment_state_message(record: ConsumerMemberAssignmentUpdated) -> str:
    return (f"[GroupId {record.group_id}] Member {record.member_id} new assignment state: epoch={record.epoch}, "
            f"previousEpoch={record.previous_epoch}, state={record.state}, "
            f"assignedPartitions={assignment_to_string(record.assigned)} and "
            f"revokedPartitions={assignment_to_string(record.revoking)}.")


def consumer_group_message(record: ConsumerGroupLogRecord) -> str | None:
    """The INFO message of a record (None: Kafka does not log it at INFO)."""
    g = record.group_id
    match record:
        case ConsumerGroupEpochBumped(epoch=epoch):
            return f"[GroupId {g}] Bumped group epoch to {epoch}."
        case ConsumerTargetAssignmentComputed(epoch=epoch, assignor=assignor, assignor_time_ms=took):
            return f"[GroupId {g}] Computed a new target assignment for epoch {epoch} with '{assignor}' assignor in {took}ms."
        case ConsumerMemberJoined(member_id=member, instance_id=None, protocol=protocol):
            return f"[GroupId {g}] Member {member} joins the consumer group using the {protocol} protocol."
        case ConsumerMemberJoined(member_id=member, instance_id=instance, protocol=protocol):
            return (f"[GroupId {g}] Static member {member} with instance id {instance} joins the consumer group "
                    f"using the {protocol} protocol.")
        case ConsumerStaticMemberReplaced(instance_id=instance, protocol=protocol, member_id=member,
                                          replaced_member_id=replaced):
            return (f"[GroupId {g}] Static member with instance id {instance} re-joins the consumer group using the "
                    f"{protocol} protocol. Created a new member {member} to replace the existing member {replaced}.")
        case ConsumerMemberLeft(member_id=member, instance_id=None):
            return f"[GroupId {g}] Member {member} left the consumer group."
        case ConsumerMemberLeft(member_id=member, instance_id=instance, temporarily=True):
            return f"[GroupId {g}] Static Member {member} with instance id {instance} temporarily left the consumer group."
        case ConsumerMemberLeft(member_id=member, instance_id=instance):
            return f"[GroupId {g}] Static Member {member} with instance id {instance} left the consumer group."
        case ConsumerMemberFenced(member_id=member, reason=reason):
            return f"[GroupId {g}] Member {member} fenced from the group because {reason}."
        case ConsumerGroupConverted(direction="upgrade"):
            return f"[GroupId {g}] Converted the classic group to a consumer group."
        case ConsumerGroupConverted():
            return f"[GroupId {g}] Converted the consumer group to a classic group."
        case ConsumerGroupLoaded(members=members):
            return f"Loaded consumer group {g} with {members} members."
        case ConsumerMemberAssignmentUpdated() | ConsumerGroupStateChanged():
            return None
        case _:
            assert_never(record)


def format_consumer_group_line(record: ConsumerGroupLogRecord, *, broker_id: int, partition: int,
                               epoch: datetime = DEFAULT_EPOCH, debug: bool = False) -> str | None:
    """One log line (None: not logged at the chosen level)."""
    level = "INFO"
    message = consumer_group_message(record)
    if message is None and debug and isinstance(record, ConsumerMemberAssignmentUpdated):
        level, message = "DEBUG", assignment_state_message(record)
    if message is None:
        return None
    prefix = f"[GroupCoordinator id={broker_id} topic={OFFSETS_TOPIC} partition={partition}] "
    return f"[{format_timestamp(epoch_ms(epoch) + record.time_ms)}] {level} {prefix}{message} ({GROUP_METADATA_MANAGER})"
