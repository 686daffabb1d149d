"""Each group's findings (``findings.GroupFindings``) from the story tables of many groups at
once (``tables.ColumnStory``): the counts, cadences and causes ``findings.findings``
reads from one group's rows, as array operations over all groups, Python only to hand each
group's numbers over as a dict."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from kafka_rebalance.pipeline.logparse.columns.arrays import codes_of, falsy, pair_key, rank_within
from kafka_rebalance.pipeline.logparse.columns.tables import ColumnStory
from kafka_rebalance.pipeline.logparse.findings import INCIDENT_MS, GroupFindings, MostFailing

# Session timeouts of different clients this close together have a shared cause (``findings``).
CLUSTER_MS = 60_000


def column_findings(story: ColumnStory) -> dict[int, GroupFindings]:
    """The findings of every group ``story`` covers, by group number."""
    import pyarrow as pa
    import pyarrow.compute as pc

    groups = np.flatnonzero(story.covered)
    count = len(story.covered)
    rebalances, events = story.tables["rebalances"], story.tables["member_events"]
    of_rebalance, of_event = story.row_groups["rebalances"], story.row_groups["member_events"]

    def per_group(mask: Any, owners: np.ndarray) -> np.ndarray:
        counted: np.ndarray = np.bincount(owners[np.asarray(mask, bool)], minlength=count)
        return counted

    def column(table: Any, name: str, *, fill: int = 0) -> tuple[np.ndarray, np.ndarray]:
        values = table.column(name)
        if pa.types.is_timestamp(values.type):
            values = values.cast(pa.int64())
        return (pc.fill_null(values, fill).to_numpy(zero_copy_only=False).astype(np.int64),
                values.is_valid().to_numpy(zero_copy_only=False))

    def numpy_of(values: Any) -> np.ndarray:
        array: np.ndarray = values.to_numpy(zero_copy_only=False)
        return array

    outcome = numpy_of(rebalances.column("outcome")) if rebalances.num_rows else np.zeros(0, object)
    duration, has_duration = column(rebalances, "duration_ms")
    generation, has_generation = column(rebalances, "generation")
    old_generation, has_old = column(rebalances, "old_generation")
    start, has_start = column(rebalances, "start")
    end, has_end = column(rebalances, "end")
    rebalance_cause = numpy_of(rebalances.column("cause")) if rebalances.num_rows else np.zeros(0, object)

    median_duration = _medians(of_rebalance[has_duration], duration[has_duration], count)
    max_duration = _maxima(of_rebalance[has_duration], duration[has_duration], count)
    max_generation = _maxima(np.concatenate([of_rebalance[has_generation], of_rebalance[has_old]]),
                             np.concatenate([generation[has_generation], old_generation[has_old]]), count)
    first_ms = _maxima(of_rebalance[has_start], -start[has_start], count)
    last = np.where(has_end & (end != 0), end, start)  # ``end or start``
    last_ms = _maxima(of_rebalance[has_start], last[has_start], count)

    kind = numpy_of(events.column("kind")) if events.num_rows else np.zeros(0, object)
    cause = numpy_of(pc.fill_null(events.column("cause"), "")) if events.num_rows else np.zeros(0, object)
    reason = pc.fill_null(events.column("reason"), "")
    client_or_member = pc.if_else(pa.array(~falsy(events.column("client"))), events.column("client"),
                                  events.column("member"))
    time_ms, timed = column(events, "time")
    failure = np.isin(kind, ["failed", "fenced"]) & (cause != "rebalance_timeout")
    who = codes_of(client_or_member)
    key_text = pc.fill_null(pc.if_else(pa.array(~falsy(client_or_member)), client_or_member,
                                       pa.scalar(None, pa.string())), "?")  # ``client or member or "?"``
    keyed = codes_of(key_text)
    failed_clients = _distinct_per_group(of_event[failure], who[failure], count)
    most_failing = _most_failing(of_event, keyed, key_text, time_ms, failure & timed)
    polled = (kind == "poll_timeout") | (np.isin(kind, ["left", "leave_request"])
                                         & numpy_of(pc.match_substring(pc.utf8_lower(reason), "poll timeout")))
    poll = _poll_timeouts(of_event, keyed, key_text, time_ms, polled & timed, count)
    clustered = _clustered(of_event[failure & timed], time_ms[failure & timed], keyed[failure & timed], count)
    versions = _kafka_python_versions(events.column("member"), of_event)
    static_seen = per_group(pc.fill_null(pc.equal(events.column("reason"), "Static"), False).to_numpy(
        zero_copy_only=False), of_event) > 0

    storms, of_storm = story.tables["storms"], story.row_groups["storms"]
    storm_sizes, _ = column(storms, "rebalances")
    largest = _first_largest(of_storm, storm_sizes)
    storm_size = storm_sizes.tolist()
    storm_kind = storms.column("kind").to_pylist()
    storm_client = storms.column("top_client").to_pylist()
    storm_duration = storms.column("duration_ms").to_pylist()

    periods, of_period = story.tables["empty_periods"], story.row_groups["empty_periods"]
    period_length, has_length = column(periods, "duration_ms")
    longest_empty = _maxima(of_period[has_length], period_length[has_length], count)

    causes, of_cause = story.tables["causes"], story.row_groups["causes"]
    cause_counts = _counts_in_order(of_cause, causes.column("cause"))

    values = {
        "rebalances": np.bincount(of_rebalance, minlength=count), "open_rebalances": per_group(outcome == "open",
                                                                                                of_rebalance),
        "failures": per_group(failure, of_event), "failures_during_rebalances": per_group(
            failure & story.during_rebalance, of_event), "leaves": per_group(kind == "left", of_event),
        "storms": np.bincount(of_storm, minlength=count),
        "restart_rebalances": per_group(rebalance_cause == "restarted", of_rebalance),
        "coordinator_write_failures": per_group(kind == "coordinator_write_failed", of_event),
        "empty_periods": np.bincount(of_period, minlength=count)}
    chosen = groups.tolist()
    counted = {name: array[groups].tolist() for name, array in values.items()}
    at = [largest.get(group) for group in chosen]
    counts = [cause_counts.get(group, {}) for group in chosen]
    # each field's values for the chosen groups, in ``GroupFindings``' order, made dicts at the end
    fields = {
        "cluster": [story.clusters[group] for group in chosen], "group": [story.groups[group] for group in chosen],
        "rebalances": counted["rebalances"], "open_rebalances": counted["open_rebalances"],
        "median_duration_ms": [median_duration.get(group) for group in chosen],
        "max_duration_ms": [max_duration.get(group) for group in chosen],
        "max_generation": [max_generation.get(group) for group in chosen],
        "first_ms": [-first_ms[group] if group in first_ms else None for group in chosen],
        "last_ms": [last_ms.get(group) for group in chosen],
        "failures": counted["failures"], "failed_clients": [failed_clients[group] for group in chosen],
        "failures_during_rebalances": counted["failures_during_rebalances"],
        "most_failing": [most_failing.get(group) for group in chosen],
        "kafka_python_version": [versions.get(group) for group in chosen],
        "poll_timeout_leaves": [poll[0][group] for group in chosen],
        "poll_timeout_client": [poll[1].get(group) for group in chosen],
        "poll_timeout_client_count": [poll[2][group] for group in chosen],
        "poll_timeout_median_gap_ms": [poll[3].get(group) for group in chosen],
        "leaves": counted["leaves"], "storms": counted["storms"],
        "largest_storm": [storm_size[row] if row is not None else 0 for row in at],
        "largest_storm_kind": [storm_kind[row] if row is not None else None for row in at],
        "largest_storm_client": [storm_client[row] if row is not None else None for row in at],
        "largest_storm_minutes": [storm_duration[row] / 60000 if row is not None else None for row in at],
        "restart_rebalances": counted["restart_rebalances"],
        "static_members_seen": static_seen[groups].tolist(),
        "clustered_session_timeouts": [clustered[group] for group in chosen],
        "coordinator_moves": [found.get("coordinator_moved", 0) for found in counts],
        "coordinator_write_failures": counted["coordinator_write_failures"],
        "empty_periods": counted["empty_periods"],
        "longest_empty_ms": [longest_empty.get(group) for group in chosen],
        "cause_counts": counts, "protocols": [["classic"] if number else [] for number in counted["rebalances"]]}
    names = tuple(fields)
    return {group: cast("GroupFindings", dict(zip(names, row, strict=True)))
            for group, row in zip(chosen, zip(*fields.values(), strict=True), strict=True)}


def _runs(owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal (sorted) ``owners`` starts, and its owner."""
    starts = np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]])) if len(owners) else \
        np.zeros(0, np.int64)
    return starts, owners[starts]


