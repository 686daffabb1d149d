"""The classic coordinator's rebalances of every group at once, by generation arithmetic (``group_story.GroupStory``'s handlers of the classic lines, and its ``finish``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kafka_rebalance.pipeline.logparse.columns.arrays import changes

# The classic coordinator's lines that open, close or end a rebalance (``group_story``'s
# generation arithmetic), and the KIP-848 ones that do (not yet told here).
PREPARING, STABILIZED, ASSIGNED, EMPTY, DEAD = range(5)



_CLASSIC_KINDS = ("preparing_rebalance", "stabilized", "assignment_received", "group_empty", "group_dead")



_CONSUMER_KINDS = ("group_epoch_bumped", "target_assignment", "member_epoch")



OUTCOMES = ("open", "stable", "superseded", "empty", "dead")



OPEN, _STABLE, _SUPERSEDED, _EMPTY_OUTCOME, _DEAD_OUTCOME = range(5)



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
    # the rebalance it opened, continued or closed (-1: none) and its kind (``PREPARING``...)
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
        opened: np.ndarray = np.where(same_group & (self.line_kind[before] == PREPARING), self.line_rebalance[before], -1)
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
    group_all = np.cumsum(changes(table.select(["cluster", "group"]).take(pa.array(rows)), ("cluster", "group"))) - 1
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
    psae = kind != DEAD
    group_start = np.maximum.accumulate(np.where(first_of_group, index, 0))
    last_psae = np.maximum.accumulate(np.where(psae, index, -1))
    prior_psae = np.concatenate([[-1], last_psae[:-1]])
    prior_psae = np.where(prior_psae >= group_start, prior_psae, -1)
    is_p = kind == PREPARING
    open_before = (before >= 0) & is_p[np.maximum(before, 0)]  # the open rebalance: that line's
    awaiting_before = (prior_psae >= 0) & (kind[np.maximum(prior_psae, 0)] == STABILIZED)
    opener = np.maximum(before, 0)  # the line whose rebalance is open (when open_before)
    waiter = np.maximum(prior_psae, 0)
    open_old = old[opener]  # (a chain of "Preparing" lines with one old generation is one rebalance)

    def same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        equal: np.ndarray = (a == b) | (np.isnan(a) & np.isnan(b))
        return equal

    closing = (kind == STABILIZED) | (kind == ASSIGNED) | (kind == EMPTY)
    continues = is_p & open_before & same(open_old, old)
    joins_open = closing & open_before & (np.isnan(gen) | np.isnan(open_old) | (open_old == gen - 1))
    joins_waiting = closing & ~joins_open & awaiting_before & same(gen[waiter], gen)
    makes = (is_p & ~continues) | (closing & ~joins_open & ~joins_waiting)
    # Whose rebalance each line is: its own, or an earlier line's (followed to the maker).
    owner = np.where(continues | joins_open, opener, np.where(joins_waiting, waiter, index))
    owner[kind == DEAD] = np.where(open_before, opener, -1)[kind == DEAD]
    dead_open = (kind == DEAD) & open_before
    follow = np.where(owner >= 0, owner, index)
    while True:
        jumped = follow[follow]
        if (jumped == follow).all():
            break
        follow = jumped
    number_of = np.cumsum(makes) - 1  # a rebalance's number: the order it was made in
    rebalance = np.where((kind != DEAD) | dead_open, number_of[follow], -1)
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
    write("outcome", makes, rebalance, float(OPEN))
    write("reason_row", makes & is_p, rebalance, at.astype(np.float64))
    write("state_row", makes & is_p, rebalance, at.astype(np.float64))
    # The open rebalance closed by a line that is not its own: complete (a later generation
    # proves it) or left open, drawn to this line (``_completed_by_later``, ``_close_open``).
    closes_open = open_before & ~(continues | joins_open) & (kind != DEAD)
    reached = np.where(is_p, old, gen - 1)
    proven = closes_open & ~np.isnan(open_old) & ~np.isnan(reached) & (reached > open_old)
    opened = rebalance[opener]
    never_synced = is_p & (reached == open_old + 1) & completing
    write("generation", proven, opened, open_old + 1)
    write("outcome", proven, opened, np.where(never_synced, float(_SUPERSEDED), float(_STABLE)))
    write("outcome", closes_open & ~proven, opened, float(OPEN))
    write("clip_ms", closes_open, opened, time_ms)
    # A "Preparing" line from CompletingRebalance: the stabilized generation never got its assignment.
    superseding = is_p & ~continues & awaiting_before & same(gen[waiter], old) & completing
    waiting = rebalance[waiter]
    write("outcome", superseding, waiting, float(_SUPERSEDED))
    write("end_ms", superseding, waiting, time_ms[waiter])
    # the lines that close a rebalance of their own
    write("generation", closing, rebalance, gen)
    write("members", (kind == STABILIZED) | (kind == ASSIGNED), rebalance, members)  # NaN: kept (below)
    write("members", kind == EMPTY, rebalance, 0.0)
    write("stabilized_ms", kind == STABILIZED, rebalance, time_ms)
    write("end_ms", closing | dead_open, rebalance, time_ms)
    write("outcome", (kind == STABILIZED) | (kind == ASSIGNED), rebalance, float(_STABLE))
    write("outcome", kind == EMPTY, rebalance, float(_EMPTY_OUTCOME))
    write("outcome", dead_open, rebalance, float(_DEAD_OUTCOME))
    leader = table.column("member").take(pa.array(at))
    named = pc.fill_null(pc.not_equal(leader, ""), False).to_numpy(zero_copy_only=False)
    write("leader_row", (kind == ASSIGNED) & named, rebalance, at.astype(np.float64))

    values = {name: _last_writes(writes[name], total, keep_nan=name != "members") for name in _ATTRIBUTES}
    # The story's end: a rebalance still open, or open and never drawn to a line, is drawn to
    # the group's last time (``GroupStory.finish``).
    last_ms = _last_time_of_groups(table, rows, group_all)
    made_group = group[makes]
    still_open = np.zeros(total, bool)
    last_line = np.flatnonzero(np.concatenate([group[1:] != group[:-1], [True]])) if count else np.zeros(0, np.int64)
    ends_open = last_line[is_p[last_line]]
    still_open[rebalance[ends_open]] = True
    values["clip_ms"] = np.where(still_open | ((values["outcome"] == OPEN) & np.isnan(values["clip_ms"])),
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
