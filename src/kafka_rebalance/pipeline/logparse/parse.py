"""One log line -> one event (a dict of the fields of ``EVENT_COLUMNS``), without Spark.

Both engines read their inputs through ``readlog.SplitReader``: the common broker line a
column at a time (``fastparse``, which gives the events this module gives it, tested), every
other line of those ``scan``'s byte-level gate kept through ``parse_numbered`` here.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any, cast

from kafka_rebalance.pipeline.logparse import layout
from kafka_rebalance.pipeline.logparse.catalogue import (
    BROKER_PREFIX,
    GATE_SUBSTRINGS,
    IGNORED_PATTERN,
    JAVA_CLIENT_PREFIX,
    KAFKA_PYTHON_LOGGER,
    LOG_LIKE,
    LOGGER_SUFFIX,
    MESSAGES,
    NOISE_SUBSTRINGS,
    RDKAFKA_PREFIX,
    RELEVANT,
    STREAMS_THREAD,
    Message,
)
from kafka_rebalance.pipeline.logparse.kinds import Library, Side
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.rows import Event

# The fields of an event, in table order, with their types (``schemas``; typed as ``rows.Event``).
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source", "string"), ("seq", "long"), ("cluster", "string"), ("time_ms", "long"), ("kind", "string"),
    ("side", "string"), ("library", "string"), ("group", "string"), ("member", "string"),
    ("generation", "long"), ("old_generation", "long"), ("state", "string"), ("from_state", "string"),
    ("reason", "string"), ("members", "long"), ("static_members", "long"), ("instance_id", "string"),
    ("old_member", "string"), ("membership", "string"), ("partitions", "string"), ("count", "long"),
    ("protocol", "string"), ("assignor", "string"), ("took_ms", "long"), ("partition", "long"),
    ("broker", "long"), ("client_id", "string"), ("pending", "boolean"), ("rejoin", "boolean"),
    ("line", "string"),
)
_LONGS = {name for name, kind in EVENT_COLUMNS if kind == "long"}
_ALIASES = {"member2": "member", "reason2": "reason", "reason3": "reason", "reason4": "reason", "group2": "group",
            "coordinator2": "coordinator"}
_KEEP = {name for name, _ in EVENT_COLUMNS}
LINE_CAP = 600
# The wording of a line, for counting unrecognised lines by shape (``shape``).
SHAPE_LEVEL = r"^.{0,120}?\b(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b[\s:]*"
SHAPE_SUBSTITUTIONS: tuple[tuple[str, str], ...] = (
    (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>"),
    (r"'[^']*'|\"[^\"]*\"", "<s>"),
    (r"\[[^\]]*\]", "[..]"),
    (r"\b[0-9a-fA-F]{12,}\b", "<id>"),
    (r"\d+", "N"),
)
SHAPE_WIDTH = 160
_LEVEL = re.compile(SHAPE_LEVEL)
_SHAPE_SUBS = tuple((re.compile(p), r) for p, r in SHAPE_SUBSTITUTIONS)


_FLAGS = frozenset(("pending", "rejoin"))


def event_field(group: str) -> str:
    """The event field a message's capture group fills ('' for none: the group only helps the
    match, or names a field kept for the story alone)."""
    name = _ALIASES.get(group, group)
    return name if name in _KEEP or name == "thread" else ""


class _Plan:
    """What parsing needs of one ``Message``, worked out once: its regex, and per capture group
    (in group order, as ``groupdict`` lists them) the event field it fills or None."""

    __slots__ = ("message", "marker", "regex", "fields", "fixed", "longs")

    def __init__(self, message: Message) -> None:
        self.message = message
        self.marker = message.marker
        self.regex = message.compiled()
        names = sorted(self.regex.groupindex, key=self.regex.groupindex.__getitem__)
        assert len(names) == self.regex.groups, f"unnamed group in {message.pattern!r}"
        self.fields = tuple(event_field(name) or None for name in names)
        # pending and rejoin only ever come from ``fixed``: stored as booleans at once
        assert not _FLAGS & set(self.fields), f"a boolean field captured as text in {message.pattern!r}"
        self.fixed = tuple((name, value == "true" if name in _FLAGS else value) for name, value in message.fixed.items())
        # the long fields a line of this message can carry as text (time_ms is already a number)
        self.longs = tuple(dict.fromkeys(name for name in (*self.fields, *message.fixed, "broker", "partition")
                                         if name in _LONGS and name != "time_ms"))


_MESSAGE_MARKERS = tuple(enumerate(message.marker for message in MESSAGES))


@cache
def plan_of(index: int) -> _Plan:
    """Message ``index``'s plan, made when a line first holds its marker (a paste meets a few
    messages)."""
    return _Plan(MESSAGES[index])


def _match(text: str) -> tuple[_Plan, re.Match[str]] | None:
    for index, marker in _MESSAGE_MARKERS:
        if marker in text:
            plan = plan_of(index)
            match = plan.regex.search(text)
            if match is not None:
                return plan, match
    return None


def layout_strip_logger(text: str) -> str:
    """Without log4j's trailing ``(logger.Name)``: greedy fields (reasons) must stop before it."""
    if not text.endswith(")"):
        return text
    # The suffix holds no '(' and ends the text: it can only start one character before the last '('.
    start = text.rfind("(") - 1
    if start < 0:
        return text
    suffix = text[start:]
    is_logger = _LOGGER_SUFFIXES.get(suffix)
    if is_logger is None:
        if len(_LOGGER_SUFFIXES) >= _LOGGER_SUFFIXES_KEPT:
            _LOGGER_SUFFIXES.clear()
        is_logger = _LOGGER_SUFFIXES[suffix] = LOGGER_SUFFIX.match(suffix) is not None
    return text[:start] if is_logger else text


