"""The common line parsed a column at a time: the broker's log4j lines of one block, each
message's fields extracted for all its lines at once with RE2 (``pyarrow.compute.extract_regex``)
and their times computed together with numpy, giving exactly the events ``parse.parse_line``
gives for the same lines.

A line is taken here when it is plain log4j (``[yyyy-MM-dd HH:mm:ss,SSS]`` first, printable ASCII
and tabs only: no layout to unwrap, and RE2's ``\\s``/``\\w``/``\\d`` mean what Python's do), holds
at most one record (``parse.records_of`` has nothing to cut), and the first message of the
catalogue that matches it (``parse._match``'s order) is a broker message whose regex RE2 reads
the same way (``Re2Plan``). Any other line is left to the per-line parser (``readlog``), which
also reads it when none of the messages matches (it may be half of a wrapped line).

Which messages a line may hold comes from the scan: hyperscan reports each message marker it
finds in the line (``scan.MARKERS``); the markers present in the line without its logger name
are checked here, in catalogue order, as ``parse._match`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from kafka_rebalance.pipeline.logparse.catalogue import BROKER_PREFIX, LOGGER_SUFFIX, MESSAGES, G, Message
from kafka_rebalance.pipeline.logparse.kinds import Side
from kafka_rebalance.pipeline.logparse.parse import EVENT_COLUMNS, LINE_CAP, event_field

# Every marker once, in catalogue order: hyperscan's pattern id for a marker is its index here.
MARKERS: tuple[str, ...] = tuple(dict.fromkeys(m.marker for m in MESSAGES))
LOG4J_START = r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\]"
LOG4J_TIME_CHARS = 23  # yyyy-MM-dd HH:mm:ss,SSS, after the bracket
# ``layout_strip_logger`` as one regex: the suffix can only start at the last '(' (its name holds none).
LOGGER_SUFFIX_RE2 = LOGGER_SUFFIX.pattern.replace(r"\)\s*$", r"\)$")
PREFIX = "prefix__"
PRESENT = "__present"
_LONGS = {name for name, kind in EVENT_COLUMNS if kind == "long"}
_BOOLEANS = {name for name, kind in EVENT_COLUMNS if kind == "boolean"}
# What may follow a group id in a pattern for the group's lookahead (``catalogue.G``) to be
# implied by the rest of the match: a space, ']', ':', ',' or the end of the line.
_G_RE2 = r"(?P<group>[^\s\]]+?)"
_AFTER_GROUP = (" ", r"\]", ":? ", ", ", r"(?: in state (?P<state>\w+))? with ", r")?\s*$", r"\.?(?: through explicit `LeaveGroup` request)?\s*$")


def _closing_parens(pattern: str) -> dict[int, int]:
    """Each '(' of ``pattern`` -> its ')' (escapes and character classes skipped)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    at, in_class = 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern[at + 1:at + 2] == "]":
                at += 1
        elif char == "(":
            stack.append(at)
        elif char == ")":
            pairs[stack.pop()] = at
        at += 1
    return pairs


def _mark_presence(pattern: str, name: str) -> str | None:
    """An optional group that may capture '' looks the same to RE2 present or absent: the
    optional ``(?:...)?`` around it becomes a named group of its own (``name__present``), which
    captures something when present. None when the group's surroundings are not of that form."""
    at = pattern.find(f"(?P<{name}>")
    pairs = _closing_parens(pattern)
    enclosing = [o for o, c in pairs.items() if o < at and c > at and pattern.startswith("(?:", o)]
    if not enclosing:
        return None
    opening = max(enclosing)
    closing = pairs[opening]
    if pattern[closing + 1:closing + 2] != "?" or pattern[closing + 2:closing + 3] in ("?", "+"):
        return None
    inner = pattern[opening + 3:closing]
    if re.fullmatch(inner, "") is not None:  # present must capture a character at least
        return None
    return f"{pattern[:opening]}(?P<{name}{PRESENT}>{inner}){pattern[closing + 1:]}"


