r"""Kafka GroupCoordinator log lines: one formatter per Kafka log format.

Line shape (Kafka's default log4j layout ``[%d] %p %m (%c)%n``)::

    [2019-07-17 15:20:37,266] INFO [GroupCoordinator 0]: <message> (kafka.coordinator.group.GroupCoordinator)
    [2024-05-01 10:00:03,050] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] <message> (kafka.coordinator.group.GroupCoordinator)

The first is the legacy coordinator prefix (GroupCoordinator.scala, Kafka 0.10-3.x), the second
the modern one (the new group coordinator, 3.7+/4.x; a consumer group's lines are
``modern/consumer/logformat``'s). ``kafka-rebalance logs`` reads every line written here
(``pipeline/logparse``; tests/pipeline/logs read the simulator's lines back through it).
"""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from kafka_rebalance.protocol import logrecords as lr
from kafka_rebalance.protocol.logline import DEFAULT_EPOCH, OFFSETS_TOPIC, epoch_ms, format_timestamp
from kafka_rebalance.protocol.logrecords import (
    AssignmentReceived,
    ClassicGroupLogRecord,
    GroupEmpty,
    LogRecord,
    MemberFailed,
    MemberLeft,
    PreparingRebalance,
    Stabilized,
)
from kafka_rebalance.protocol.modern.consumer.logformat import format_consumer_group_line

MODERN = "modern"
LEGACY = "legacy"
# Brokers before KIP-345-era logging: no state, no reason, no member count (as in seed 002).
LEGACY_OLD = "legacy-old"
STYLES = (MODERN, LEGACY, LEGACY_OLD)

LOGGER = "kafka.coordinator.group.GroupCoordinator"


def format_line(epoch_millis: int, message: str, *, broker_id: int = 0, partition: int = 0, style: str = MODERN) -> str:
    """Wrap a message in the broker's line shape for the given coordinator style."""
    if style == MODERN:
        prefix = f"[GroupCoordinator id={broker_id} topic={OFFSETS_TOPIC} partition={partition}] "
    elif style in (LEGACY, LEGACY_OLD):
        prefix = f"[GroupCoordinator {broker_id}]: "
    else:
        raise ValueError(f"unknown log style {style!r} (known: {', '.join(STYLES)})")
    return f"[{format_timestamp(epoch_millis)}] INFO {prefix}{message} ({LOGGER})"


def preparing_rebalance_message(group: str, state: str | None, old_generation: int, reason: str | None,
                                partition: int, style: str = MODERN) -> str:
    if style == MODERN:
        return f"Preparing to rebalance group {group} in state {state} with old generation {old_generation} (reason: {reason})."
    if style == LEGACY:
        suffix = f" (reason: {reason})" if reason else ""
        return (f"Preparing to rebalance group {group} in state {state} with old generation {old_generation} "
                f"({OFFSETS_TOPIC}-{partition}){suffix}")
    return f"Preparing to rebalance group {group} with old generation {old_generation} ({OFFSETS_TOPIC}-{partition})"


def stabilized_message(group: str, generation: int, members: int, partition: int, style: str = MODERN) -> str:
    if style == MODERN:
        return f"Stabilized group {group} generation {generation} with {members} members."
    if style == LEGACY:
        return f"Stabilized group {group} generation {generation} ({OFFSETS_TOPIC}-{partition}) with {members} members"
    return f"Stabilized group {group} generation {generation} ({OFFSETS_TOPIC}-{partition})"


def assignment_received_message(group: str, generation: int, leader: str, members: int, static_members: int,
                                style: str = MODERN) -> str:
    if style == MODERN:
        return (f"Assignment received from leader {leader} for group {group} for generation {generation}. "
                f"The group has {members} members, {static_members} of which are static.")
    return f"Assignment received from leader for group {group} for generation {generation}"


def member_failed_message(group: str, member: str, style: str = MODERN) -> str:
    if style == MODERN:
        return f"Member {member} in group {group} has failed, removing it from the group."
    return f"Member {member} in group {group} has failed, removing it from the group"