def _maxima(owners: np.ndarray, values: np.ndarray, count: int) -> dict[int, int]:
    """Each group's largest value (groups without one: absent)."""
    if not len(owners):
        return {}
    largest = np.full(count, np.iinfo(np.int64).min)
    np.maximum.at(largest, owners, values)
    present = np.flatnonzero(np.bincount(owners, minlength=count))
    return dict(zip(present.tolist(), largest[present].tolist(), strict=True))


def _medians(owners: np.ndarray, values: np.ndarray, count: int) -> dict[int, int | float]:
    """Each group's median as ``statistics.median`` gives it: the middle value, or the mean of
    the middle two (a float)."""
    if not len(owners):
        return {}
    order = np.lexsort((values, owners))
    owners, values = owners[order], values[order]
    starts, present = _runs(owners)
    sizes = np.diff(np.append(starts, len(owners)))
    upper = starts + sizes // 2
    odd = sizes % 2 == 1
    found: dict[int, int | float] = {}
    middle = values[upper].tolist()
    lower = values[np.maximum(upper - 1, 0)].tolist()
    for group, is_odd, high, low in zip(present.tolist(), odd.tolist(), middle, lower, strict=True):
        found[group] = high if is_odd else (low + high) / 2
    return found


def _distinct_per_group(owners: np.ndarray, codes: np.ndarray, count: int) -> list[int]:
    pairs = np.unique(np.stack([owners, codes], axis=1), axis=0) if len(owners) else np.zeros((0, 2), np.int64)
    distinct: list[int] = np.bincount(pairs[:, 0], minlength=count).tolist()
    return distinct