def _group_kinds(pattern: str) -> tuple[set[str], set[str]]:
    """(groups that may capture '', those of them inside something optional)."""
    # Python's own regex parser (typeshed has no stubs for it): what each group may match.
    import re._constants as sre_constants  # type: ignore[import-not-found]  # noqa: PLC0415
    import re._parser as sre_parser  # type: ignore[import-not-found]  # noqa: PLC0415

    parsed = sre_parser.parse(pattern)
    names = {index: name for name, index in parsed.state.groupdict.items()}
    empty: set[str] = set()
    optional: set[str] = set()

    def walk(items: Any, inside_optional: bool) -> None:
        for op, av in items:
            if op is sre_constants.SUBPATTERN:
                index, _, _, sub = av
                if index is not None and sub.getwidth()[0] == 0:
                    empty.add(names[index])
                    if inside_optional:
                        optional.add(names[index])
                walk(sub, inside_optional)
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                walk(av[2], inside_optional or av[0] == 0)
            elif op is sre_constants.BRANCH:
                for alternative in av[1]:
                    walk(alternative, inside_optional or len(av[1]) > 1)
            elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
                walk(av[1], inside_optional)

    walk(parsed, False)
    return empty, optional


@dataclass(frozen=True)
class Re2Plan:
    """A broker message read by RE2: its pattern (the prefix before the message captured, as
    ``match.start()`` gives it), and per capture group the event field it fills."""

    index: int  # the message's place in the catalogue
    message: Message
    marker_id: int
    pattern: str
    # The literals one of which every match starts with, and the pattern anchored: a line is
    # first matched at the first place one of them is (the leftmost match, if it matches there),
    # by ``pattern`` else (and when there are none).
    leads: tuple[str, ...]
    anchored: str
    # (group, field, may capture ''): in group order; a later group of the same field wins
    groups: tuple[tuple[str, str, bool], ...]
    fixed: tuple[tuple[str, Any], ...]


def _re2_plan(index: int, message: Message) -> Re2Plan | None:
    """The message as RE2 reads it, or None when RE2 could read it differently (the line is then
    read by the per-line parser)."""
    if message.side is not Side.BROKER:
        return None
    pattern = message.pattern
    rest = pattern
    while G in rest:
        rest = rest.split(G, 1)[1]
        if not rest.startswith(_AFTER_GROUP) and rest:
            return None
    pattern = pattern.replace(G, _G_RE2)
    if "(?=" in pattern or "(?!" in pattern or "(?<" in pattern.replace("(?P<", ""):
        return None
    empty, optional = _group_kinds(message.pattern)
    for name in optional:
        marked = _mark_presence(pattern, name)
        if marked is None:
            return None
        pattern = marked
    regex = message.compiled()
    names = sorted(regex.groupindex, key=regex.groupindex.__getitem__)
    groups = tuple((name, event_field(name), name in empty) for name in names)
    fixed = tuple((name, value == "true" if name in _BOOLEANS else value) for name, value in message.fixed.items())
    full = f"^(?P<{PREFIX}>.*?)(?:{pattern})"
    anchored = f"^(?:{pattern})"
    if not _re2_compiles(full) or not _re2_compiles(anchored):
        return None
    return Re2Plan(index, message, MARKERS.index(message.marker), full, literal_leads(pattern), anchored, groups, fixed)


def literal_leads(pattern: str) -> tuple[str, ...]:
    """Literals one of which every match of ``pattern`` starts with: its literal lead, or when it
    starts with a group of literal alternatives (``(?:A|B)``, ``(?P<name>A|B)``), each of them
    followed by the literal lead of what comes after the group. () when there are none."""
    lead = literal_lead(pattern)
    if lead:
        return (lead,)
    closing = _closing_parens(pattern).get(0)
    inner = re.match(r"\(\?(?::|P<\w+>)", pattern)
    if closing is None or inner is None or pattern[closing + 1:closing + 2] in ("?", "*", "+", "{"):
        return ()
    alternatives = pattern[inner.end():closing].split("|")
    if any(not _unescaped(alternative) or literal_lead(alternative) != _unescaped(alternative)
           for alternative in alternatives):
        return ()  # an alternative holds more than a literal (or a '|' of its own)
    after = literal_lead(pattern[closing + 1:])
    return tuple(_unescaped(alternative) + after for alternative in alternatives)


def _unescaped(literal: str) -> str:
    """A pattern's literal text as it matches (``\\.`` is '.'); '' when it holds anything else."""
    return re.sub(r"\\(.)", r"\1", literal) if re.fullmatch(r"(?:[^.^$*+?()\[\]{}|\\]|\\[^\w])*", literal) else ""


