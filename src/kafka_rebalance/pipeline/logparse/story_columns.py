"""Groups' stories told over columns: every rule of the Python story (``group_story``,
``causes``, ``story``) as array operations over all groups of a sorted ``events`` table at
once, numpy and pyarrow.compute, no Python per event. ``story.tell_table`` runs it for the
groups it reads (``COLUMN_KINDS``: classic groups of broker lines with times) and the Python
story for the rest; each step is checked equal to the Python story's rule
(``tests/pipeline/logs/test_story_columns.py``). In the order the steps run:
- ``story_rows``: the rows of each group in time order, each line once (``order.order_events``
  and ``order.distinct_events``);
- ``classic_rebalances``: the classic coordinator's rebalances by generation arithmetic
  (the handlers of the "Preparing", "Stabilized", "Assignment received", "is now empty" and
  dead-group lines, and ``GroupStory.finish``), for the groups without KIP-848 lines;
- ``member_events``: the member events from member lines and from the members the opening
  lines' reasons name (``reason_members``, ``causes.members_in_reason`` over an array);
- ``rebalance_causes``: each rebalance's failed, left and joined members, what happened during
  it and its causes (``reason_causes``, ``causes.cause_from_reason``);
- ``tell_columns``: every story table of those groups (``findings_columns`` reads them for the
  findings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# What makes two lines of one group the same line (``order.distinct_events``).
IDENTITY = ("kind", "time_ms", "member", "generation", "old_generation", "state", "reason", "client_id",
            "partitions", "from_state")


_LARGEST = 1 << 62


def story_rows(table: Any) -> np.ndarray:
    """The rows of ``table`` (events of any groups sorted by ``story.SORT_KEYS``: cluster, group,
    source, seq; every row with a source and a seq) in story order: by group, then time, a line
    without a time at the last time known before it in its file (-1 when none is), ties in file
    order; and without repeats of a line that has a time (the same ``IDENTITY`` as an earlier
    row of its group)."""
    import pyarrow.compute as pc

    count = table.num_rows
    if not count:
        return np.zeros(0, np.int64)
    if table.column("source").null_count or table.column("seq").null_count:
        raise ValueError("story_rows: every event needs its source and seq")
    new_group = _changes(table, ("cluster", "group"))
    new_file = new_group | _changes(table, ("source",))
    group = np.cumsum(new_group)
    times = table.column("time_ms")
    timed = times.is_valid().to_numpy(zero_copy_only=False)
    time_ms = pc.fill_null(times, 0).to_numpy()
    # Each line's place in time: its own, or the last known before it in its file.
    rows = np.arange(count)
    file_start = np.maximum.accumulate(np.where(new_file, rows, 0))
    last_timed = np.maximum.accumulate(np.where(timed, rows, -1))
    known = np.where(last_timed >= file_start, time_ms[np.maximum(last_timed, 0)], -1)
    # Stable: equal places keep file order, as the Python sort by (place, source, seq) does.
    order: np.ndarray = np.lexsort((known, group))
    kept: np.ndarray = order[_first_of_each_line(table, order, timed, group, time_ms)]
    return kept


def _changes(table: Any, names: tuple[str, ...]) -> np.ndarray:
    """Where a row's values of ``names`` differ from the row before (the first row: True)."""
    import pyarrow.compute as pc

    count = table.num_rows
    if not count:
        return np.zeros(0, bool)
    differs = np.zeros(count - 1, bool)
    for name in names:
        after, before = table.column(name).slice(1), table.column(name).slice(0, count - 1)
        one_null = pc.xor(after.is_null(), before.is_null())
        differs |= pc.fill_null(pc.not_equal(after, before), one_null).to_numpy(zero_copy_only=False)
    return np.concatenate([[True], differs])


def _first_of_each_line(table: Any, order: np.ndarray, timed: np.ndarray, group: np.ndarray,
                        time_ms: np.ndarray) -> np.ndarray:
    """Which of the rows at ``order`` to keep: all but the repeats, a repeat being a line with a
    time whose ``IDENTITY`` an earlier row of its group has. Only the timed rows that share
    their group and time with another can be one: they alone are compared, each as one integer
    (the dense codes of its values, combined column by column)."""
    import pyarrow.compute as pc

    keep = np.ones(len(order), bool)
    at = np.flatnonzero(timed[order])  # places in ``order`` of the timed rows
    rows = order[at]
    tie = (group[rows][1:] == group[rows][:-1]) & (time_ms[rows][1:] == time_ms[rows][:-1])
    shared = np.zeros(len(rows), bool)
    shared[1:] |= tie
    shared[:-1] |= tie
    if not shared.any():
        return keep
    places, rows = at[shared], rows[shared]
    line = np.cumsum(np.concatenate([[True], ~tie]))[shared]  # its group and time, as one number
    candidates = table.select([name for name in IDENTITY if name != "time_ms"]).take(rows)
    for name in candidates.column_names:
        column = candidates.column(name)
        codes = pc.dictionary_encode(column).combine_chunks().indices
        values = pc.fill_null(codes, -1).to_numpy().astype(np.int64) + 1  # null: 0
        width = int(values.max()) + 1
        if int(line.max()) >= _LARGEST // width:  # dense again first: no overflow
            line = np.unique(line, return_inverse=True)[1]
        line = line * width + values
    _, first = np.unique(line, return_index=True)
    repeat = np.ones(len(rows), bool)
    repeat[first] = False
    keep[places[repeat]] = False
    return keep


# The classic coordinator's lines that open, close or end a rebalance (``group_story``'s
# generation arithmetic), and the KIP-848 ones that do (not yet told here).
_PREPARING, _STABILIZED, _ASSIGNED, _EMPTY, _DEAD = range(5)
_CLASSIC_KINDS = ("preparing_rebalance", "stabilized", "assignment_received", "group_empty", "group_dead")
_CONSUMER_KINDS = ("group_epoch_bumped", "target_assignment", "member_epoch")
OUTCOMES = ("open", "stable", "superseded", "empty", "dead")
_OPEN, _STABLE, _SUPERSEDED, _EMPTY_OUTCOME, _DEAD_OUTCOME = range(5)
# Attributes of a rebalance written by its lines (the last write wins), as float64: every
# value is an integer below 2**53 or absent (NaN).
_ATTRIBUTES = ("start_ms", "old_generation", "generation", "members", "end_ms", "outcome", "start_known",
               "stabilized_ms", "clip_ms", "reason_row", "state_row", "leader_row")


@dataclass
class ClassicRebalances:
    """The classic rebalances of the groups ``covered`` (those without KIP-848 lines), in each
    group's order (by start, a missing start first, then as created): their group (a number,
    in story order), and each attribute as float64 (NaN: none). ``reason_row``, ``state_row``
    and ``leader_row`` are the table rows whose ``reason``, ``state`` and ``member`` they are."""

    group: np.ndarray
    values: dict[str, np.ndarray]
    covered: np.ndarray
    # where each was made (its place in ``story_rows``' answer); and each classic line's place,
    # the rebalance it opened, continued or closed (-1: none) and its kind (``_PREPARING``...)
    made_position: np.ndarray
    line_position: np.ndarray
    line_rebalance: np.ndarray
    line_kind: np.ndarray
    line_group: np.ndarray
    # the open rebalance each classic line proves complete though its closing line is missing
    # (``GroupStory._completed_by_later``), -1 for none
    line_proves: np.ndarray

    def open_at(self, positions: np.ndarray, group: np.ndarray) -> np.ndarray:
        """The rebalance open when the lines at ``positions`` (of groups ``group``) are read:
        that of the group's last classic line before, if it was a "Preparing" line (every
        other classic line closes the open one), else -1."""
        if not len(self.line_position):
            return np.full(len(positions), -1)
        last = np.searchsorted(self.line_position, positions) - 1
        before = np.maximum(last, 0)
        same_group = (last >= 0) & (self.line_group[before] == group)
        opened: np.ndarray = np.where(same_group & (self.line_kind[before] == _PREPARING), self.line_rebalance[before], -1)
        return opened