# Whether a line's last parenthesis is a logger name: a log has a few dozen loggers.
_LOGGER_SUFFIXES: dict[str, bool] = {}
_LOGGER_SUFFIXES_KEPT = 1024


def parse_line(raw: str, syslog: SyslogReference) -> Event | None:
    """A raw line -> an event dict (``EVENT_COLUMNS`` minus source/seq/cluster), or None when
    the line holds no known message. A pure function of its arguments: a syslog time without
    a year is placed by ``syslog``."""
    return _parse_gated(raw, syslog) if passes_gate(raw) else None


def _parse_gated(raw: str, syslog: SyslogReference) -> Event | None:
    """``parse_line`` for a line known to pass the gate."""
    text, envelope_time, _ = layout.unwrap(raw, syslog)
    found = _match(layout_strip_logger(text))
    if found is None:
        return None
    plan, match = found
    message = plan.message
    event: dict[str, Any] = {"kind": message.kind, "side": message.side, "library": message.library}
    for name, value in zip(plan.fields, match.groups(), strict=True):
        if value is not None and name is not None:
            event[name] = value
    for name, value in plan.fixed:
        event.setdefault(name, value)
    prefix = text[: match.start()]
    time_ms = layout.find_time(prefix, syslog)
    event["time_ms"] = time_ms if time_ms is not None else envelope_time
    _context(event, text, prefix)
    for name in plan.longs:
        if name in event:
            try:  # text: only fields with a value are set, and numbers are not converted twice
                event[name] = int(event[name])
            except ValueError:
                event[name] = None
    member = event.get("member")
    if member and member.endswith((".", ",")):
        event["member"] = member.rstrip(".,")
    event["line"] = text.strip()[:LINE_CAP]
    # The typed edge: every name set above is an ``EVENT_COLUMNS`` field (``_Plan`` keeps no
    # other, ``_context`` sets only such), converted to its column's type (``plan.longs``);
    # ``rows.Event`` declares each of them (tests/pipeline/logs/test_kinds.py checks both agree).
    return cast("Event", event)


# Several broker records on one line (a paste that lost its newlines): where one may start.
_RECORD_START = re.compile(
    r"\s(?=[\w.-]+\s+\|\s+\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}"  # a compose prefix: "kafka-1  | [2021-..."
    r"|\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}"
    r"|\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}[.,]\d{3}\S*\s+(?:TRACE|DEBUG|INFO|WARN|ERROR)\b"
    r"|(?:(?:TRACE|DEBUG|INFO|WARN|ERROR) )?\[GroupCoordinator[ \]]"
    r"|(?:Preparing to re(?:balance|stabilize) group|Stabilized group|Assignment received from leader) "
    r"|Member \S+ in group \S+ has (?:failed|left), removing it from the group)")
# The messages that begin a broker record: a line holding two of them (or two broker prefixes)
# may hold two records.
RECORD_OPENINGS = ("Preparing to re", "Stabilized group ", "Assignment received from leader ",
                    " has failed, removing it from the group", " has left, removing it from the group", " is now empty")


def records_of(raw: str) -> list[str]:
    """A line -> the records on it: itself, unless it holds several broker records. Cut where a
    record may start, then joined again until each piece holds a message (a prefix alone, or a
    reason, is no record). A record is joined from at most ``_MAX_JOINED`` pieces: the oldest
    piece of a longer run that holds no message is left to the record before it, so a long line
    of false starts costs linear time, not quadratic."""
    if _one_record_at_most(raw):
        return [raw]
    cuts = [0, *(m.start() for m in _RECORD_START.finditer(raw)), len(raw)]
    records: list[str] = []
    pending: list[str] = []
    for begin, end in zip(cuts, cuts[1:], strict=False):
        pending.append(raw[begin:end])
        if len(pending) > _MAX_JOINED:
            stray = pending.pop(0)
            if records:
                records[-1] += stray
            else:
                records.append(stray)
        current = "".join(pending)
        if _match(layout_strip_logger(current.strip())) is not None:
            records.append(current.strip())
            pending = []
    current = "".join(pending)
    if current.strip():
        if records:
            records[-1] += current
        else:
            records.append(current)
    return records


