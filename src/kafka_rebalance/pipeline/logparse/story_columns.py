"""The story told over columns (work in progress on this branch: not yet used by either engine).

Each step takes the ``events`` table of many groups at once and answers with arrays, no Python
per event; each is checked against the Python story's rule it will replace
(``tests/pipeline/logs/test_story_columns.py``).

So far:
- ``story_rows``: the rows of each group in time order, each line once (``order.order_events``
  and ``order.distinct_events`` over a whole table);
- ``classic_rebalances``: the classic coordinator's rebalances by generation arithmetic
  (``group_story.GroupStory``'s handlers of the "Preparing", "Stabilized", "Assignment
  received", "is now empty" and dead-group lines, and its ``finish``), for the groups without
  KIP-848 lines; not yet what a rebalance learns from member lines and reasons;
- ``reason_members``: the members every reason names (``causes.members_in_reason`` over an
  array of reasons: its patterns run by RE2, Python only where one matches twice or names a
  list). RE2 extracts no faster than Python's ``re`` (about 1 us a reason either way): the
  reasons are better read once, when their lines are parsed.
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
    return ClassicRebalances(made_group[place], {name: value[place] for name, value in values.items()}, covered)


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
    reason's, pattern by pattern, match by match): which reason (its index), and the member,
    its member event kind, the cause, the client's reason and whether it is static."""

    reason: np.ndarray
    member: list[str]
    kind: list[str]
    cause: list[str]
    detail: list[str | None]
    static: np.ndarray


def reason_members(reasons: Any) -> ReasonMembers:
    """``causes.members_in_reason`` over an Arrow array of reasons at once: each pattern looked
    for in every reason by RE2 (``pyarrow.compute``), Python only for the rare reason where a
    pattern matches more than once or names a list of members."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import REASON_MEMBER_PATTERNS, client_reason_of

    reasons = pa.chunked_array([reasons]).combine_chunks() if not isinstance(reasons, pa.ChunkedArray) else \
        reasons.combine_chunks()
    has_client_reason = pc.fill_null(pc.match_substring(reasons, "client reason: "), False).to_numpy(
        zero_copy_only=False)
    details: list[str | None] = [None] * len(reasons)
    for index in np.flatnonzero(has_client_reason).tolist():
        details[index] = client_reason_of(reasons[index].as_py())
    found: list[tuple[int, int, int, str, str, str, str | None, bool]] = []
    for number, (pattern, kind, cause, text) in enumerate(REASON_MEMBER_PATTERNS):
        holds = np.flatnonzero(pc.fill_null(pc.match_substring(reasons, text), False).to_numpy(zero_copy_only=False))
        if not holds.size:
            continue
        candidates = reasons.take(pa.array(holds))
        matches = pc.count_substring_regex(candidates, pattern.pattern).to_numpy(zero_copy_only=False)
        groups = pattern.groupindex
        simple = (matches == 1) & ("members" not in groups)
        if simple.any():
            parts = pc.extract_regex(candidates.filter(pa.array(simple)), pattern.pattern)
            members = parts.field("member").to_pylist()
            instances = parts.field("instance").to_pylist() if "instance" in groups else [None] * len(members)
            for index, member, instance in zip(holds[simple].tolist(), members, instances, strict=True):
                found.append((index, number, 0, member, kind, *_member_cause(kind, cause, instance, details[index])))
        for index in holds[~simple & (matches > 0)].tolist():  # several matches, or a list: as Python reads them
            for at, match in enumerate(pattern.finditer(reasons[index].as_py())):
                named = match.groupdict()
                instance = named.get("instance")
                listed = [named["member"]] if named.get("member") else _listed_members(named.get("members"))
                found.extend((index, number, at, member, kind, *_member_cause(kind, cause, instance, details[index]))
                             for member in listed)
    found.sort(key=lambda row: row[:3])  # stable: a list's members stay in their order
    return ReasonMembers(np.array([row[0] for row in found], np.int64), [row[3] for row in found],
                         [row[4] for row in found], [row[5] for row in found], [row[6] for row in found],
                         np.array([row[7] for row in found], bool))


def _member_cause(kind: str, cause: str, instance: str | None, detail: str | None) -> tuple[str, str | None, bool]:
    static = bool(instance) and instance not in ("None", "null")
    if cause == "joined" and static:
        cause = "static_joined"
    if kind == "left" and detail and "poll timeout" in detail.lower():
        cause = "poll_timeout"
    return cause, detail, static


def _listed_members(text: str | None) -> list[str]:
    import re

    return re.findall(r"[^\s,]+", text or "")