def classic_rebalances(table: Any, rows: np.ndarray) -> ClassicRebalances:
    """The classic rebalances told by the rows ``rows`` of ``table`` (``story_rows``' answer),
    as ``group_story.GroupStory`` tells them from the coordinator's lines; what a rebalance
    learns from member lines and reasons (members, causes) is not told here yet.

    The state a classic line meets (the open rebalance, the one awaiting its assignment) is set
    by the group's classic line before it alone: so each line either makes a rebalance or joins
    the one of an earlier line, and the chains are followed by pointer jumping."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kinds = table.column("kind").take(pa.array(rows))
    group_all = np.cumsum(_changes(table.select(["cluster", "group"]).take(pa.array(rows)), ("cluster", "group"))) - 1
    consumer = pc.is_in(kinds, pa.array(_CONSUMER_KINDS)).to_numpy(zero_copy_only=False)
    covered = np.ones(int(group_all[-1]) + 1 if len(rows) else 0, bool)
    covered[group_all[consumer]] = False
    classic = pc.is_valid(pc.index_in(kinds, pa.array(_CLASSIC_KINDS))).to_numpy(zero_copy_only=False)
    classic &= covered[group_all]
    at = rows[classic]  # table rows of the classic lines, in story order
    kind = pc.index_in(table.column("kind").take(pa.array(at)), pa.array(_CLASSIC_KINDS)).to_numpy()
    group = group_all[classic]

    def number(name: str) -> np.ndarray:
        values: np.ndarray = table.column(name).take(pa.array(at)).to_numpy(zero_copy_only=False)
        return values.astype(np.float64)

    time_ms, old, gen, members = number("time_ms"), number("old_generation"), number("generation"), number("members")
    state = table.column("state").take(pa.array(at))
    completing = pc.fill_null(pc.equal(state, "CompletingRebalance"), False).to_numpy(zero_copy_only=False)
    count = len(at)
    index = np.arange(count)
    first_of_group = np.ones(count, bool)
    first_of_group[1:] = group[1:] != group[:-1]
    # The group's classic line before each (-1: none) and its last P/S/A/E line before it.
    before = np.where(first_of_group, -1, index - 1)
    psae = kind != _DEAD
    group_start = np.maximum.accumulate(np.where(first_of_group, index, 0))
    last_psae = np.maximum.accumulate(np.where(psae, index, -1))
    prior_psae = np.concatenate([[-1], last_psae[:-1]])
    prior_psae = np.where(prior_psae >= group_start, prior_psae, -1)
    is_p = kind == _PREPARING
    open_before = (before >= 0) & is_p[np.maximum(before, 0)]  # the open rebalance: that line's
    awaiting_before = (prior_psae >= 0) & (kind[np.maximum(prior_psae, 0)] == _STABILIZED)
    opener = np.maximum(before, 0)  # the line whose rebalance is open (when open_before)
    waiter = np.maximum(prior_psae, 0)
    open_old = old[opener]  # (a chain of "Preparing" lines with one old generation is one rebalance)

    def same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        equal: np.ndarray = (a == b) | (np.isnan(a) & np.isnan(b))
        return equal

    closing = (kind == _STABILIZED) | (kind == _ASSIGNED) | (kind == _EMPTY)
    continues = is_p & open_before & same(open_old, old)
    joins_open = closing & open_before & (np.isnan(gen) | np.isnan(open_old) | (open_old == gen - 1))
    joins_waiting = closing & ~joins_open & awaiting_before & same(gen[waiter], gen)
    makes = (is_p & ~continues) | (closing & ~joins_open & ~joins_waiting)
    # Whose rebalance each line is: its own, or an earlier line's (followed to the maker).
    owner = np.where(continues | joins_open, opener, np.where(joins_waiting, waiter, index))
    owner[kind == _DEAD] = np.where(open_before, opener, -1)[kind == _DEAD]
    dead_open = (kind == _DEAD) & open_before
    follow = np.where(owner >= 0, owner, index)
    while True:
        jumped = follow[follow]
        if (jumped == follow).all():
            break
        follow = jumped
    number_of = np.cumsum(makes) - 1  # a rebalance's number: the order it was made in
    rebalance = np.where((kind != _DEAD) | dead_open, number_of[follow], -1)
    total = int(makes.sum())

    writes: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {name: [] for name in _ATTRIBUTES}

    def write(name: str, mask: np.ndarray, target: np.ndarray, value: np.ndarray | float) -> None:
        chosen = np.flatnonzero(mask)
        values = np.broadcast_to(np.asarray(value, np.float64), mask.shape)[chosen]
        writes[name].append((chosen, target[chosen], values))

    # a rebalance made: where it starts, from which generation, known or not
    write("start_ms", makes, rebalance, time_ms)
    write("old_generation", makes, rebalance, np.where(is_p, old, gen - 1))
    write("start_known", makes, rebalance, is_p.astype(np.float64))
    write("outcome", makes, rebalance, float(_OPEN))
    write("reason_row", makes & is_p, rebalance, at.astype(np.float64))
    write("state_row", makes & is_p, rebalance, at.astype(np.float64))
    # The open rebalance closed by a line that is not its own: complete (a later generation
    # proves it) or left open, drawn to this line (``_completed_by_later``, ``_close_open``).
    closes_open = open_before & ~(continues | joins_open) & (kind != _DEAD)
    reached = np.where(is_p, old, gen - 1)
    proven = closes_open & ~np.isnan(open_old) & ~np.isnan(reached) & (reached > open_old)
    opened = rebalance[opener]
    never_synced = is_p & (reached == open_old + 1) & completing
    write("generation", proven, opened, open_old + 1)
    write("outcome", proven, opened, np.where(never_synced, float(_SUPERSEDED), float(_STABLE)))
    write("outcome", closes_open & ~proven, opened, float(_OPEN))
    write("clip_ms", closes_open, opened, time_ms)
    # A "Preparing" line from CompletingRebalance: the stabilized generation never got its assignment.
    superseding = is_p & ~continues & awaiting_before & same(gen[waiter], old) & completing
    waiting = rebalance[waiter]
    write("outcome", superseding, waiting, float(_SUPERSEDED))
    write("end_ms", superseding, waiting, time_ms[waiter])
    # the lines that close a rebalance of their own
    write("generation", closing, rebalance, gen)
    write("members", (kind == _STABILIZED) | (kind == _ASSIGNED), rebalance, members)  # NaN: kept (below)
    write("members", kind == _EMPTY, rebalance, 0.0)
    write("stabilized_ms", kind == _STABILIZED, rebalance, time_ms)
    write("end_ms", closing | dead_open, rebalance, time_ms)
    write("outcome", (kind == _STABILIZED) | (kind == _ASSIGNED), rebalance, float(_STABLE))
    write("outcome", kind == _EMPTY, rebalance, float(_EMPTY_OUTCOME))
    write("outcome", dead_open, rebalance, float(_DEAD_OUTCOME))
    leader = table.column("member").take(pa.array(at))
    named = pc.fill_null(pc.not_equal(leader, ""), False).to_numpy(zero_copy_only=False)
    write("leader_row", (kind == _ASSIGNED) & named, rebalance, at.astype(np.float64))

    values = {name: _last_writes(writes[name], total, keep_nan=name != "members") for name in _ATTRIBUTES}
    # The story's end: a rebalance still open, or open and never drawn to a line, is drawn to
    # the group's last time (``GroupStory.finish``).
    last_ms = _last_time_of_groups(table, rows, group_all)
    made_group = group[makes]
    still_open = np.zeros(total, bool)
    last_line = np.flatnonzero(np.concatenate([group[1:] != group[:-1], [True]])) if count else np.zeros(0, np.int64)
    ends_open = last_line[is_p[last_line]]
    still_open[rebalance[ends_open]] = True
    values["clip_ms"] = np.where(still_open | ((values["outcome"] == _OPEN) & np.isnan(values["clip_ms"])),
                                 last_ms[made_group], values["clip_ms"])
    # each group's rebalances by start, a missing start first, else as made (a stable sort)
    place = np.lexsort((np.nan_to_num(values["start_ms"], nan=-1.0), made_group))
    final = np.empty(total, np.int64)
    final[place] = np.arange(total)
    positions = np.flatnonzero(classic)
    return ClassicRebalances(made_group[place], {name: value[place] for name, value in values.items()}, covered,
                             positions[makes][place], positions,
                             np.where(rebalance >= 0, final[np.maximum(rebalance, 0)], -1) if total else
                             np.full(count, -1), kind, group,
                             np.where(proven, final[np.maximum(opened, 0)], -1) if total else np.full(count, -1))


def _last_writes(writes: list[tuple[np.ndarray, np.ndarray, np.ndarray]], total: int, *, keep_nan: bool
                 ) -> np.ndarray:
    """Each rebalance's value of one attribute: the write of the latest line (ties: the write
    listed later); without ``keep_nan`` a NaN write leaves the value before it."""
    out = np.full(total, np.nan)
    if not writes:
        return out
    line = np.concatenate([w[0] for w in writes])
    target = np.concatenate([w[1] for w in writes])
    value = np.concatenate([w[2] for w in writes])
    listed = np.concatenate([np.full(len(w[0]), k) for k, w in enumerate(writes)])
    if not keep_nan:
        line, target, listed, value = (a[~np.isnan(value)] for a in (line, target, listed, value))
    order = np.lexsort((listed, line, target))
    target, value = target[order], value[order]
    last = np.concatenate([target[1:] != target[:-1], [True]]) if len(target) else np.zeros(0, bool)
    out[target[last]] = value[last]
    return out


def _last_time_of_groups(table: Any, rows: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Each group's last time (of any line, in story order), NaN for none."""
    import pyarrow as pa

    times = table.column("time_ms").take(pa.array(rows)).to_numpy(zero_copy_only=False).astype(np.float64)
    out = np.full(int(group[-1]) + 1 if len(group) else 0, -np.inf)
    timed = ~np.isnan(times)
    np.maximum.at(out, group[timed], times[timed])  # in story order a group's times only grow
    out[np.isinf(out)] = np.nan
    return out


@dataclass
class ReasonMembers:
    """The members named by reasons, a row each, in ``causes.members_in_reason``'s order (each
    reason's, pattern by pattern, match by match): which reason (its index), and as Arrow
    string arrays the member, its member event kind, the cause and the client's reason; and
    whether it is static."""

    reason: np.ndarray
    member: Any
    kind: Any
    cause: Any
    detail: Any
    static: np.ndarray


def reason_members(reasons: Any) -> ReasonMembers:
    """``causes.members_in_reason`` over an Arrow array of reasons at once. One RE2 pass counts
    the patterns' texts in each reason (every match holds its pattern's text): a reason holding
    one, of a pattern naming one member, has at most one match, extracted by RE2 with the
    other reasons of that pattern; the rare reason holding several, or naming a list, is read
    by ``members_in_reason`` itself."""
    import re

    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import REASON_MEMBER_PATTERNS, members_in_reason

    reasons = _array(reasons)
    texts = [text for _, _, _, text in REASON_MEMBER_PATTERNS]
    any_text = "|".join(re.escape(text) for text in texts)
    hits = pc.fill_null(pc.count_substring_regex(reasons, any_text), 0).to_numpy(zero_copy_only=False)
    single = np.flatnonzero(hits == 1)
    first_text = pc.extract_regex(reasons.take(pa.array(single)), f"(?P<text>{any_text})").field("text")
    pattern_of = pc.index_in(first_text, pa.array(texts)).to_numpy(zero_copy_only=False)
    listing = np.array(["members" in pattern.groupindex for pattern, *_ in REASON_MEMBER_PATTERNS])
    by_python = np.concatenate([np.flatnonzero(hits > 1), single[listing[pattern_of]]])
    parts: list[tuple[np.ndarray, np.ndarray, Any, Any, Any, Any]] = []
    for number in np.unique(pattern_of[~listing[pattern_of]]).tolist():
        pattern, kind, cause, _ = REASON_MEMBER_PATTERNS[number]
        holds = single[pattern_of == number]
        found = pc.extract_regex(reasons.take(pa.array(holds)), _one_pass(pattern.pattern))
        matched = found.is_valid().to_numpy(zero_copy_only=False)
        found = found.filter(pa.array(matched))
        size = len(found)
        instance = found.field("instance") if "instance" in pattern.groupindex else pa.nulls(size, pa.string())
        static = ~_falsy(instance) & ~pc.fill_null(pc.is_in(instance, pa.array(["None", "null"])), False).to_numpy(
            zero_copy_only=False)
        parts.append((holds[matched], static, found.field("member"), pa.array([kind] * size, pa.string()),
                      pa.array(np.where(static & (cause == "joined"), "static_joined", cause).tolist(), pa.string()),
                      None))
    if len(by_python):
        rows = [(index, *named) for index in np.sort(by_python).tolist()
                for named in members_in_reason(reasons[index].as_py())]
        parts.append((np.array([row[0] for row in rows], np.int64), np.array([row[5] for row in rows], bool),
                      pa.array([row[1] for row in rows], pa.string()), pa.array([row[2] for row in rows], pa.string()),
                      pa.array([row[3] for row in rows], pa.string()), pa.array([row[4] for row in rows], pa.string())))
    if not parts:
        empty = pa.array([], pa.string())
        return ReasonMembers(np.zeros(0, np.int64), empty, empty, empty, empty, np.zeros(0, bool))
    index = np.concatenate([part[0] for part in parts])
    order = np.argsort(index, kind="stable")  # each reason's members are one part's, in its order
    index = index[order]
    take = pa.array(order)
    member, kind, cause = (_concat([part[field] for part in parts]).take(take) for field in (2, 3, 4))
    detail = _client_reasons(reasons.take(pa.array(index)))
    # a client's reason given: Python's answer already holds it; a left member's cause is a poll timeout
    cause = pc.if_else(pc.and_(pc.equal(kind, "left"),
                               pc.fill_null(pc.match_substring(pc.utf8_lower(detail), "poll timeout"), False)),
                       "poll_timeout", cause)
    return ReasonMembers(index, member, kind, cause, detail, np.concatenate([part[1] for part in parts])[order])