def _one_record_at_most(raw: str) -> bool:
    """Whether ``raw`` holds at most one broker prefix and one kind of record opening (so one
    record). A loop that stops at the second opening, not a generator over all of them: it runs
    on every gated line, and the generator cost a twentieth of a scan task's CPU."""
    if raw.count("[GroupCoordinator") >= 2:
        return False
    seen = False
    for opening in RECORD_OPENINGS:
        if opening in raw:
            if seen:
                return False
            seen = True
    return True


# A broker record is cut into at most a prefix, a time, a level and logger, and its message,
# which may hold a false start or two of its own (a reason quoting another record's opening).
_MAX_JOINED = 8


def _parse_records(raw: str, syslog: SyslogReference) -> list[Event]:
    """``_parse_gated`` for every record on a line; a record without a time of its own has
    the time of the one before it on the line."""
    pieces = records_of(raw)
    if len(pieces) == 1:
        event = _parse_gated(raw, syslog)
        return [] if event is None else [event]
    events: list[Event] = []
    for piece in pieces:
        event = _parse_gated(piece, syslog) if passes_gate(piece) else None
        if event is None:
            continue
        if event.get("time_ms") is None and events:
            event["time_ms"] = events[-1].get("time_ms")
        events.append(event)
    return events


def _context(event: dict[str, Any], text: str, prefix: str) -> None:
    """Fields that the line's prefix (not the message) carries: broker id and coordinator
    partition, the Java client's clientId and groupId, librdkafka's client name, the Kafka
    Streams application id, and which library wrote a shared wording."""
    if event["side"] is Side.BROKER:
        broker = BROKER_PREFIX.search(prefix)
        if broker:
            event["broker"], partition = broker.group("broker", "partition")
            if partition and not event.get("partition"):
                event["partition"] = partition
        return
    java = JAVA_CLIENT_PREFIX.search(prefix)
    if java:
        event["client_id"] = java.group("client_id").strip()
        group = java.group("group").strip()
        if group != "null":
            event.setdefault("group", group)
        if event["library"] in (Library.KAFKA_PYTHON, Library.LIBRDKAFKA, Library.SPRING):
            event["library"] = Library.JAVA
        return
    rdkafka = RDKAFKA_PREFIX.search(prefix)
    if rdkafka:
        event["client_id"] = rdkafka.group("client_id")
        event["library"] = Library.LIBRDKAFKA
        return
    if event["library"] is Library.STREAMS:
        thread = event.pop("thread", None) or ""
        app = STREAMS_THREAD.match(thread)
        event["client_id"] = thread
        if app:
            event.setdefault("group", app.group("app"))
        return
    if KAFKA_PYTHON_LOGGER.search(prefix) or "kafka.consumer" in prefix:
        event["library"] = Library.KAFKA_PYTHON
        return
    if event["library"] is Library.SPRING:
        # Spring Boot's layout puts the listener thread in brackets: it names the container.
        threads = re.findall(r"\[([^\]\s]*-C-\d+)\]", prefix)
        if threads:
            event["client_id"] = threads[-1]


def passes_gate(raw: str) -> bool:
    """``scan``'s byte-level gate on a str (``parse_lines`` reads every line through it): the
    same lines either way."""
    for phrase in GATE_SUBSTRINGS:
        if phrase in raw:
            break
    else:
        return False
    for phrase in NOISE_SUBSTRINGS:  # noqa: SIM110 (all() over a generator costs more, on every gated line)
        if phrase in raw:
            return False
    return True


def relevant(raw: str) -> bool:
    """Does the line look like it is about group membership (for the unrecognised table)?"""
    return passes_gate(raw) and _relevant_gated(raw)


def _relevant_gated(raw: str) -> bool:
    return bool(RELEVANT.search(raw)) and bool(LOG_LIKE.search(raw)) and not IGNORED_PATTERN.search(raw)


def shape(raw: str, syslog: SyslogReference) -> str:
    """A line reduced to its wording: prefix up to the level dropped, ids and numbers replaced."""
    text = _LEVEL.sub("", layout.unwrap(raw, syslog)[0], count=1)
    for pattern, replacement in _SHAPE_SUBS:
        text = pattern.sub(replacement, text)
    return text.strip()[:SHAPE_WIDTH]


