r"""Kafka GroupCoordinator log lines: formatting, regex patterns and a pure-Python parser.

Line shape (Kafka's default log4j layout ``[%d] %p %m (%c)%n``)::

    [2019-07-17 15:20:37,266] INFO [GroupCoordinator 0]: <message> (kafka.coordinator.group.GroupCoordinator)
    [2024-05-01 10:00:03,050] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] <message> (kafka.coordinator.group.GroupCoordinator)

The first is the legacy coordinator prefix, the second the modern one (kafka-facts.md).
Leading whitespace is allowed (the seed documents indent their excerpts).

Pattern constants (stable interface; the Spark log analyser imports them for
``regexp_extract``). They are written in the common subset of Java and Python regex:
numbered groups only, no named groups, no possessive quantifiers, no look-behind. An optional
group that did not take part in the match is ``None`` in Python and ``""`` in Spark.

Every pattern starts with the same three groups:

====  ==========================================================================
 1    timestamp ``yyyy-MM-dd HH:mm:ss,SSS`` (broker local time, no zone)
 2    broker id (legacy ``[GroupCoordinator 0]:`` or modern ``id=0``)
 3    ``__consumer_offsets`` partition from the modern prefix (empty for legacy)
====  ==========================================================================

Then, per line kind:

``PREPARING_REBALANCE_PATTERN``
    4 group, 5 state (empty on old brokers), 6 old generation,
    7 ``__consumer_offsets`` partition from a legacy suffix, 8 reason (empty when absent)
``STABILIZED_PATTERN``
    4 group, 5 generation, 6 legacy ``__consumer_offsets`` partition, 7 member count (empty on old brokers)
``ASSIGNMENT_RECEIVED_PATTERN``
    4 leader member id (empty on legacy), 5 group, 6 generation, 7 member count, 8 static member count
``MEMBER_FAILED_PATTERN``
    4 member id, 5 group
``MEMBER_LEFT_PATTERN``
    4 group, 5 member id, 6 client reason
``GROUP_EMPTY_PATTERN``
    4 group, 5 generation, 6 legacy ``__consumer_offsets`` partition

``GROUP_COORDINATOR_LINE_PATTERN`` matches any GroupCoordinator line (groups 1-3 as above, 4 the
message); use it to count lines that belong to the coordinator but are of no known kind.

The ``__consumer_offsets`` partition of a line is group 3 or, for legacy lines, the per-kind
group named above (see ``parse_coordinator_line``, which merges them into ``partition``).

``PATTERNS`` maps each kind name (``preparing_rebalance``, ``stabilized``,
``assignment_received``, ``member_failed``, ``member_left``, ``group_empty``) to its pattern,
and ``GROUP_INDEX`` gives, per kind, the group number of each field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, assert_never

from kafka_rebalance.protocol import logrecords as lr
from kafka_rebalance.protocol.logrecords import (
    RECORD_KINDS,
    AssignmentReceived,
    ClassicGroupLogRecord,
    GroupEmpty,
    LogRecord,
    MemberFailed,
    MemberLeft,
    PreparingRebalance,
    Stabilized,
)

MODERN = "modern"
LEGACY = "legacy"
# Brokers before KIP-345-era logging: no state, no reason, no member count (as in seed 002).
LEGACY_OLD = "legacy-old"
STYLES = (MODERN, LEGACY, LEGACY_OLD)

LOGGER = "kafka.coordinator.group.GroupCoordinator"
OFFSETS_TOPIC = "__consumer_offsets"

# Virtual time 0 of a simulation is printed as this instant unless a caller gives another.
DEFAULT_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)

_TS = r"^\s*\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\] [A-Z]+ "
_PREFIX = _TS + r"\[GroupCoordinator (?:id=)?(\d+)(?: topic=__consumer_offsets partition=(\d+))?\]:? "
# The logger suffix is required so that greedy fields (reasons) stop before it.
_SUFFIX = r" \([A-Za-z0-9_.$]+\)\s*$"

GROUP_COORDINATOR_LINE_PATTERN = _PREFIX + r"(.*?)" + _SUFFIX

PREPARING_REBALANCE_PATTERN = (
    _PREFIX
    + r"Preparing to rebalance group (\S+)(?: in state (\w+))? with old generation (\d+)"
    + r"(?: \(__consumer_offsets-(\d+)\))?(?: \(reason: (.*)\))?\.?"
    + _SUFFIX
)
STABILIZED_PATTERN = (
    _PREFIX
    + r"Stabilized group (\S+) generation (\d+)(?: \(__consumer_offsets-(\d+)\))?(?: with (\d+) members)?\.?"
    + _SUFFIX
)
ASSIGNMENT_RECEIVED_PATTERN = (
    _PREFIX
    + r"Assignment received from leader (?:(\S+) )?for group (\S+) for generation (\d+)"
    + r"(?:\. The group has (\d+) members, (\d+) of which are static)?\.?"
    + _SUFFIX
)
MEMBER_FAILED_PATTERN = _PREFIX + r"Member (\S+) in group (\S+) has failed, removing it from the group\.?" + _SUFFIX
MEMBER_LEFT_PATTERN = (
    _PREFIX + r"\[Group (\S+)\] Member (\S+) has left group through explicit `LeaveGroup` request; client reason: (.*)" + _SUFFIX
)
GROUP_EMPTY_PATTERN = (
    _PREFIX + r"Group (\S+) with generation (\d+) is now empty(?: \(__consumer_offsets-(\d+)\))?\.?" + _SUFFIX
)

# Keyed by the record kinds of ``logrecords`` (the one list of kinds; checked below).
PATTERNS: dict[str, str] = {
    PreparingRebalance.KIND: PREPARING_REBALANCE_PATTERN,
    Stabilized.KIND: STABILIZED_PATTERN,
    AssignmentReceived.KIND: ASSIGNMENT_RECEIVED_PATTERN,
    MemberFailed.KIND: MEMBER_FAILED_PATTERN,
    MemberLeft.KIND: MEMBER_LEFT_PATTERN,
    GroupEmpty.KIND: GROUP_EMPTY_PATTERN,
}
assert tuple(PATTERNS) == RECORD_KINDS, "every log record kind has one pattern"

# Field -> group number, per kind (groups 1-3 are common to all kinds).
_COMMON = {"timestamp": 1, "broker": 2, "prefix_partition": 3}
GROUP_INDEX: dict[str, dict[str, int]] = {
    "preparing_rebalance": {**_COMMON, "group": 4, "state": 5, "old_generation": 6, "suffix_partition": 7, "reason": 8},
    "stabilized": {**_COMMON, "group": 4, "generation": 5, "suffix_partition": 6, "members": 7},
    "assignment_received": {**_COMMON, "leader": 4, "group": 5, "generation": 6, "members": 7, "static_members": 8},
    "member_failed": {**_COMMON, "member": 4, "group": 5},
    "member_left": {**_COMMON, "group": 4, "member": 5, "reason": 6},
    "group_empty": {**_COMMON, "group": 4, "generation": 5, "suffix_partition": 6},
}

_INT_FIELDS = {"broker", "old_generation", "generation", "members", "static_members"}
_COMPILED = {kind: re.compile(p) for kind, p in PATTERNS.items()}
# Cheap dispatch on a fixed phrase before running the full pattern.
_MARKERS = {
    "preparing_rebalance": "Preparing to rebalance group ",
    "stabilized": "Stabilized group ",
    "assignment_received": "Assignment received from leader ",
    "member_failed": " has failed, removing it from the group",
    "member_left": " has left group through explicit `LeaveGroup` request",
    "group_empty": " is now empty",
}


# --------------------------------------------------------------------------- formatting

def format_timestamp(epoch_ms: int) -> str:
    """Kafka's log4j date: ``yyyy-MM-dd HH:mm:ss,SSS`` (we print UTC)."""
    moment = datetime(1970, 1, 1) + timedelta(milliseconds=epoch_ms)
    return f"{moment:%Y-%m-%d %H:%M:%S},{epoch_ms % 1000:03d}"