def _one_pass(pattern: str) -> str:
    """A reason pattern for RE2's extraction: its lazy runs of ``[^\\s;]`` made greedy. Each
    such run is followed by a space, a ";" or the end (never by a character it holds), so it
    ends where the greedy one does, and RE2 extracts greedy runs in one pass."""
    return pattern.replace("[^\\s;]+?", "[^\\s;]+")


def _client_reasons(reasons: Any) -> Any:
    """``causes.client_reason_of`` of each reason (null where none is quoted)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = pc.extract_regex(reasons, r"client reason: (?P<reason>.*)$")
    return pc.if_else(found.is_valid(), found.field("reason"), pa.scalar(None, pa.string()))


def _listed_members(text: str | None) -> list[str]:
    import re

    return re.findall(r"[^\s,]+", text or "")


# The lines that tell one member event, by event kind: (member event kind, the field its
# reason is), as ``group_story.GroupStory``'s handlers write them; the causes are worked out in
# ``_line_causes``. "members_not_rejoined" lines tell one per member (``_not_rejoined_items``).
_MEMBER_LINES: dict[str, tuple[str, str | None]] = {
    "member_failed": ("failed", "reason"),
    "member_left": ("left", "reason"),
    "member_fenced": ("fenced", "reason"),
    "member_joined": ("joined", "membership"),
    "group_dead": ("group_dead", None),
    "group_loaded": ("coordinator_loaded", None),
    "group_unloaded": ("coordinator_unloaded", None),
    "group_write_failed": ("coordinator_write_failed", "reason"),
    "group_converted": ("converted", None),
    "conversion_refused": ("conversion_refused", "reason"),
    "client_poll_timeout": ("poll_timeout", None),
    "client_leave": ("leave_request", "reason"),
    "client_heartbeat_failed": ("heartbeat_failed", "reason"),
    "client_commit_failed": ("commit_failed", "reason"),
}
# The member event kinds whose client is their member's, those that are a departure, and the
# happening each kind is one of (``group_story``; ``causes.SAME_HAPPENING``, as numbers).
_CLIENT_FROM_MEMBER = ("failed", "left", "joined", "rejoined", "fenced")
_DEPARTURES = ("failed", "left", "fenced")
_HAPPENINGS = {"joined": 1, "rejoined": 1, "left": 2, "failed": 3, "fenced": 3}
# A member event's columns (``schemas.TABLES["member_events"]``, less the cluster and group).
MEMBER_EVENT_FIELDS = ("member", "time_ms", "kind", "client", "reason", "source", "input", "side", "generation",
                       "cause")
_CREATED, _MERGED, _SKIPPED = range(3)
# Later than any time in a log (epoch ms): no departure yet.
_NO_TIME = 1 << 45


@dataclass
class MemberEvents:
    """The member events of the ``covered`` groups, in each group's order (as
    ``GroupStory.member_events``): their group (its number in story order), each of
    ``MEMBER_EVENT_FIELDS`` as an Arrow array, and where each was told (``position``: the
    place in ``story_rows``' answer of its line, or of the opening line whose reason named the
    member; ``line_position``: of the member's own line, -1 for none)."""

    group: np.ndarray
    columns: dict[str, Any]
    position: np.ndarray
    line_position: np.ndarray
    covered: np.ndarray
    # each event's kind when it was told, and whether a reason told it
    told_kind: Any
    from_reason: np.ndarray
    # every member line, as read (merged into a reason's event or not), in story order: its
    # place, group, table row, member, kind, the cause it gives, its reason and time
    lines: dict[str, Any]


def member_events(table: Any, rows: np.ndarray, rebalances: ClassicRebalances) -> MemberEvents:
    """The member events ``GroupStory`` tells from member lines and from the reasons of the
    rebalances it opens (``_member_event``, ``_members_from_reason``), for the groups
    ``classic_rebalances`` covers less those with a static join that names no member (its
    member is learnt from a later reason; not told here yet).

    A reason's member is an event unless an event of that member and happening was told near
    in time before (``_happened_near``); a member's own line just after the reason that named
    it is that event, not another (``from_reason``). Those rules chain only within one
    (group, member, happening): runs of one or two items are decided over arrays, longer runs
    (rare) item by item in Python (``_resolve_run``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import EVIDENCE_WINDOW_MS

    count = len(rows)
    position_of = np.full(table.num_rows, -1, np.int64)
    position_of[rows] = np.arange(count)
    group_all = np.cumsum(_changes(table.select(["cluster", "group"]).take(pa.array(rows)), ("cluster", "group"))) - 1
    kinds = table.column("kind").take(pa.array(rows))
    covered = rebalances.covered.copy()
    # a static join naming no member: its group is not told here yet
    member_none = table.column("member").take(pa.array(rows)).is_null().to_numpy(zero_copy_only=False)
    client_none = table.column("client_id").take(pa.array(rows)).is_null().to_numpy(zero_copy_only=False)
    static = pc.fill_null(pc.equal(table.column("membership").take(pa.array(rows)), "Static"), False)
    unnamed = (pc.fill_null(pc.equal(kinds, "member_joined"), False).to_numpy(zero_copy_only=False)
               & (member_none | _falsy(table.column("member").take(pa.array(rows)))) & client_none
               & static.to_numpy(zero_copy_only=False))
    covered[group_all[unnamed]] = False

    parts = [_line_items(table, rows, position_of, group_all, covered, kinds),
             _not_rejoined_items(table, rows, group_all, covered, kinds),
             _reason_items(table, rebalances, position_of, group_all, covered)]
    items = {name: _concat([part[name] for part in parts]) for name in parts[0]}
    order = np.lexsort((items["sub"], items["position"]))
    items = {name: (values[order] if isinstance(values, np.ndarray) else values.take(pa.array(order)))
             for name, values in items.items()}
    size = len(order)
    time_ms = items["time_ms"].to_numpy(zero_copy_only=False).astype(np.float64)
    kind = items["kind"]
    happening = _map_numbers(kind, _HAPPENINGS)
    has_member = ~_falsy(items["member"])
    keyed = (happening > 0) & has_member
    member_code = pc.fill_null(pc.dictionary_encode(items["member"]).indices, -1).to_numpy()
    # the runs of one (group, member, happening), in story order within each
    key_order = np.lexsort((np.arange(size), happening, member_code, items["group"]))
    key_order = key_order[keyed[key_order]]
    k_group, k_member, k_happening = items["group"][key_order], member_code[key_order], happening[key_order]
    new_run = np.ones(len(key_order), bool)
    new_run[1:] = (k_group[1:] != k_group[:-1]) | (k_member[1:] != k_member[:-1]) | (k_happening[1:] != k_happening[:-1])
    run_id = np.cumsum(new_run) - 1
    run_size = np.bincount(run_id) if len(run_id) else np.zeros(0, np.int64)
    status = np.full(size, _CREATED)
    merged_into = np.full(size, -1)
    is_reason = items["from_reason"]
    # runs of two, both timed: the second merges into a reason row near it, or a reason is
    # skipped when the first was near it
    size_of = run_size[run_id]
    timed = ~np.isnan(time_ms)
    second = np.flatnonzero(~new_run & (size_of == 2))
    first_item, second_item = key_order[second - 1], key_order[second]
    pair_timed = timed[first_item] & timed[second_item]
    close = np.abs(time_ms[first_item] - time_ms[second_item]) <= EVIDENCE_WINDOW_MS
    merges = pair_timed & close & ~is_reason[second_item] & is_reason[first_item]
    skips = pair_timed & close & is_reason[second_item]
    status[second_item[merges]] = _MERGED
    merged_into[second_item[merges]] = first_item[merges]
    status[second_item[skips]] = _SKIPPED
    # the rest, in Python: longer runs, and runs with a line without a time
    slow_runs = np.flatnonzero((run_size > 2) | (np.bincount(run_id, weights=~timed[key_order]) > 0)
                               if len(run_id) else np.zeros(0, np.int64))
    run_starts = np.flatnonzero(new_run)
    for run in slow_runs.tolist():
        members = key_order[run_starts[run]:run_starts[run] + run_size[run]]
        status[members] = _CREATED
        merged_into[members] = -1
        _resolve_run(members, is_reason, time_ms, status, merged_into, EVIDENCE_WINDOW_MS)

    created = status == _CREATED
    client = _clients(items)
    cause = _join_causes(items, client, created, status, merged_into, time_ms)
    # a line merged into the reason's row: the row is the line's now (``_member_event``)
    merged = np.flatnonzero(status == _MERGED)
    target = merged_into[merged]
    line_position = np.where(is_reason, -1, items["position"])
    line_position[target] = items["position"][merged]
    columns: dict[str, Any] = {"member": items["member"], "time_ms": items["time_ms"], "kind": kind,
                               "client": client, "reason": items["reason"], "input": items["input"],
                               "side": items["side"], "generation": items["generation"], "cause": cause}
    for name in ("kind", "input", "side", "generation", "cause"):
        columns[name] = _overwrite(columns[name], target, columns[name].take(pa.array(merged)))
    line_reason = items["reason"].take(pa.array(merged))
    has_reason = ~_falsy(line_reason)
    columns["reason"] = _overwrite(columns["reason"], target[has_reason],
                                   line_reason.filter(pa.array(has_reason)))
    source = np.where(is_reason, "reason", "line").astype(object)
    source[target] = "line"
    columns["source"] = pa.array(source, pa.string())
    keep = np.flatnonzero(created)
    read = np.flatnonzero(~is_reason)
    row_of = np.where(status == _MERGED, merged_into, np.arange(size))
    told_as = np.cumsum(created) - 1  # each created item's place among the events
    lines = {"row_reason": columns["reason"].take(pa.array(row_of[read])), "row": told_as[row_of[read]],"position": items["position"][read], "sub": items["sub"][read], "group": items["group"][read],
             "table_row": items["table_row"][read], "member": items["member"].take(pa.array(read)),
             "kind": kind.take(pa.array(read)), "cause": cause.take(pa.array(read)),
             "reason": items["reason"].take(pa.array(read)), "time_ms": time_ms[read],
             "line_kind": table.column("kind").take(pa.array(items["table_row"][read]))}
    return MemberEvents(items["group"][keep], {name: columns[name].take(pa.array(keep)) for name in MEMBER_EVENT_FIELDS},
                        items["position"][keep], line_position[keep], covered, kind.take(pa.array(keep)),
                        is_reason[keep], lines)


def _resolve_run(members: np.ndarray, is_reason: np.ndarray, time_ms: np.ndarray, status: np.ndarray,
                 merged_into: np.ndarray, window: int) -> None:
    """One (group, member, happening)'s items in story order, as ``GroupStory`` meets them: a
    reason's member is skipped when an event of the run told before is near its time (any
    untimed one is), a line merges into the latest reason's row not yet merged when near."""
    told_times: list[float] = []
    untimed = 0
    pending = -1
    for item in members.tolist():
        at = time_ms[item]
        if is_reason[item]:
            if untimed or (np.isnan(at) and told_times) or \
                    (not np.isnan(at) and any(abs(t - at) <= window for t in told_times)):
                status[item] = _SKIPPED
                continue
            pending = item
        elif pending >= 0 and (np.isnan(time_ms[pending]) or np.isnan(at) or abs(time_ms[pending] - at) <= window):
            status[item] = _MERGED
            merged_into[item] = pending
            pending = -1
            continue
        if np.isnan(at):
            untimed += 1
        else:
            told_times.append(at)