def literal_lead(pattern: str) -> str:
    """The literal text every match of ``pattern`` starts with ('' when it starts otherwise)."""
    pairs = _closing_parens(pattern)
    inside = {at for opening, closing in pairs.items() for at in range(opening, closing)}
    if any(char == "|" and at not in inside and pattern[at - 1:at] != "\\" for at, char in enumerate(pattern)):
        return ""  # alternatives at the top: no one literal starts them all
    lead: list[str] = []
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\" and at + 1 < len(pattern) and not pattern[at + 1].isalnum():
            token, step = pattern[at + 1], 2
        elif char in ".^$*+?()[]{}|\\":
            break
        else:
            token, step = char, 1
        following = pattern[at + step:at + step + 1]
        if following and following in "?*{":  # the token may be absent
            break
        lead.append(token)
        if following == "+":
            break
        at += step
    return "".join(lead)


def _spans(text: Any, starts: np.ndarray, ends: np.ndarray) -> Any:
    """``text[i][starts[i]:ends[i]]`` for every row of an ASCII string array (offsets in bytes)."""
    import pyarrow as pa

    count = len(text)
    offsets = np.frombuffer(text.buffers()[1], np.int32, count=count + 1, offset=text.offset * 4)
    bounds = np.empty(2 * count, np.int32)
    bounds[0::2] = offsets[:-1] + starts
    bounds[1::2] = offsets[:-1] + ends
    spans = pa.Array.from_buffers(pa.string(), 2 * count - 1, [None, pa.py_buffer(bounds), text.buffers()[2]])
    return spans.take(pa.array(np.arange(0, 2 * count, 2)))


def _re2_compiles(pattern: str) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pc.extract_regex(pa.array(["x"]), pattern)
    except pa.ArrowInvalid:
        return False
    return True


@cache
def re2_plan(index: int) -> Re2Plan | None:
    """The RE2 plan of message ``index`` (catalogue order), or None (lines it claims go per
    line): made when a block first holds the message's marker (a paste meets a few messages)."""
    return _re2_plan(index, MESSAGES[index])


def re2_plans() -> tuple[Re2Plan | None, ...]:
    """Every message's plan (which messages RE2 reads: the tests check the broker's)."""
    return tuple(re2_plan(index) for index in range(len(MESSAGES)))


def log4j_times(text: Any) -> tuple[np.ndarray, np.ndarray]:
    """Lines starting ``[yyyy-MM-dd HH:mm:ss,SSS]`` -> (epoch ms as ``layout.find_time`` reads
    them, whether the date and time exist): numpy on the digits, no per-line Python."""
    import pyarrow.compute as pc

    count = len(text)
    stamps = pc.utf8_slice_codeunits(text, 1, 1 + LOG4J_TIME_CHARS)
    first = int(np.frombuffer(stamps.buffers()[1], np.int32, count=1, offset=stamps.offset * 4)[0])
    data = np.frombuffer(stamps.buffers()[2], np.uint8, count=count * LOG4J_TIME_CHARS, offset=first)
    chars = data.reshape(count, LOG4J_TIME_CHARS).astype(np.int64) - 48

    def number(first: int, width: int) -> np.ndarray:
        value = np.zeros(count, np.int64)
        for at in range(first, first + width):
            value = value * 10 + chars[:, at]
        return value

    year, month, day = number(0, 4), number(5, 2), number(8, 2)
    hour, minute, second, millis = number(11, 2), number(14, 2), number(17, 2), number(20, 3)
    valid = (year >= 1) & (month >= 1) & (month <= 12) & (day >= 1) & (hour < 24) & (minute < 60) & (second < 60)
    safe_month = np.where(valid, month, 1)
    months = (np.where(valid, year, 1970) - 1970) * 12 + safe_month - 1
    first_day = months.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    next_first = (months + 1).astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    valid &= day <= next_first - first_day
    epoch_ms = ((first_day + day - 1) * 86_400 + hour * 3600 + minute * 60 + second) * 1000 + millis
    return epoch_ms, valid