def member_left_message(group: str, member: str, reason: str) -> str:
    """Only the modern coordinator logs explicit LeaveGroup requests at INFO."""
    return f"[Group {group}] Member {member} has left group through explicit `LeaveGroup` request; client reason: {reason}"


def group_empty_message(group: str, generation: int, partition: int, style: str = MODERN) -> str:
    if style == MODERN:
        return f"Group {group} with generation {generation} is now empty."
    return f"Group {group} with generation {generation} is now empty ({OFFSETS_TOPIC}-{partition})"


class LogFormatter:
    """Renders coordinator log records as the lines of one Kafka log format (``style``)."""

    style: str = MODERN

    def message(self, record: ClassicGroupLogRecord, partition: int) -> str | None:
        """The message of ``record`` (None for a record kind this format does not log)."""
        style, group = self.style, record.group_id
        match record:
            case PreparingRebalance():
                return preparing_rebalance_message(group, record.state, record.old_generation, record.reason, partition,
                                                   style)
            case Stabilized():
                return stabilized_message(group, record.generation, len(record.member_ids), partition, style)
            case AssignmentReceived():
                return assignment_received_message(group, record.generation, record.leader, len(record.assignment),
                                                   record.static_members, style)
            case MemberFailed():
                return member_failed_message(group, record.member_id, style)
            case MemberLeft():
                # Only the new coordinator logs an explicit LeaveGroup at INFO.
                return member_left_message(group, record.member_id, record.reason) if style == MODERN else None
            case GroupEmpty():
                return group_empty_message(group, record.generation, partition, style)
            case _:
                assert_never(record)

    def format(self, record: LogRecord, *, broker_id: int, partition: int, epoch: datetime = DEFAULT_EPOCH) -> str | None:
        """The line of ``record`` (None for a record kind this format does not log)."""
        match record:
            case (PreparingRebalance() | Stabilized() | AssignmentReceived() | MemberFailed() | MemberLeft()
                  | GroupEmpty()):
                message = self.message(record, partition)
                if message is None:
                    return None
                return format_line(epoch_ms(epoch) + record.time_ms, message, broker_id=broker_id,
                                   partition=partition, style=self.style)
            case (lr.ConsumerGroupEpochBumped() | lr.ConsumerTargetAssignmentComputed() | lr.ConsumerMemberJoined()
                  | lr.ConsumerStaticMemberReplaced() | lr.ConsumerMemberLeft() | lr.ConsumerMemberFenced()
                  | lr.ConsumerMemberAssignmentUpdated() | lr.ConsumerGroupStateChanged()
                  | lr.ConsumerGroupConverted() | lr.ConsumerGroupLoaded()):
                if self.style != MODERN:
                    return None  # consumer groups exist only on the new coordinator
                return format_consumer_group_line(record, broker_id=broker_id, partition=partition, epoch=epoch,
                                                  debug=True)
            case _:
                assert_never(record)


class ModernFormatter(LogFormatter):
    """Kafka 3.7+/4.x new group coordinator: ``[GroupCoordinator id=N topic=__consumer_offsets partition=P]``."""

    style = MODERN


class LegacyFormatter(LogFormatter):
    """Kafka 2.x-3.x GroupCoordinator.scala: ``[GroupCoordinator N]:``, partition as a suffix."""

    style = LEGACY


class LegacyOldFormatter(LogFormatter):
    """Kafka 0.10-2.x before KIP-345-era logging: no state, reason or member counts."""

    style = LEGACY_OLD


FORMATTERS: dict[str, LogFormatter] = {f.style: f for f in (ModernFormatter(), LegacyFormatter(), LegacyOldFormatter())}


def formatter(style: str) -> LogFormatter:
    try:
        return FORMATTERS[style]
    except KeyError:
        raise ValueError(f"unknown log style {style!r} (known: {', '.join(STYLES)})") from None


def format_record(record: LogRecord, *, broker_id: int, partition: int, style: str = MODERN,
                  epoch: datetime = DEFAULT_EPOCH) -> str | None:
    """Format one coordinator log record as a line of the given style (None: not logged there)."""
    return formatter(style).format(record, broker_id=broker_id, partition=partition, epoch=epoch)