def _line_items(table: Any, rows: np.ndarray, position_of: np.ndarray, group_all: np.ndarray, covered: np.ndarray,
                kinds: Any) -> dict[str, Any]:
    """The member event each member line tells (one per line)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    told = pc.is_valid(pc.index_in(kinds, pa.array(list(_MEMBER_LINES)))).to_numpy(zero_copy_only=False)
    told &= covered[group_all]
    at = rows[told]
    lines = table.select(["kind", "member", "client_id", "reason", "membership", "protocol", "library", "time_ms",
                          "source", "side", "generation"]).take(pa.array(at))
    line_kind = lines.column("kind").combine_chunks()
    kind = _map_strings(line_kind, {name: spec[0] for name, spec in _MEMBER_LINES.items()})
    reason = pa.nulls(len(at), pa.string())
    for field in ("reason", "membership"):
        uses = pc.is_in(line_kind, pa.array([name for name, spec in _MEMBER_LINES.items() if spec[1] == field]))
        reason = pc.if_else(uses, lines.column(field).combine_chunks(), reason)
    reason = pc.if_else(pc.equal(line_kind, "client_poll_timeout"), "consumer poll timeout has expired", reason)
    protocol = pc.fill_null(lines.column("protocol").combine_chunks(), "None")
    reason = pc.if_else(pc.equal(line_kind, "group_converted"), pc.binary_join_element_wise("to ", protocol, ""),
                        reason)
    text = pc.utf8_lower(pc.fill_null(lines.column("reason").combine_chunks(), ""))
    cause = pa.nulls(len(at), pa.string())
    cause = pc.if_else(pc.equal(kind, "failed"), "session_timeout", cause)
    cause = pc.if_else(pc.equal(kind, "left"),
                       pc.if_else(pc.match_substring(text, "poll timeout"), "poll_timeout", "left"), cause)
    raw = pc.fill_null(lines.column("reason").combine_chunks(), "")
    cause = pc.if_else(pc.equal(kind, "fenced"), pc.if_else(pc.match_substring(raw, "failed to transition"),
                                                            "rebalance_timeout", "session_timeout"), cause)
    # a KIP-848 static member leaving "temporarily" (its line says so): only those lines read
    maybe = np.flatnonzero(pc.fill_null(pc.and_(pc.and_(pc.equal(line_kind, "member_left"),
                                                        pc.equal(lines.column("library"), "broker-kip848")),
                                                pc.equal(lines.column("membership"), "Static")), False).to_numpy(
        zero_copy_only=False))
    said = pc.fill_null(pc.match_substring(table.column("line").take(pa.array(at[maybe])), "temporarily"), False)
    temporarily = pa.array(np.isin(np.arange(len(at)), maybe[said.to_numpy(zero_copy_only=False)]))
    kind = pc.if_else(temporarily, "left_temporarily", kind)
    reason = pc.if_else(temporarily, pa.scalar(None, pa.string()), reason)
    cause = pc.if_else(temporarily, pa.scalar(None, pa.string()), cause)
    member = lines.column("member").combine_chunks()
    client_id = lines.column("client_id").combine_chunks()
    return {"group": group_all[told], "position": position_of[at], "sub": np.zeros(len(at), np.int64), "table_row": at,
            "member": pc.if_else(pa.array(~_falsy(member)), member, client_id), "time_ms": lines.column("time_ms"),
            "kind": kind, "reason": reason, "cause": cause, "input": lines.column("source"),
            "side": lines.column("side"), "generation": lines.column("generation"), "client_id": client_id,
            "membership": lines.column("membership"), "from_reason": np.zeros(len(at), bool)}


def _not_rejoined_items(table: Any, rows: np.ndarray, group_all: np.ndarray, covered: np.ndarray,
                        kinds: Any) -> dict[str, Any]:
    """The members a "removed dynamic members who haven't joined" line names: one event each
    (``GroupStory._on_members_not_rejoined``), in Python: such lines are few."""
    import re

    import pyarrow as pa
    import pyarrow.compute as pc

    places = np.flatnonzero(pc.fill_null(pc.equal(kinds, "members_not_rejoined"), False).to_numpy(
        zero_copy_only=False) & covered[group_all])
    found: dict[str, list[Any]] = {name: [] for name in ("group", "position", "sub", "member", "time_ms", "input",
                                                         "side", "generation", "table_row")}
    for place in places.tolist():
        line = table.slice(int(rows[place]), 1).to_pylist()[0]
        for sub, member in enumerate(re.findall(r"[\w.\-]+", (line.get("line") or "").split(":")[-1])):
            for name, value in (("group", group_all[place]), ("position", place), ("sub", sub), ("member", member),
                                ("time_ms", line.get("time_ms")), ("input", line.get("source")),
                                ("side", line.get("side")), ("generation", line.get("generation")),
                                ("table_row", int(rows[place]))):
                found[name].append(value)
    size = len(found["member"])
    return {"group": np.array(found["group"], np.int64), "position": np.array(found["position"], np.int64),
            "table_row": np.array(found["table_row"], np.int64),
            "sub": np.array(found["sub"], np.int64), "member": pa.array(found["member"], pa.string()),
            "time_ms": pa.array(found["time_ms"], pa.int64()), "kind": pa.array(["failed"] * size, pa.string()),
            "reason": pa.array(["did not rejoin in time"] * size, pa.string()),
            "cause": pa.array(["rebalance_timeout"] * size, pa.string()), "input": pa.array(found["input"], pa.string()),
            "side": pa.array(found["side"], pa.string()), "generation": pa.array(found["generation"], pa.int64()),
            "client_id": pa.nulls(size, pa.string()), "membership": pa.nulls(size, pa.string()),
            "from_reason": np.zeros(size, bool)}


def _reason_items(table: Any, rebalances: ClassicRebalances, position_of: np.ndarray, group_all: np.ndarray,
                  covered: np.ndarray) -> dict[str, Any]:
    """The members each opening line's reason names (``GroupStory._members_from_reason``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    reason_row = rebalances.values["reason_row"]
    opened = np.flatnonzero(~np.isnan(reason_row))
    at = reason_row[opened].astype(np.int64)
    at = at[covered[group_all[position_of[at]]]]
    opening = table.select(["reason", "time_ms", "source", "side"]).take(pa.array(at))
    named = reason_members(opening.column("reason"))
    line = named.reason
    static = pc.if_else(pa.array(named.static), "Static", pa.scalar(None, pa.string()))
    size = len(line)
    place = position_of[at][line]
    return {"group": group_all[place], "position": place, "sub": rank_within(place), "table_row": at[line],
            "member": named.member,
            "time_ms": opening.column("time_ms").take(pa.array(line)), "kind": named.kind,
            "reason": pc.if_else(pa.array(_falsy(named.detail)), static, named.detail), "cause": named.cause,
            "input": opening.column("source").take(pa.array(line)), "side": opening.column("side").take(pa.array(line)),
            "generation": pa.nulls(size, pa.int64()), "client_id": pa.nulls(size, pa.string()),
            "membership": pa.nulls(size, pa.string()), "from_reason": np.ones(size, bool)}