def epoch_ms(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int((moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1))


def parse_timestamp(text: str) -> int:
    """``yyyy-MM-dd HH:mm:ss,SSS`` -> milliseconds since the epoch, reading the time as UTC."""
    moment = datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return epoch_ms(moment) + int(text[20:23])


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
                from kafka_rebalance.protocol.modern.consumer.logformat import format_consumer_group_line

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


# --------------------------------------------------------------------------- parsing

def parse_coordinator_line(line: str) -> dict[str, Any] | None:
    """Parse one GroupCoordinator line of a known kind; None for anything else.

    Returns ``{"kind", "timestamp" (text), "time_ms" (epoch ms, read as UTC), "broker",
    "partition" (the __consumer_offsets partition or None), "group", ...}`` plus the kind's
    fields of ``GROUP_INDEX`` (ints where numeric, None where absent).
    """
    if "GroupCoordinator" not in line:
        return None
    for kind, marker in _MARKERS.items():
        if marker not in line:
            continue
        match = _COMPILED[kind].match(line)
        if match is None:
            continue
        out: dict[str, Any] = {"kind": kind}
        for name, index in GROUP_INDEX[kind].items():
            value = match.group(index)
            if value == "":
                value = None
            if value is not None and name in _INT_FIELDS:
                value = int(value)
            out[name] = value
        prefix_partition = out.pop("prefix_partition")
        suffix_partition = out.pop("suffix_partition", None)
        partition = prefix_partition if prefix_partition is not None else suffix_partition
        out["partition"] = int(partition) if partition is not None else None
        out["time_ms"] = parse_timestamp(out["timestamp"])
        return out
    return None


def parse_rebalances(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Rebuild the rebalances of every group from coordinator log lines (in file order).

    A rebalance starts at a "Preparing to rebalance" line when none is open for the group; a
    further "Preparing" line while one is open (the rebalance restarted from
    CompletingRebalance) continues it. It ends when the group is Stable again: at the
    leader's "Assignment received" line, or, on logs without that line, the "Stabilized" line;
    or when the group becomes empty. Returns, in order of their start::

        {"group", "start_ms", "end_ms" (None if still open at the end of the log),
         "old_generation", "generation" (None if unknown), "reason", "members",
         "leader", "failed_members": [...], "left_members": [...], "empty": bool}

    ``start_ms``/``end_ms`` are epoch milliseconds of the log's timestamps read as UTC. Lines
    that are not coordinator lines of a known kind are skipped.
    """
    open_by_group: dict[str, dict[str, Any]] = {}
    # Kafka logs a session expiry or a LeaveGroup seen in Stable before the "Preparing" line it
    # causes (same millisecond); such members belong to the rebalance that starts right after.
    departed_outside: dict[str, list[tuple[int, str, str]]] = {}
    done: list[dict[str, Any]] = []
    for line in lines:
        rec = parse_coordinator_line(line)
        if rec is None:
            continue
        group = rec["group"]
        current = open_by_group.get(group)
        kind = rec["kind"]
        if kind == "preparing_rebalance":
            if current is None:
                current = {
                    "group": group, "start_ms": rec["time_ms"], "end_ms": None,
                    "old_generation": rec["old_generation"], "generation": None, "reason": rec["reason"],
                    "members": None, "leader": None, "failed_members": [], "left_members": [], "empty": False,
                }
                for time_ms, departure, member in departed_outside.pop(group, []):
                    if time_ms == rec["time_ms"]:
                        current[departure].append(member)
                open_by_group[group] = current
        elif kind in ("member_failed", "member_left"):
            departure = "failed_members" if kind == "member_failed" else "left_members"
            if current is not None:
                current[departure].append(rec["member"])
            else:
                departed_outside.setdefault(group, []).append((rec["time_ms"], departure, rec["member"]))
        elif kind == "stabilized":
            if current is not None:
                current["generation"] = rec["generation"]
                current["members"] = rec["members"]
                # Old logs have no "Assignment received" for some versions; closing happens there
                # when present, so only remember the time here.
                current["_stabilized_ms"] = rec["time_ms"]
        elif kind == "assignment_received":
            if current is not None:
                current["generation"] = rec["generation"]
                current["leader"] = rec["leader"]
                if rec["members"] is not None:
                    current["members"] = rec["members"]
                current["end_ms"] = rec["time_ms"]
                done.append(_close(current))
                del open_by_group[group]
        elif kind == "group_empty" and current is not None:
            current["generation"] = rec["generation"]
            current["members"] = 0
            current["empty"] = True
            current["end_ms"] = rec["time_ms"]
            done.append(_close(current))
            del open_by_group[group]
    for current in open_by_group.values():
        if "_stabilized_ms" in current:
            current["end_ms"] = current["_stabilized_ms"]
        done.append(_close(current))
    done.sort(key=lambda r: (r["start_ms"], r["group"]))
    return done


def _close(rebalance: dict[str, Any]) -> dict[str, Any]:
    rebalance.pop("_stabilized_ms", None)
    return rebalance