def parse_log4j(lines: Any, markers: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
    """``lines`` (printable-ASCII gated lines, without their newline) and ``markers`` (bool,
    line x ``MARKERS``) -> (the events' columns for the lines taken, the indices of those lines,
    in order). The columns are those of ``EVENT_COLUMNS`` but source, seq and cluster."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = len(lines)
    text = pc.utf8_rtrim(lines, characters="\r\n")
    taken = np.zeros(count, bool)
    if not count:
        return {}, np.flatnonzero(taken)
    eligible = np.asarray(pc.match_substring_regex(text, LOG4J_START))
    times, valid = log4j_times(pc.if_else(pa.array(eligible), text, pa.scalar("[0001-01-01 00:00:00,000]")))
    eligible &= valid
    stripped = pc.replace_substring_regex(text, LOGGER_SUFFIX_RE2, "")
    open_rows = eligible.copy()
    chunks: list[tuple[Re2Plan, np.ndarray, Any, Any]] = []
    for index, message in enumerate(MESSAGES):
        rows = np.flatnonzero(open_rows & markers[:, MARKERS.index(message.marker)])
        if not rows.size:
            continue
        plan = re2_plan(index)
        candidates = stripped.take(pa.array(rows))
        holds = np.asarray(pc.match_substring(candidates, message.marker))
        if plan is None:  # read per line: so is every line this message may claim
            open_rows[rows[holds]] = False
            continue
        # (Most masks below hold for every line: the arrays are then kept, not copied.)
        if not holds.all():
            holds_rows = np.flatnonzero(holds)
            candidates = candidates.take(pa.array(holds_rows))
            rows = rows[holds_rows]
        unmatched = np.ones(len(rows), bool)
        if plan.leads:
            lengths = np.asarray(pc.utf8_length(candidates), np.int64)
            starts = np.asarray(pc.find_substring(candidates, plan.leads[0]), np.int64)
            for lead in plan.leads[1:]:
                found = np.asarray(pc.find_substring(candidates, lead), np.int64)
                starts = np.where((found >= 0) & ((starts < 0) | (found < starts)), found, starts)
            present = np.flatnonzero(starts >= 0)
            if present.size:
                found = candidates if present.size == len(rows) else candidates.take(pa.array(present))
                at = starts[present]
                extracted = pc.extract_regex(_spans(found, at, lengths[present]), plan.anchored)
                matched = np.asarray(extracted.is_valid())
                if matched.all():
                    unmatched[present] = False
                    chunks.append((plan, rows[present], extracted, _spans(found, np.zeros(len(present), np.int64), at)))
                elif matched.any():
                    chosen = present[matched]
                    unmatched[chosen] = False
                    prefixes = _spans(found.filter(pa.array(matched)), np.zeros(len(chosen), np.int64), at[matched])
                    chunks.append((plan, rows[chosen], extracted.filter(pa.array(matched)), prefixes))
        if unmatched.any():  # no lead, or no match where it first is: the leftmost match, anywhere
            rest = np.flatnonzero(unmatched)
            extracted = pc.extract_regex(candidates.take(pa.array(rest)), plan.pattern)
            matched = np.asarray(extracted.is_valid())
            if matched.any():
                found = extracted.filter(pa.array(matched))
                chunks.append((plan, rows[rest[matched]], found, found.field(PREFIX)))
                unmatched[rest[matched]] = False
        open_rows[rows[~unmatched]] = False
    # A line whose message starts inside its time is read per line (``find_time`` reads the prefix).
    kept = []
    for plan, rows, extracted, prefixes in chunks:
        keep = np.asarray(pc.greater_equal(pc.utf8_length(prefixes), LOG4J_TIME_CHARS + 1))
        if keep.all():
            kept.append((plan, rows, extracted, prefixes))
        elif keep.any():
            mask = pa.array(keep)
            kept.append((plan, rows[keep], extracted.filter(mask), prefixes.filter(mask)))
    chunks = kept
    if not chunks:
        return {}, np.flatnonzero(taken)
    order = np.concatenate([rows for _, rows, _, _ in chunks])
    columns = _columns(chunks, text, times)
    sort = np.argsort(order, kind="stable")
    return {name: column.take(pa.array(sort)) for name, column in columns.items()}, order[sort]


def _columns(chunks: list[tuple[Re2Plan, np.ndarray, Any, Any]], text: Any, times: np.ndarray) -> dict[str, Any]:
    """The chunks (one message's lines each) -> the events' columns, in chunk order: the
    captured and implied fields chunk by chunk, what every line has (its prefix's broker and
    partition, its time, its text, its message's kind) for all the chunks at once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    types = {"long": pa.int64(), "string": pa.string(), "boolean": pa.bool_()}
    kinds = dict(EVENT_COLUMNS)
    null_string = pa.scalar(None, pa.string())
    captured: dict[str, list[Any]] = {name: [] for name in kinds if name not in _PER_LINE}
    for plan, rows, extracted, _ in chunks:
        size = len(rows)
        values: dict[str, Any] = {}
        for group, field_name, may_be_empty in plan.groups:
            if not field_name:
                continue
            value = extracted.field(group)
            if not may_be_empty:
                value = pc.if_else(pc.equal(value, ""), null_string, value)
            elif f"{group}{PRESENT}" in extracted.type.names:
                value = pc.if_else(pc.not_equal(extracted.field(f"{group}{PRESENT}"), ""), value, null_string)
            earlier = values.get(field_name)
            values[field_name] = value if earlier is None else pc.coalesce(value, earlier)
        for name, fixed in plan.fixed:
            constant = pa.array([fixed] * size, pa.bool_() if name in _BOOLEANS else pa.string())
            values[name] = constant if name not in values else pc.coalesce(values[name], constant)
        for name, column in captured.items():
            value = values.get(name)
            column.append(value if value is not None else
                          pa.nulls(size, pa.string() if name in _LONGS else types[kinds[name]]))
    columns = {name: pa.concat_arrays(column) for name, column in captured.items()}
    for name in _LONGS.intersection(columns):
        columns[name] = _longs(columns[name])
    columns["member"] = pc.utf8_rtrim(columns["member"], characters=".,")
    rows = np.concatenate([rows for _, rows, _, _ in chunks])
    # A prefix is its line's time, then what a broker's lines repeat (level, logger, broker and
    # partition): that rest is read once per distinct value (the broker prefix never starts
    # inside the time, which holds no '[' after its first character).
    rests = pc.dictionary_encode(pc.utf8_slice_codeunits(
        pa.concat_arrays([prefixes for _, _, _, prefixes in chunks]), 1 + LOG4J_TIME_CHARS))
    broker = pc.extract_regex(rests.dictionary, BROKER_PREFIX.pattern).take(rests.indices)
    has_broker = broker.is_valid()
    columns["broker"] = _longs(pc.if_else(has_broker, broker.field("broker"), null_string))
    prefix_partition = pc.if_else(pc.and_(has_broker, pc.not_equal(broker.field("partition"), "")),
                                  broker.field("partition"), null_string)
    message_partition = pa.concat_arrays([values.field("partition") if "partition" in values.type.names
                                          else pa.nulls(len(values), pa.string()) for _, _, values, _ in chunks])
    partition = pc.coalesce(pc.if_else(pc.equal(message_partition, ""), null_string, message_partition),
                            prefix_partition)
    columns["partition"] = _longs(partition)
    columns["line"] = pc.utf8_slice_codeunits(pc.utf8_rtrim_whitespace(text.take(pa.array(rows))), 0, LINE_CAP)
    columns["time_ms"] = pa.array(times[rows], pa.int64())
    chunk_of = np.repeat(np.arange(len(chunks)), [len(rows) for _, rows, _, _ in chunks])
    for name in ("kind", "side", "library"):
        names = pa.array([str(getattr(plan.message, name)) for plan, _, _, _ in chunks], pa.string())
        columns[name] = names.take(pa.array(chunk_of))
    return columns


# Fields every line has from its own text, not from its message's captures.
_PER_LINE = frozenset(("source", "seq", "cluster", "broker", "partition", "line", "time_ms", "kind", "side", "library"))


def _longs(text: Any) -> Any:
    """Digits -> int64 as ``int`` reads them; anything ``int`` refuses -> null."""
    import pyarrow as pa

    try:
        return text.cast(pa.int64())
    except (pa.ArrowInvalid, OverflowError):
        values = []
        for value in text.to_pylist():
            try:
                values.append(None if value is None else int(value))
            except ValueError:
                values.append(None)
        return pa.array(values, pa.int64())