def _clients(items: dict[str, Any]) -> Any:
    """Each event's client (``GroupStory._member_event``): its member's for a member's own
    event, else the line's client id when it has one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.catalogue import MEMBER_UUID_SUFFIX

    of_member = pc.replace_substring_regex(items["member"], MEMBER_UUID_SUFFIX.pattern, "")
    own = pc.is_in(items["kind"], pa.array(_CLIENT_FROM_MEMBER))
    client_id = items["client_id"]
    return pc.if_else(own, of_member, pc.if_else(pa.array(~_falsy(client_id)), client_id, of_member))


def _join_causes(items: dict[str, Any], client: Any, created: np.ndarray, status: np.ndarray,
                 merged_into: np.ndarray, time_ms: np.ndarray) -> Any:
    """A joined line's cause: a static or dynamic join, or a restart when its client departed
    at or before it (``GroupStory._rejoins``: a departure event told earlier in the story; a
    line merged into a reason's row is judged at that row's time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = items["kind"]
    is_join_line = pc.fill_null(pc.equal(kind, "joined"), False).to_numpy(zero_copy_only=False) & ~items["from_reason"]
    joins = np.flatnonzero(is_join_line & (status != _SKIPPED))
    departs = np.flatnonzero(created & pc.is_in(kind, pa.array(_DEPARTURES)).to_numpy(zero_copy_only=False)
                             & ~_falsy(client))
    cause = items["cause"]
    if not len(joins):
        return cause
    static = pc.fill_null(pc.equal(items["membership"].take(pa.array(joins)), "Static"), False).to_numpy(
        zero_copy_only=False)
    judged_at = np.where(status[joins] == _MERGED, merged_into[joins], joins)
    join_time = time_ms[judged_at]
    client_code = pc.fill_null(pc.dictionary_encode(_array(client)).indices, -1).to_numpy()
    # per client, in story order: the earliest departure so far (an untimed one counts as
    # before anything), then whether a join comes at or after it
    both = np.concatenate([departs, joins])
    is_join = np.concatenate([np.zeros(len(departs), bool), np.ones(len(joins), bool)])
    # (a story's departures are its group's own)
    client_of_group = items["group"][both] * (int(client_code.max()) + 2) + client_code[both]
    order = np.lexsort((is_join, items["position"][both], client_of_group))
    who = client_of_group[order]
    departed_ms = np.concatenate([np.nan_to_num(time_ms[departs], nan=-1.0), np.full(len(joins), _NO_TIME)])
    earliest = _segmented_minimum(departed_ms[order].astype(np.int64), who)
    first_of_client = np.ones(len(who), bool)
    first_of_client[1:] = who[1:] != who[:-1]
    before = np.where(first_of_client, _NO_TIME, np.concatenate([[_NO_TIME], earliest[:-1]]))
    joined_ms = np.concatenate([np.zeros(len(departs)), join_time])[order]
    joined_back = np.zeros(len(both), bool)
    joined_back[order] = is_join[order] & (before < _NO_TIME) & (np.isnan(joined_ms) | (before <= joined_ms))
    restarted = joined_back[len(departs):]
    has_client = ~_falsy(client.take(pa.array(joins)))
    values = np.where(restarted & has_client, "restarted", np.where(static, "static_joined", "joined"))
    return _overwrite(cause, joins, pa.array(values.tolist(), pa.string()))


def _segmented_minimum(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """The running minimum of ``values`` (0 <= value < ``_NO_TIME``, or -1) within each run of
    equal ``segment``: each run shifted below every run before it, so one accumulation serves all."""
    if not len(values):
        return values
    run = np.cumsum(np.concatenate([[False], segment[1:] != segment[:-1]]))
    shift = run.astype(np.int64) * (_NO_TIME + 2)
    out: np.ndarray = np.minimum.accumulate(values - shift) + shift
    return out


def rank_within(place: np.ndarray) -> np.ndarray:
    """Each item's rank among those of the same ``place`` (sorted), from 0."""
    index = np.arange(len(place))
    first = np.ones(len(place), bool)
    first[1:] = place[1:] != place[:-1]
    rank: np.ndarray = index - np.maximum.accumulate(np.where(first, index, 0))
    return rank


def _map_strings(values: Any, mapping: dict[str, str]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = list(mapping)
    return pc.take(pa.array([mapping[key] for key in keys], pa.string()), pc.index_in(values, pa.array(keys)))


def _map_numbers(values: Any, mapping: dict[str, int]) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = list(mapping)
    index = pc.fill_null(pc.index_in(values, pa.array(keys)), len(keys)).to_numpy(zero_copy_only=False)
    numbers: np.ndarray = np.array([*mapping.values(), 0])[index]
    return numbers


def _falsy(values: Any) -> np.ndarray:
    """Null or empty: what Python's ``or`` passes over."""
    import pyarrow.compute as pc

    empty: np.ndarray = pc.fill_null(pc.equal(values, ""), True).to_numpy(zero_copy_only=False)
    return empty


def _overwrite(values: Any, at: np.ndarray, replacement: Any) -> Any:
    """``values`` with those at ``at`` replaced by ``replacement``'s, in order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(at):
        return values
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    replacement = replacement.combine_chunks() if isinstance(replacement, pa.ChunkedArray) else replacement
    mask = np.zeros(len(values), bool)
    mask[at] = True
    # replace_with_mask takes the replacements in the order of the mask's true places
    order = np.argsort(at, kind="stable")
    return pc.replace_with_mask(values, pa.array(mask), replacement.take(pa.array(order)))


def _concat(parts: list[Any]) -> Any:
    import pyarrow as pa

    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    arrays = [part.combine_chunks() if isinstance(part, pa.ChunkedArray) else part for part in parts]
    kind = next((array.type for array in arrays if array.type != pa.null()), pa.string())
    return pa.concat_arrays([array.cast(kind) for array in arrays])


def _array(values: Any) -> Any:
    """One Arrow array of ``values`` (a chunked one combined)."""
    import pyarrow as pa

    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


# The kinds of line a story told over columns reads so far (``told_groups``): a group with
# any other line, a line without a time or from a client is told by ``GroupStory``.
COLUMN_KINDS = ("preparing_rebalance", "stabilized", "assignment_received", "group_empty", "group_dead",
                "member_joined", "member_failed", "member_left", "members_not_rejoined", "group_loaded",
                "group_unloaded")


@dataclass
class RebalanceCauses:
    """What the member lines and reasons tell each rebalance (in ``ClassicRebalances``' order),
    of the groups ``covered``: the members that failed, left and joined and what happened
    during it (each a list, as ``story._rebalance_row`` writes them: each member once), and
    its causes (``causes``: a row each, in the ``causes`` table's order)."""

    failed: Any
    left: Any
    joined: Any
    during: Any
    cause: Any
    cause_member: Any
    causes: dict[str, Any]
    covered: np.ndarray
    # the member events told as what happened during a rebalance (their places among the events)
    during_events: np.ndarray


def rebalance_causes(table: Any, rows: np.ndarray, rebalances: ClassicRebalances, events: MemberEvents
                     ) -> RebalanceCauses:
    """The causes of each rebalance and the members it lost and gained, as ``GroupStory`` finds
    them (``_departure``, ``_on_member_joined``, ``_on_members_not_rejoined``,
    ``_on_group_loaded``, ``_claim_recent``, ``_members_from_reason``) and ``story.tell``
    passes over them (``infer_joins``, ``not_logged``, the causes merged by cause and member),
    for the groups whose lines are all ``COLUMN_KINDS``, broker lines with a time.

    A line read while a rebalance is open is part of it (a cause when at its start, else what
    happened during it); one read while none is, a signal: the next rebalance opened claims it
    when it starts within the evidence window of it (in time order, that is the only one that
    can), else nobody does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import EVIDENCE_WINDOW_MS, WHAT_HAPPENED

    group_all = np.cumsum(_changes(table.select(["cluster", "group"]).take(pa.array(rows)), ("cluster", "group"))) - 1
    ordered = table.select(["kind", "time_ms", "side"]).take(pa.array(rows))
    simple = pc.is_in(ordered.column("kind"), pa.array(COLUMN_KINDS)).to_numpy(zero_copy_only=False)
    simple &= ordered.column("time_ms").is_valid().to_numpy(zero_copy_only=False)
    simple &= pc.fill_null(pc.equal(ordered.column("side"), "broker"), False).to_numpy(zero_copy_only=False)
    covered = events.covered & rebalances.covered
    covered[group_all[~simple]] = False

    values = rebalances.values
    start = values["start_ms"]
    made = rebalances.made_position
    made_group = rebalances.group
    lines = events.lines
    line_group = lines["group"]
    in_covered = covered[line_group]
    line_kind = lines["line_kind"]
    open_at = rebalances.open_at(lines["position"], line_group)
    # (open_at -1, none, reads the NaN appended)
    at_start = (open_at >= 0) & (lines["time_ms"] <= np.append(start, np.nan)[open_at])
    departure = pc.is_in(line_kind, pa.array(["member_failed", "member_left"])).to_numpy(zero_copy_only=False) \
        & ~pc.equal(lines["kind"], "left_temporarily").to_numpy(zero_copy_only=False)
    joining = pc.equal(line_kind, "member_joined").to_numpy(zero_copy_only=False)
    not_rejoined = pc.equal(line_kind, "members_not_rejoined").to_numpy(zero_copy_only=False)
    loaded = pc.equal(line_kind, "group_loaded").to_numpy(zero_copy_only=False)
    failing = pc.is_in(lines["kind"], pa.array(["failed", "fenced"])).to_numpy(zero_copy_only=False)
    member, cause, reason = lines["member"], lines["cause"], lines["reason"]

    # every append to a rebalance's lists and causes, keyed by when the story makes it: the
    # line's place, then (at a rebalance's opening) its reason's cause, the signals it
    # claims, the members its reason names
    appends: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]]] = {
        "failed": [], "left": [], "joined": [], "during": []}
    claims: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any, Any, Any, np.ndarray]] = []

    def add(name: str, mask: np.ndarray, target: np.ndarray, key: tuple[np.ndarray, np.ndarray, np.ndarray],
            value: Any) -> None:
        chosen = np.flatnonzero(mask)
        appends[name].append((target[chosen], key[0][chosen], key[1][chosen], key[2][chosen],
                              value.take(pa.array(chosen)) if len(chosen) else pa.array([], pa.string())))

    position, sub = lines["position"], lines["sub"]
    zero = np.zeros(len(position), np.int64)
    while_open = in_covered & (open_at >= 0)
    read_key = (position, zero, sub)
    # departures while a rebalance is open: a cause at its start, else what happened during it
    add("failed", while_open & departure & failing, open_at, read_key, member)
    add("left", while_open & departure & ~failing, open_at, read_key, member)
    named = pc.fill_null(member, "None")  # as Python formats a member it does not know
    what = pc.binary_join_element_wise(named, _map_strings(cause, WHAT_HAPPENED), " ")
    add("during", while_open & departure & ~at_start, open_at, read_key, what)
    starting = np.flatnonzero(while_open & departure & at_start)
    claims.append((open_at[starting], position[starting], zero[starting], sub[starting],
                   cause.take(pa.array(starting)), member.take(pa.array(starting)), reason.take(pa.array(starting)),
                   lines["table_row"][starting]))
    # joins while open; members that did not rejoin in time
    add("joined", while_open & joining, open_at, read_key, member)
    add("during", while_open & joining & ~at_start, open_at, read_key,
        pc.binary_join_element_wise(named, pa.scalar("joined"), " "))
    add("failed", while_open & not_rejoined, open_at, read_key, member)
    add("during", while_open & not_rejoined, open_at, read_key,
        pc.binary_join_element_wise(named, pa.scalar(WHAT_HAPPENED["rebalance_timeout"]), " "))

    # departures told as during a rebalance that a later line proves complete, when that
    # line's reason names them: they came after it completed, and are signals again, read
    # where that line is (``GroupStory._departures_after``)
    during_departure = while_open & departure & ~at_start
    moved, proved_at = _moved_departures(table, rows, rebalances, lines, during_departure, open_at)
    removed = np.flatnonzero(moved)
    removals = {"during": (open_at[removed], what.take(pa.array(removed))),
                "failed": (open_at[removed[failing[removed]]], member.take(pa.array(removed[failing[removed]]))),
                "left": (open_at[removed[~failing[removed]]], member.take(pa.array(removed[~failing[removed]]))),
                "joined": (np.zeros(0, np.int64), pa.array([], pa.string()))}

    # signals, claimed by the next rebalance made in their group (at or after where they are
    # read) if it starts within the window
    signal = in_covered & ((departure & (open_at < 0)) | (joining & ((open_at < 0) | at_start)) | loaded)
    chosen = np.concatenate([np.flatnonzero(signal), removed])
    read_at = np.concatenate([position[signal], proved_at[removed]])
    read_after = np.concatenate([np.ones(int(signal.sum()), bool), np.zeros(len(removed), bool)])
    order_read = np.concatenate([position[signal] * 1_000_000 + sub[signal],
                                 proved_at[removed] * 1_000_000 + 500_000 + rank_within(proved_at[removed])])
    by_place = np.argsort(made, kind="stable")
    made_sorted = made[by_place]
    after = np.where(read_after, np.searchsorted(made_sorted, read_at, side="right"),
                     np.searchsorted(made_sorted, read_at, side="left"))
    claimer = np.append(by_place, -1)[after]  # -1: none made after
    claimed = (claimer >= 0) & (np.append(made_group, -1)[claimer] == line_group[chosen])
    claimed &= np.append(start, np.nan)[claimer] - lines["time_ms"][chosen] <= EVIDENCE_WINDOW_MS
    taken, claimer, order_read = chosen[claimed], claimer[claimed], order_read[claimed]
    signal_cause = pc.if_else(pa.array(loaded), "coordinator_moved", cause)
    signal_member = pc.if_else(pa.array(loaded), pa.scalar(None, pa.string()), member)
    line_text = table.column("line").take(pa.array(lines["table_row"]))
    signal_detail = pc.if_else(pa.array(loaded), line_text, pc.if_else(pa.array(moved), lines["row_reason"], reason))
    one = np.ones(len(taken), np.int64)
    claim_key = (made[claimer], one, order_read)
    claims.append((claimer, *claim_key, signal_cause.take(pa.array(taken)), signal_member.take(pa.array(taken)),
                   signal_detail.take(pa.array(taken)), lines["table_row"][taken]))
    took_failed = failing[taken] & departure[taken]
    took_left = ~failing[taken] & departure[taken]
    took_join = joining[taken] & pc.is_in(cause.take(pa.array(taken)), pa.array(["joined", "static_joined",
                                                                                  "restarted"])).to_numpy(
        zero_copy_only=False)
    taken_member = member.take(pa.array(taken))
    for name, mask in (("failed", took_failed), ("left", took_left), ("joined", took_join)):
        add(name, mask, claimer, claim_key, taken_member)

    # the members the opening line's reason names (told as events: not those skipped)
    told = np.flatnonzero(events.from_reason & covered[events.group])
    opened_by = _rebalance_made_at(made, made_group, events.position[told], events.group[told])
    reason_kind = events.told_kind.take(pa.array(told))
    reason_member = events.columns["member"].take(pa.array(told))
    reason_key = (events.position[told], np.full(len(told), 2), np.arange(len(told)))
    for name, mask in (("failed", pc.equal(reason_kind, "failed")), ("left", pc.equal(reason_kind, "left"))):
        add(name, mask.to_numpy(zero_copy_only=False), opened_by, reason_key, reason_member)
    add("joined", ~pc.is_in(reason_kind, pa.array(["failed", "left"])).to_numpy(zero_copy_only=False), opened_by,
        reason_key, reason_member)

    # the cause the opening line's reason gives, first
    claims.append(_reason_causes(table, rebalances, events, covered))
    told_during = lines["row"][during_departure & ~moved]
    return _finish_causes(table, rows, rebalances, appends, removals, claims, covered, told_during)


def _rebalance_made_at(made: np.ndarray, made_group: np.ndarray, positions: np.ndarray, groups: np.ndarray
                       ) -> np.ndarray:
    """The rebalance made by the line at each of ``positions`` (one is, by each)."""
    by_place = np.argsort(made, kind="stable")
    found = np.searchsorted(made[by_place], positions)
    made_by: np.ndarray = by_place[np.minimum(found, len(made) - 1)] if len(made) else np.zeros(0, np.int64)
    return made_by


def reason_causes(reasons: Any) -> tuple[Any, Any, Any]:
    """``causes.cause_from_reason`` of each reason of an Arrow array: (cause, member, the
    client's reason), each an Arrow array, null where no rule matches. In Python, a reason at a
    time: one per rebalance opened, and Python's ``re`` finds the first of the rules' lazy
    matches in a third of the time RE2's extraction takes over the array."""
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.causes import cause_from_reason

    found = [cause_from_reason(reason) or (None, None, None) for reason in _array(reasons).to_pylist()]
    return (pa.array([row[0] for row in found], pa.string()), pa.array([row[1] for row in found], pa.string()),
            pa.array([row[2] for row in found], pa.string()))


def _reason_causes(table: Any, rebalances: ClassicRebalances, events: MemberEvents, covered: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any, Any, Any, np.ndarray]:
    """The cause each opening line's reason gives its rebalance (``GroupStory._claim_recent``):
    a join is a restart when the joining client departed before (``_rejoins``: in time order,
    any departure told earlier is at or before the start)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.catalogue import MEMBER_UUID_SUFFIX

    reason_row = rebalances.values["reason_row"]
    opened = np.flatnonzero(~np.isnan(reason_row) & covered[rebalances.group])
    at = reason_row[opened].astype(np.int64)
    reasons = table.column("reason").take(pa.array(at))
    cause, member, detail = reason_causes(reasons)
    has = np.flatnonzero(cause.is_valid().to_numpy(zero_copy_only=False))
    opened, at, cause, member, detail = (opened[has], at[has], cause.take(pa.array(has)), member.take(pa.array(has)),
                                         detail.take(pa.array(has)))
    client = pc.replace_substring_regex(member, MEMBER_UUID_SUFFIX.pattern, "")
    departed = np.flatnonzero(pc.is_in(events.told_kind, pa.array(_DEPARTURES)).to_numpy(zero_copy_only=False)
                              & ~_falsy(events.columns["client"]))
    codes = pc.dictionary_encode(_concat([events.columns["client"].take(pa.array(departed)), client])).indices
    codes = pc.fill_null(codes, -1).to_numpy(zero_copy_only=False)
    width = int(codes.max()) + 2 if len(codes) else 1
    departed_key = events.group[departed] * width + codes[:len(departed)]
    joining_key = rebalances.group[opened] * width + codes[len(departed):]
    # the first place each (group, client) departed
    order = np.lexsort((events.position[departed], departed_key))
    keys, places = departed_key[order], events.position[departed][order]
    first = np.concatenate([[True], keys[1:] != keys[:-1]]) if len(keys) else np.zeros(0, bool)
    keys, places = keys[first], places[first]
    found = np.searchsorted(keys, joining_key)
    inside = found < len(keys)
    earlier = inside & (keys[np.minimum(found, max(len(keys) - 1, 0))] == joining_key) if len(keys) else inside
    earlier &= places[np.minimum(found, max(len(keys) - 1, 0))] < rebalances.made_position[opened] if len(keys) \
        else earlier
    joins = pc.is_in(cause, pa.array(["joined", "static_joined"])).to_numpy(zero_copy_only=False)
    restarted = joins & earlier & ~_falsy(client)
    cause = pc.if_else(pa.array(restarted), "restarted", cause)
    size = len(opened)
    return (opened, rebalances.made_position[opened], np.zeros(size, np.int64), np.zeros(size, np.int64), cause,
            member, pc.if_else(pa.array(_falsy(detail)), reasons.take(pa.array(has)), detail), at)


def _finish_causes(table: Any, rows: np.ndarray, rebalances: ClassicRebalances,
                   appends: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]]],
                   removals: dict[str, tuple[np.ndarray, Any]],
                   claims: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any, Any, Any, np.ndarray]],
                   covered: np.ndarray, told_during: np.ndarray) -> RebalanceCauses:
    """Each rebalance's lists (each member once, in the order told) and causes: those claimed,
    else one inferred from its size (``causes.infer_joins``), else "not logged" for an opening
    line without a reason (``causes.not_logged``), else "unknown"; merged by (cause, member),
    with the first ``EVIDENCE_CAP`` lines of evidence in time order (``story.tell``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import EVIDENCE_CAP, REASONS_FROM_VERSION

    count = len(rebalances.group)
    group = rebalances.group
    lists = {name: _first_of_each(parts, count, removals[name], every=name == "during")
             for name, parts in appends.items()}
    target = np.concatenate([part[0] for part in claims])
    keep = np.flatnonzero(covered[group[target]])
    order = keep[np.lexsort(tuple(np.concatenate([part[index] for part in claims])[keep] for index in (3, 2, 1))
                            + (target[keep],))]
    target, evidence = target[order], np.concatenate([part[7] for part in claims])[order]
    cause, member, detail = (_concat([part[index] for part in claims]).take(pa.array(order)) for index in (4, 5, 6))
    # the causes no line gives: inferred from the group's size, or not logged, or unknown
    values = rebalances.values
    told = np.zeros(count, bool)
    told[target] = True
    members = values["members"]
    known = ~np.isnan(members)
    last_known = np.maximum.accumulate(np.where(known, np.arange(count), -1))
    previous = np.concatenate([[-1], last_known[:-1]]) if count else last_known
    previous = np.where((previous >= 0) & (group[np.maximum(previous, 0)] == group), previous, -1)
    before = members[np.maximum(previous, 0)]
    inferable = ~told & known & (previous >= 0) & (members != before)
    opening = rows[rebalances.made_position]
    opened_by_preparing = pc.equal(table.column("kind").take(pa.array(opening)), "preparing_rebalance").to_numpy(
        zero_copy_only=False)
    reason_row = np.nan_to_num(values["reason_row"], nan=0).astype(np.int64)
    no_reason = np.isnan(values["reason_row"]) | table.column("reason").take(pa.array(reason_row)).is_null().to_numpy(
        zero_copy_only=False)
    unexplained = ~told & ~inferable & (values["start_known"] == 1) & opened_by_preparing & no_reason
    extra = np.flatnonzero(~told & covered[group])
    extra_cause = np.where(inferable[extra], np.where(members[extra] > before[extra], "joined", "left"),
                           np.where(unexplained[extra], "not_logged", "unknown"))
    extra_detail = np.full(len(extra), None, object)
    for index in np.flatnonzero(inferable[extra]).tolist():  # a rebalance no line explains: few
        extra_detail[index] = f"members {int(before[extra[index]])} -> {int(members[extra[index]])} (inferred)"
    extra_detail[unexplained[extra]] = (f"brokers before Kafka {REASONS_FROM_VERSION} print no reason, "
                                        "and no line before the rebalance explains it")
    order = np.argsort(np.concatenate([target, extra]), kind="stable")
    target = np.concatenate([target, extra])[order]
    evidence = np.concatenate([evidence, opening[extra]])[order]
    cause = _concat([cause, pa.array(extra_cause.tolist(), pa.string())]).take(pa.array(order))
    member = _concat([member, pa.nulls(len(extra), pa.string())]).take(pa.array(order))
    detail = _concat([detail, pa.array(extra_detail.tolist(), pa.string())]).take(pa.array(order))
    size = len(target)
    primary = np.flatnonzero(np.concatenate([[True], target[1:] != target[:-1]])) if size else np.zeros(0, np.int64)
    rebalance_cause = _overwrite(pa.nulls(count, pa.string()), target[primary], cause.take(pa.array(primary)))
    rebalance_member = _overwrite(pa.nulls(count, pa.string()), target[primary], member.take(pa.array(primary)))
    # merged by (cause, member): the first's place and detail, every one's evidence
    cause_code, member_code = codes_of(cause), codes_of(member)
    pair = cause_code * (int(member_code.max(initial=0)) + 2) + member_code + 1
    by_pair = np.lexsort((np.arange(size), pair, target))
    same = np.zeros(size, bool)
    same[1:] = (target[by_pair][1:] == target[by_pair][:-1]) & (pair[by_pair][1:] == pair[by_pair][:-1])
    head_of = np.empty(size, np.int64)
    head_of[by_pair] = by_pair[np.maximum.accumulate(np.where(~same, np.arange(size), 0))]
    heads = np.unique(head_of)  # in the order of their first claim
    time_ms = pc.fill_null(table.column("time_ms").take(pa.array(evidence)), 0).to_numpy()
    seq = pc.fill_null(table.column("seq").take(pa.array(evidence)), 0).to_numpy()
    shown = np.lexsort((np.arange(size), seq, time_ms, head_of))
    shown = shown[rank_within(head_of[shown]) < EVIDENCE_CAP]
    offsets = pa.array(np.concatenate([[0], np.cumsum(np.bincount(np.searchsorted(heads, head_of[shown]),
                                                                  minlength=len(heads)))]), pa.int32())
    causes = {"rebalance": target[heads], "cause": cause.take(pa.array(heads)),
              "member": member.take(pa.array(heads)), "detail": detail.take(pa.array(heads)),
              "evidence": pa.ListArray.from_arrays(offsets, _array(pc.fill_null(
                  table.column("line").take(pa.array(evidence[shown])), ""))),
              "evidence_sources": pa.ListArray.from_arrays(offsets, _array(_evidence_sources(table, evidence[shown])))}
    return RebalanceCauses(lists["failed"], lists["left"], lists["joined"], lists["during"],
                           pc.fill_null(rebalance_cause, "unknown"), rebalance_member, causes, covered, told_during)


def _first_of_each(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]], count: int,
                   removed: tuple[np.ndarray, Any], *, every: bool) -> Any:
    """A list per rebalance of the values appended to it, in the order of their keys, less
    those ``removed`` (each removal the earliest left of its value, or with ``every`` all of
    them), each value once (its first time: ``dict.fromkeys``)."""
    import pyarrow as pa

    target = np.concatenate([part[0] for part in parts])
    value = _concat([part[4] for part in parts])
    order = np.lexsort(tuple(np.concatenate([part[index] for part in parts]) for index in (3, 2, 1)) + (target,))
    codes = codes_of(_concat([value, removed[1]]))
    width = int(codes.max(initial=0)) + 2
    pair = (target * width + codes[:len(target)] + 1)[order]
    gone = removed[0] * width + codes[len(target):] + 1
    by_pair = np.lexsort((np.arange(len(order)), pair))
    rank = np.empty(len(order), np.int64)
    rank[by_pair] = rank_within(pair[by_pair])
    drop = np.isin(pair, gone) if every else rank < _counts_of(pair, gone)
    target, pair, order = target[order][~drop], pair[~drop], order[~drop]
    by_pair = np.lexsort((np.arange(len(order)), pair))
    repeat = np.zeros(len(order), bool)
    repeat[by_pair[1:]] = pair[by_pair][1:] == pair[by_pair][:-1]
    kept = order[~repeat]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(target[~repeat], minlength=count))])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), _array(value.take(pa.array(kept))))