def _keyed_runs(owners: np.ndarray, keys: np.ndarray, times: np.ndarray, mask: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The events of ``mask`` by (group, key) in time order: the sorted owners, keys, times and
    each event's first place (which key a group met first), and where each (group, key) starts."""
    at = np.flatnonzero(mask)
    order = np.lexsort((times[at], keys[at], owners[at]))
    at = at[order]
    group, key, time_ms = owners[at], keys[at], times[at]
    starts = np.flatnonzero(np.concatenate([[True], (group[1:] != group[:-1]) | (key[1:] != key[:-1])])) \
        if len(at) else np.zeros(0, np.int64)
    first_seen = np.minimum.reduceat(at, starts) if len(at) else np.zeros(0, np.int64)
    return group, key, time_ms, starts, first_seen


def _leaders(group: np.ndarray, tally: np.ndarray, first_seen: np.ndarray) -> np.ndarray:
    """Per group, which of its (group, key) runs has the largest tally, the first seen on ties
    (``max`` over a dict in insertion order)."""
    order = np.lexsort((first_seen, -tally, group))
    leaders: np.ndarray = order[np.concatenate([[True], group[order][1:] != group[order][:-1]])] if len(order) \
        else order
    return leaders


def _most_failing(owners: np.ndarray, keys: np.ndarray, key_text: Any, times: np.ndarray, mask: np.ndarray
                  ) -> dict[int, MostFailing]:
    """The client failing most in each group and how regularly: the mean and the population
    standard deviation of the intervals between its failures (``statistics.fmean``, ``pstdev``:
    the mean exact, the intervals telescoping; the deviation over the intervals in extended
    precision, about its mean, rounded once)."""
    import pyarrow as pa

    group, _, time_ms, starts, first_seen = _keyed_runs(owners, keys, times, mask)
    if not len(starts):
        return {}
    sizes = np.diff(np.append(starts, len(group)))
    run_group = group[starts]
    leaders = _leaders(run_group, sizes, first_seen)
    first, size = starts[leaders], sizes[leaders]
    last = first + size - 1
    span = time_ms[last] - time_ms[first]
    # each leader's intervals, one after another
    gaps = size - 1
    at = np.repeat(first, gaps) + rank_within(np.repeat(np.arange(len(leaders)), gaps)) + 1
    intervals = (time_ms[at] - time_ms[at - 1]).astype(np.longdouble)
    owner = np.repeat(np.arange(len(leaders)), gaps)
    mean = np.zeros(len(leaders), np.longdouble)
    np.add.at(mean, owner, intervals)
    mean = mean / np.maximum(gaps, 1)
    squares = np.zeros(len(leaders), np.longdouble)
    np.add.at(squares, owner, (intervals - mean[owner]) ** 2)
    spread = np.sqrt(squares / np.maximum(gaps, 1)).astype(np.float64)
    names = key_text.take(pa.array(first_seen[leaders])).to_pylist()
    found: dict[int, MostFailing] = {}
    for group_number, name, failures, gap_count, total, deviation in zip(
            run_group[leaders].tolist(), names, size.tolist(), gaps.tolist(), span.tolist(), spread.tolist(),
            strict=True):
        found[group_number] = {"client": name, "failures": failures,
                               "mean_interval_ms": float(total) / gap_count if gap_count else None,
                               "sd_interval_ms": deviation if gap_count > 1 else (0.0 if gap_count else None)}
    return found


def _poll_timeouts(owners: np.ndarray, keys: np.ndarray, key_text: Any, times: np.ndarray, mask: np.ndarray,
                   count: int) -> tuple[list[int], dict[int, str], list[int], dict[int, int | float]]:
    """Poll-timeout leaves, a client's lines less than ``INCIDENT_MS`` after the first of an
    incident being that incident (``findings._incidents``): per group how many, the client with
    the most (the first seen on ties), its count and the median gap between its incidents."""
    import pyarrow as pa

    group, _, time_ms, starts, first_seen = _keyed_runs(owners, keys, times, mask)
    ends = np.append(starts[1:], len(group))
    run_of = np.repeat(np.arange(len(starts)), ends - starts)
    # the next incident after each line: the first line of its run more than INCIDENT_MS after it
    following = np.searchsorted(pair_key(run_of, time_ms), pair_key(run_of, time_ms + INCIDENT_MS), side="right")
    incident = np.zeros(len(group), bool)
    frontier = starts
    while len(frontier):
        incident[frontier] = True
        after = following[frontier]
        inside = after < len(group)
        frontier = after[inside][run_of[after[inside]] == run_of[frontier[inside]]]  # still its run
    tally = np.bincount(run_of[incident], minlength=len(starts))
    leaves: list[int] = np.bincount(group[starts], weights=tally, minlength=count).astype(np.int64).tolist() \
        if len(starts) else [0] * count
    leaders = _leaders(group[starts], tally, first_seen)
    names = key_text.take(pa.array(first_seen[leaders])).to_pylist()
    clients: dict[int, str] = {}
    counts = [0] * count
    gaps: dict[int, int | float] = {}
    incident_at = np.flatnonzero(incident)
    for leader, name in zip(leaders.tolist(), names, strict=True):
        number = int(group[starts[leader]])
        clients[number] = name
        counts[number] = int(tally[leader])
    chosen = np.isin(run_of[incident_at], leaders)
    chosen_at = incident_at[chosen]
    between = np.diff(time_ms[chosen_at])
    same = run_of[chosen_at][1:] == run_of[chosen_at][:-1]
    gap_owner = group[chosen_at][1:][same]
    gaps = _medians(gap_owner, between[same], count) if len(gap_owner) else {}
    return leaves, clients, counts, gaps


def _clustered(owners: np.ndarray, times: np.ndarray, keys: np.ndarray, count: int) -> list[int]:
    """Per group, the most different clients failing within ``CLUSTER_MS`` of one failure and
    after it: each window's distinct clients, those whose previous failure is before it."""
    order = np.lexsort((times, owners))
    group, time_ms, key = owners[order], times[order], keys[order]
    size = len(group)
    if not size:
        return [0] * count
    window_end = np.searchsorted(pair_key(group, time_ms), pair_key(group, time_ms + CLUSTER_MS), side="right")
    by_key = np.lexsort((np.arange(size), key, group))
    previous = np.full(size, -1)
    repeat = (group[by_key][1:] == group[by_key][:-1]) & (key[by_key][1:] == key[by_key][:-1])
    previous[by_key[1:][repeat]] = by_key[:-1][repeat]
    lengths = window_end - np.arange(size)
    start = np.repeat(np.arange(size), lengths)
    inside = start + rank_within(start)
    distinct = np.bincount(start, weights=previous[inside] < start, minlength=size).astype(np.int64)
    most = np.zeros(count, np.int64)
    np.maximum.at(most, group, distinct)
    clustered: list[int] = most.tolist()
    return clustered


def _kafka_python_versions(members: Any, owners: np.ndarray) -> dict[int, str]:
    """The oldest kafka-python version a group's member ids name (as strings compare)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(members, pa.ChunkedArray):
        members = members.combine_chunks()
    found = pc.extract_regex(pc.fill_null(members, ""), r"kafka-python-(?P<version>\d+\.\d+)")
    named = np.flatnonzero(found.is_valid().to_numpy(zero_copy_only=False))
    if not len(named):
        return {}
    # Each group's first after sorting by (group, version): a sort, not ``Table.group_by``, whose
    # first use imports pyarrow's query engine and dataset module (0.06 s in every Spark worker).
    versions = pa.table({"group": owners[named], "version": found.field("version").take(pa.array(named))})
    order = pc.sort_indices(versions, [("group", "ascending"), ("version", "ascending")]).to_numpy()
    firsts, groups = _runs(owners[named][order])
    oldest = versions.column("version").take(pa.array(order[firsts])).to_pylist()
    return dict(zip(groups.tolist(), oldest, strict=True))


def _first_largest(owners: np.ndarray, sizes: np.ndarray) -> dict[int, int]:
    """Per group, its largest storm's row (the first on ties)."""
    order = np.lexsort((np.arange(len(owners)), -sizes, owners))
    first = order[np.concatenate([[True], owners[order][1:] != owners[order][:-1]])] if len(order) else order
    return dict(zip(owners[first].tolist(), first.tolist(), strict=True))


def _counts_in_order(owners: np.ndarray, causes: Any) -> dict[int, dict[str, int]]:
    """Per group, how many of its causes rows have each cause, in the order first seen."""
    if not len(owners):
        return {}
    code = codes_of(causes)
    names = causes.combine_chunks().dictionary_encode().dictionary.to_pylist() if hasattr(
        causes, "combine_chunks") else causes.dictionary_encode().dictionary.to_pylist()
    pair = owners * (int(code.max()) + 2) + code + 1
    _, first, tally = np.unique(pair, return_index=True, return_counts=True)
    order = np.lexsort((first, owners[first]))
    found: dict[int, dict[str, int]] = {}
    for group, cause, number in zip(owners[first[order]].tolist(), code[first[order]].tolist(),
                                    tally[order].tolist(), strict=True):
        found.setdefault(group, {})[names[cause]] = number
    return found