def _starts_new_line(line: str, syslog: SyslogReference) -> bool:
    return layout.find_time(line[:40], syslog) is not None or line[:1] in "{[%<" or bool(re.match(r"^\S+\s+\|", line))


def parse_lines(lines: Iterable[str], source: str = "-", cluster: str = "default", *,
                syslog: SyslogReference) -> Iterator[Event]:
    """Parse every line of a file in order (``seq`` is the line index, ``line_no`` its number)."""
    return parse_numbered(((seq, raw, True) for seq, raw in enumerate(lines)), source, cluster, syslog=syslog,
                          line_numbers=True)


class LineError(Exception):
    """The last guard: a defect met while reading one line, naming the input and the line
    (every input the reader knows of gives an answer or a one-line bad-input error)."""

    def __init__(self, source: str | None, line_no: int | None, error: BaseException, *, offset: bool = False):
        where = f"{source}, " + (f"line {line_no}" if not offset else f"the line at byte {line_no}") \
            if line_no is not None else f"{source}"
        super().__init__(f"{where}: {type(error).__name__}: {error}")
        self.where = where


# What reading a file (not a line) raises: an unreadable input, not a defect.
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)


def parse_numbered(lines: Iterable[tuple[int, str, bool]], source: str = "-", cluster: str = "default", *,
                   syslog: SyslogReference, line_numbers: bool = False) -> Iterator[Event]:
    """``_parse_numbered`` with the last guard: a defect names the input and the line."""
    position: list[int | None] = [None]

    def tracked() -> Iterator[tuple[int, str, bool]]:
        for item in lines:
            position[0] = item[0]
            yield item

    try:
        yield from _parse_numbered(tracked(), source, cluster, syslog, line_numbers=line_numbers)
    except READ_ERRORS:
        raise
    except Exception as exc:  # noqa: BLE001 - the last guard, see LineError
        seq = position[0]
        raise LineError(source, None if seq is None else seq + 1 if line_numbers else seq, exc,
                        offset=not line_numbers) from exc


def _parse_numbered(lines: Iterable[tuple[int, str, bool]], source: str, cluster: str, syslog: SyslogReference, *,
                    line_numbers: bool = False) -> Iterator[Event]:
    """Parse ``(seq, raw, owned)`` in file order, yielding one record per line that is an event,
    or an ``unrecognised`` record (kind None, ``shape``) for relevant lines matching nothing.

    A line that fails to match but is followed by a line without a timestamp is tried again
    joined with it: terminal and paste wrapping cut long Kafka lines in two. The lines may be
    a sparse selection (``scan``): every line that passes the gate and the line after each;
    the others can neither be read nor complete a line. A line not ``owned`` only completes
    the line before it (its own split reads it)."""
    pending: tuple[int, str] | None = None
    for seq, raw, owned in lines:
        if pending is not None:
            if layout.is_fence(raw):
                continue
            first_seq, first = pending
            pending = None
            follower = layout.clean(raw)
            if not _starts_new_line(follower.lstrip(), syslog):
                head = layout.clean(first)
                tail = follower.strip()
                for joiner in ("", " "):
                    event = parse_line(head + joiner + tail, syslog)
                    if event is not None:
                        yield _finish(event, source, first_seq, cluster, line_numbers)
                        break
                else:
                    yield from _unrecognised(first, source, first_seq, cluster, syslog)
                    if owned:
                        yield from _unrecognised(raw, source, seq, cluster, syslog)
                continue
            yield from _unrecognised(first, source, first_seq, cluster, syslog)
        # Most lines are the followers scan hands over only for joining: with no line waiting
        # to be joined, one that fails the gate can neither be read nor matter.
        if not owned or not passes_gate(raw) or layout.is_fence(raw):
            continue
        events = _parse_records(raw, syslog)
        if events:
            for event in events:
                yield _finish(event, source, seq, cluster, line_numbers)
        elif _relevant_gated(raw):
            pending = (seq, raw)
    if pending is not None:
        yield from _unrecognised(pending[1], source, pending[0], cluster, syslog)


def _finish(event: Event, source: str, seq: int, cluster: str, line_numbers: bool) -> Event:
    event["source"] = source
    event["seq"] = seq
    event["cluster"] = cluster
    if line_numbers:
        event["line_no"] = seq + 1
    return event


def _unrecognised(raw: str, source: str, seq: int, cluster: str, syslog: SyslogReference) -> Iterator[Event]:
    if relevant(raw):
        yield {"kind": None, "source": source, "seq": seq, "cluster": cluster, "shape": shape(raw, syslog),
               "line": layout.clean(raw).strip()[:LINE_CAP]}