def _counts_of(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """How many times each of ``values`` is in ``among``."""
    distinct, counts = np.unique(among, return_counts=True)
    found = np.searchsorted(distinct, values)
    inside = found < len(distinct)
    hit = inside & (np.append(distinct, -1)[found] == values)
    counted: np.ndarray = np.where(hit, np.append(counts, 0)[found], 0)
    return counted


def _moved_departures(table: Any, rows: np.ndarray, rebalances: ClassicRebalances, lines: dict[str, Any],
                      during: np.ndarray, open_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which departures read ``during`` a rebalance (a mask over ``lines``) the line that
    proves it complete names in its reason, and that line's place (for each line)."""
    import pyarrow as pa

    proving = np.flatnonzero(rebalances.line_proves >= 0)
    proof_of = np.full(len(rebalances.group) + 1, -1)  # by rebalance; the last: none
    proof_of[rebalances.line_proves[proving]] = np.arange(len(proving))
    proof = proof_of[open_at]
    candidate = np.flatnonzero(during & (proof >= 0))
    proved_at = np.full(len(open_at), -1)
    moved = np.zeros(len(open_at), bool)
    if not len(candidate):
        return moved, proved_at
    proving_rows = rows[rebalances.line_position[proving]]
    named = reason_members(table.column("reason").take(pa.array(proving_rows)))
    codes = codes_of(_concat([lines["member"].take(pa.array(candidate)), named.member]))
    width = int(codes.max(initial=0)) + 2
    wanted = proof[candidate] * width + codes[:len(candidate)] + 1
    moved[candidate] = np.isin(wanted, named.reason * width + codes[len(candidate):] + 1)
    proved_at[candidate] = rebalances.line_position[proving][proof[candidate]]
    return moved, proved_at


def codes_of(values: Any) -> np.ndarray:
    """Each value's number among the distinct values (null: -1)."""
    import pyarrow.compute as pc

    codes: np.ndarray = pc.fill_null(pc.dictionary_encode(_array(values)).indices, -1).to_numpy(zero_copy_only=False)
    return codes.astype(np.int64)


def _evidence_sources(table: Any, at: np.ndarray) -> Any:
    """``file:line`` of each line (``story._where``): the file alone where lines are not numbered."""
    import pyarrow as pa
    import pyarrow.compute as pc

    source = pc.fill_null(table.column("source").take(pa.array(at)), "None")
    if "line_no" not in table.column_names:
        return source
    line_no = table.column("line_no").take(pa.array(at))
    numbered = pc.binary_join_element_wise(source, pc.cast(line_no, pa.string()), ":")
    return pc.if_else(line_no.is_valid(), numbered, source)


@dataclass
class ColumnStory:
    """The story tables of the groups told over columns (``covered``): each as an Arrow table
    of its schema (``schemas.arrow_schema``), with the group number (in story order) of each
    row alongside, so the tables of the groups told in Python can be merged in group order."""

    tables: dict[str, Any]
    row_groups: dict[str, np.ndarray]
    covered: np.ndarray
    clusters: list[str]
    groups: list[str]
    # whether each member event (a row of ``tables["member_events"]``) happened while a
    # rebalance was under way (what the findings count; not a column)
    during_rebalance: np.ndarray


def tell_columns(table: Any, rows: np.ndarray, moved_clusters: frozenset[str], gap_ms: int, min_rebalances: int,
                 loop_failures: int) -> ColumnStory:
    """Every story table (less the client rebalances: no group told here has client lines) for
    the groups the columns tell: classic groups of broker lines with times, of
    ``COLUMN_KINDS``, in clusters without coordinator moves (``moved_clusters``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.schemas import arrow_schema

    ordered = table.select(["cluster", "group"]).take(pa.array(rows))
    new_group = _changes(ordered, ("cluster", "group"))
    group_all = np.cumsum(new_group) - 1
    firsts = ordered.filter(pa.array(new_group)) if len(rows) else ordered
    clusters, groups = firsts.column("cluster").to_pylist(), firsts.column("group").to_pylist()
    rebalances = classic_rebalances(table, rows)
    events = member_events(table, rows, rebalances)
    causes = rebalance_causes(table, rows, rebalances, events)
    covered = causes.covered.copy()
    if moved_clusters:
        covered &= ~np.isin(np.array(clusters, object), list(moved_clusters))
    cluster_of = pa.array(clusters, pa.string())
    group_of = pa.array(groups, pa.string())
    values = rebalances.values
    kept = np.flatnonzero(covered[rebalances.group])
    keep = pa.array(kept)
    group = rebalances.group[kept]

    def number(name: str) -> Any:
        value = values[name][kept]
        return pa.array(np.nan_to_num(value, nan=0).astype(np.int64), pa.int64(), mask=np.isnan(value))

    def text(column: str, row_name: str) -> Any:
        row = values[row_name][kept]
        found = table.column(column).take(pa.array(np.nan_to_num(row, nan=0).astype(np.int64)))
        return pc.if_else(pa.array(np.isnan(row)), pa.scalar(None, pa.string()), found)

    def when(milliseconds: Any) -> Any:
        return milliseconds.cast(pa.timestamp("ms"))

    outcome_number = values["outcome"][kept].astype(np.int64)
    is_open = outcome_number == _OPEN
    start, end = values["start_ms"][kept], values["end_ms"][kept]
    start_known = values["start_known"][kept] == 1
    shown_end = np.where(is_open, np.nan, end)
    duration = np.where(start_known & ~is_open, end - start, np.nan)
    drawn = np.where(is_open | np.isnan(end), values["clip_ms"][kept], np.nan)

    def numbers(value: np.ndarray) -> Any:
        return pa.array(np.nan_to_num(value, nan=0).astype(np.int64), pa.int64(), mask=np.isnan(value))

    partition = _partition_at(table, rows, rebalances.made_position[kept], group_all)
    rebalance_columns = {
        "group": group_of.take(pa.array(group)), "generation": number("generation"), "start": when(number("start_ms")),
        "end": when(numbers(shown_end)), "duration_ms": numbers(duration), "reason": text("reason", "reason_row"),
        "members": number("members"), "old_generation": number("old_generation"), "leader": text("member", "leader_row"),
        "outcome": pa.array(np.array(OUTCOMES, object)[outcome_number].tolist(), pa.string()),
        "failed_members": causes.failed.take(keep), "left_members": causes.left.take(keep), "partition": partition,
        "cluster": cluster_of.take(pa.array(group)), "protocol": pa.array(["classic"] * len(kept), pa.string()),
        "source": pa.array(["broker"] * len(kept), pa.string()), "start_known": pa.array(start_known),
        "joined_members": causes.joined.take(keep), "assignor": pa.nulls(len(kept), pa.string()),
        "assignor_ms": pa.nulls(len(kept), pa.int64()), "cause": causes.cause.take(keep),
        "cause_member": causes.cause_member.take(keep), "drawn_until": when(numbers(drawn)),
        "during": causes.during.take(keep)}
    tables = {"rebalances": _table(rebalance_columns, arrow_schema("rebalances"))}
    row_groups = {"rebalances": group}

    told = np.flatnonzero(covered[events.group])
    columns = events.columns
    member_columns = {"group": group_of.take(pa.array(events.group[told])), "member": columns["member"],
                      "time": when(columns["time_ms"]), "kind": columns["kind"], "client": columns["client"],
                      "reason": columns["reason"], "cluster": cluster_of.take(pa.array(events.group[told])),
                      "source": columns["source"], "side": columns["side"], "generation": columns["generation"],
                      "cause": columns["cause"], "input": columns["input"]}
    member_columns = {name: (value if name in ("group", "cluster") else _array(value).take(pa.array(told)))
                      for name, value in member_columns.items()}
    tables["member_events"] = _table(member_columns, arrow_schema("member_events"))
    row_groups["member_events"] = events.group[told]

    found = causes.causes
    which = np.flatnonzero(covered[rebalances.group[found["rebalance"]]])
    of = found["rebalance"][which]
    cause_columns = {"cluster": cluster_of.take(pa.array(rebalances.group[of])),
                     "group": group_of.take(pa.array(rebalances.group[of])),
                     "generation": numbers(values["generation"][of]), "start": when(numbers(values["start_ms"][of])),
                     **{name: found[name].take(pa.array(which)) for name in ("cause", "member", "detail", "evidence",
                                                                             "evidence_sources")}}
    tables["causes"] = _table(cause_columns, arrow_schema("causes"))
    row_groups["causes"] = rebalances.group[of]

    tables["empty_periods"], row_groups["empty_periods"] = _empty_periods(table, rows, rebalances, covered, group_all,
                                                                          cluster_of, group_of)
    tables["storms"], row_groups["storms"] = _storms(tables["rebalances"], group, gap_ms, min_rebalances,
                                                     loop_failures)
    tables["client_rebalances"] = arrow_schema("client_rebalances").empty_table()
    row_groups["client_rebalances"] = np.zeros(0, np.int64)
    during = np.zeros(len(events.group), bool)
    during[causes.during_events] = True
    return ColumnStory(tables, row_groups, covered, clusters, groups, during[told])


def _table(columns: dict[str, Any], schema: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_arrays([_array(columns[field.name]).cast(field.type) for field in schema], schema=schema)


def _partition_at(table: Any, rows: np.ndarray, positions: np.ndarray, group_all: np.ndarray) -> Any:
    """The ``__consumer_offsets`` partition of the group's last broker line at or before each
    position that names one (``GroupStory.feed``; the coordinator's moves name no group)."""
    import pyarrow as pa

    partition = table.column("partition").take(pa.array(rows))
    named = partition.is_valid().to_numpy(zero_copy_only=False)
    side = table.column("side").take(pa.array(rows)).to_numpy(zero_copy_only=False)
    named &= side == "broker"
    last = np.maximum.accumulate(np.where(named, np.arange(len(rows)), -1)) if len(rows) else np.zeros(0, np.int64)
    at = last[positions] if len(positions) else np.zeros(0, np.int64)
    valid = (at >= 0) & (group_all[np.maximum(at, 0)] == group_all[positions]) if len(positions) else \
        np.zeros(0, bool)
    values = partition.to_numpy(zero_copy_only=False)
    found = np.where(valid, np.nan_to_num(values[np.maximum(at, 0)].astype(np.float64), nan=0), 0).astype(np.int64)
    return pa.array(found, pa.int64(), mask=~valid)


def _empty_periods(table: Any, rows: np.ndarray, rebalances: ClassicRebalances, covered: np.ndarray,
                   group_all: np.ndarray, cluster_of: Any, group_of: Any) -> tuple[Any, np.ndarray]:
    """A period per "is now empty" line, ended by the group's first rebalance to start after it
    (``GroupStory._on_group_empty``, ``finish``)."""
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.schemas import arrow_schema

    lines = np.flatnonzero((rebalances.line_kind == _EMPTY) & covered[rebalances.line_group])
    positions = rebalances.line_position[lines]
    group = group_all[positions]
    at = rows[positions]
    went = table.column("time_ms").take(pa.array(at)).to_numpy(zero_copy_only=False).astype(np.float64)
    starts = rebalances.values["start_ms"]
    timed = ~np.isnan(starts)
    # each group's starts in order, searched per period (groups apart: group, then start)
    key_group, key_start = rebalances.group[timed], starts[timed]
    order = np.lexsort((key_start, key_group))
    key_group, key_start = key_group[order], key_start[order]
    found = np.searchsorted(_pair_key(key_group, key_start), _pair_key(group, np.nan_to_num(went, nan=0)),
                            side="right")
    inside = (found < len(key_group)) & ~np.isnan(went)
    hit = inside & (np.append(key_group, -1)[found] == group)
    end = np.where(hit, np.append(key_start, np.nan)[found], np.nan)

    def numbers(value: np.ndarray) -> Any:
        return pa.array(np.nan_to_num(value, nan=0).astype(np.int64), pa.int64(), mask=np.isnan(value))

    columns = {"group": group_of.take(pa.array(group)), "generation": table.column("generation").take(pa.array(at)),
               "start": numbers(went).cast(pa.timestamp("ms")), "end": numbers(end).cast(pa.timestamp("ms")),
               "duration_ms": numbers(end - went), "cluster": cluster_of.take(pa.array(group))}
    return _table(columns, arrow_schema("empty_periods")), group


def _pair_key(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """(group, time) as one sortable integer: the group above every time (epoch ms below 2**44,
    the year 2527)."""
    key: np.ndarray = group.astype(np.int64) * (1 << 44) + value.astype(np.int64)
    return key


def _storms(rebalances: Any, group: np.ndarray, gap_ms: int, min_rebalances: int, loop_failures: int
            ) -> tuple[Any, np.ndarray]:
    """The storms in each group's rebalances (``story.storms``): by start (then generation),
    runs whose starts are at most ``gap_ms`` apart, of at least ``min_rebalances``; the client
    failing most in one (ties: the first to fail) makes it a fail-rejoin loop."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.catalogue import MEMBER_UUID_SUFFIX
    from kafka_rebalance.pipeline.logparse.schemas import arrow_schema

    start_column = rebalances.column("start").cast(pa.int64())
    timed = np.flatnonzero(start_column.is_valid().to_numpy(zero_copy_only=False))
    start = pc.fill_null(start_column, 0).to_numpy()
    generation = pc.fill_null(rebalances.column("generation"), 0).to_numpy()
    order = timed[np.lexsort((timed, generation[timed], start[timed], group[timed]))]
    count = len(order)
    breaks = np.ones(count, bool)
    breaks[1:] = (group[order][1:] != group[order][:-1]) | (start[order][1:] - start[order][:-1] > gap_ms)
    run = np.cumsum(breaks) - 1
    size = np.bincount(run) if count else np.zeros(0, np.int64)
    stormy = size[run] >= min_rebalances if count else np.zeros(0, bool)
    order, run = order[stormy], run[stormy]
    runs, first = np.unique(run, return_index=True)
    storm = np.searchsorted(runs, run)
    end_column = pc.fill_null(rebalances.column("end").cast(pa.int64()), rebalances.column("start").cast(pa.int64()))
    ended = end_column.to_numpy(zero_copy_only=False)[order]
    storm_count = len(runs)
    end = np.full(storm_count, np.iinfo(np.int64).min)
    np.maximum.at(end, storm, ended)
    storm_start = start[order][first]

    def listed(name: str) -> np.ndarray:
        lengths = pc.list_value_length(rebalances.column(name)).to_numpy(zero_copy_only=False)[order]
        return np.bincount(storm, weights=lengths, minlength=storm_count).astype(np.int64)

    restarts = pc.is_in(rebalances.column("cause"), pa.array(["restarted", "left", "joined"])).to_numpy(
        zero_copy_only=False)[order]
    # the failed members' clients, storm by storm in order, counted; the top one per storm
    failed = _array(rebalances.column("failed_members").take(pa.array(order)))
    clients = pc.replace_substring_regex(failed.flatten(), MEMBER_UUID_SUFFIX.pattern, "")
    owner = storm[pc.list_parent_indices(failed).to_numpy(zero_copy_only=False)]
    code = codes_of(clients)
    top = np.full(storm_count, -1)
    top_count = np.zeros(storm_count, np.int64)
    if len(code):
        width = int(code.max()) + 2
        pair = owner * width + code + 1
        distinct, first_seen, tally = np.unique(pair, return_index=True, return_counts=True)
        pair_storm = distinct // width
        # most failures first, then the first seen
        best = np.lexsort((first_seen, -tally, pair_storm))
        leader = best[np.concatenate([[True], pair_storm[best][1:] != pair_storm[best][:-1]])]
        top[pair_storm[leader]] = first_seen[leader]
        top_count[pair_storm[leader]] = tally[leader]
    top_client = pc.if_else(pa.array(top >= 0), clients.take(pa.array(np.maximum(top, 0))) if len(code) else
                            pa.nulls(storm_count, pa.string()), pa.scalar(None, pa.string()))
    first_rows = pa.array(order[first])
    columns = {"group": rebalances.column("group").take(first_rows),
               "start": pa.array(storm_start, pa.int64()).cast(pa.timestamp("ms")),
               "end": pa.array(end, pa.int64()).cast(pa.timestamp("ms")),
               "rebalances": pa.array(np.bincount(storm, minlength=storm_count), pa.int64()),
               "duration_ms": pa.array(end - storm_start, pa.int64()),
               "failures": pa.array(listed("failed_members"), pa.int64()),
               "leaves": pa.array(listed("left_members"), pa.int64()), "top_client": top_client,
               "top_client_failures": pa.array(top_count, pa.int64()),
               "kind": pa.array(np.where(top_count >= loop_failures, "fail-rejoin loop", "burst").tolist(),
                                pa.string()),
               "cluster": rebalances.column("cluster").take(first_rows),
               "restarts": pa.array(np.bincount(storm, weights=restarts, minlength=storm_count).astype(np.int64),
                                    pa.int64())}
    return _table(columns, arrow_schema("storms")), group[order[first]]
