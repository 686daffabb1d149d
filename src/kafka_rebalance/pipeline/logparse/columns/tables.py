"""Every story table of the groups the columns tell (``story.tell``'s rows: rebalances, member events, causes, empty periods, storms)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kafka_rebalance.pipeline.logparse.columns.arrays import (
    as_array,
    changes,
    codes_of,
    longs,
    pair_key,
    table_of,
)
from kafka_rebalance.pipeline.logparse.columns.causes import rebalance_causes
from kafka_rebalance.pipeline.logparse.columns.members import member_events
from kafka_rebalance.pipeline.logparse.columns.rebalances import (
    EMPTY,
    OPEN,
    OUTCOMES,
    ClassicRebalances,
    classic_rebalances,
)


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
    new_group = changes(ordered, ("cluster", "group"))
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
        return longs(values[name][kept])

    def text(column: str, row_name: str) -> Any:
        row = values[row_name][kept]
        found = table.column(column).take(pa.array(np.nan_to_num(row, nan=0).astype(np.int64)))
        return pc.if_else(pa.array(np.isnan(row)), pa.scalar(None, pa.string()), found)

    def when(milliseconds: Any) -> Any:
        return milliseconds.cast(pa.timestamp("ms"))

    outcome_number = values["outcome"][kept].astype(np.int64)
    is_open = outcome_number == OPEN
    start, end = values["start_ms"][kept], values["end_ms"][kept]
    start_known = values["start_known"][kept] == 1
    shown_end = np.where(is_open, np.nan, end)
    duration = np.where(start_known & ~is_open, end - start, np.nan)
    drawn = np.where(is_open | np.isnan(end), values["clip_ms"][kept], np.nan)

    partition = _partition_at(table, rows, rebalances.made_position[kept], group_all)
    rebalance_columns = {
        "group": group_of.take(pa.array(group)), "generation": number("generation"), "start": when(number("start_ms")),
        "end": when(longs(shown_end)), "duration_ms": longs(duration), "reason": text("reason", "reason_row"),
        "members": number("members"), "old_generation": number("old_generation"), "leader": text("member", "leader_row"),
        "outcome": pa.array(np.array(OUTCOMES, object)[outcome_number].tolist(), pa.string()),
        "failed_members": causes.failed.take(keep), "left_members": causes.left.take(keep), "partition": partition,
        "cluster": cluster_of.take(pa.array(group)), "protocol": pa.array(["classic"] * len(kept), pa.string()),
        "source": pa.array(["broker"] * len(kept), pa.string()), "start_known": pa.array(start_known),
        "joined_members": causes.joined.take(keep), "assignor": pa.nulls(len(kept), pa.string()),
        "assignor_ms": pa.nulls(len(kept), pa.int64()), "cause": causes.cause.take(keep),
        "cause_member": causes.cause_member.take(keep), "drawn_until": when(longs(drawn)),
        "during": causes.during.take(keep)}
    tables = {"rebalances": table_of(rebalance_columns, arrow_schema("rebalances"))}
    row_groups = {"rebalances": group}

    told = np.flatnonzero(covered[events.group])
    columns = events.columns
    member_columns = {"group": group_of.take(pa.array(events.group[told])), "member": columns["member"],
                      "time": when(columns["time_ms"]), "kind": columns["kind"], "client": columns["client"],
                      "reason": columns["reason"], "cluster": cluster_of.take(pa.array(events.group[told])),
                      "source": columns["source"], "side": columns["side"], "generation": columns["generation"],
                      "cause": columns["cause"], "input": columns["input"]}
    member_columns = {name: (value if name in ("group", "cluster") else as_array(value).take(pa.array(told)))
                      for name, value in member_columns.items()}
    tables["member_events"] = table_of(member_columns, arrow_schema("member_events"))
    row_groups["member_events"] = events.group[told]

    found = causes.causes
    which = np.flatnonzero(covered[rebalances.group[found["rebalance"]]])
    of = found["rebalance"][which]
    cause_columns = {"cluster": cluster_of.take(pa.array(rebalances.group[of])),
                     "group": group_of.take(pa.array(rebalances.group[of])),
                     "generation": longs(values["generation"][of]), "start": when(longs(values["start_ms"][of])),
                     **{name: found[name].take(pa.array(which)) for name in ("cause", "member", "detail", "evidence",
                                                                             "evidence_sources")}}
    tables["causes"] = table_of(cause_columns, arrow_schema("causes"))
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

    lines = np.flatnonzero((rebalances.line_kind == EMPTY) & covered[rebalances.line_group])
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
    found = np.searchsorted(pair_key(key_group, key_start), pair_key(group, np.nan_to_num(went, nan=0)),
                            side="right")
    inside = (found < len(key_group)) & ~np.isnan(went)
    hit = inside & (np.append(key_group, -1)[found] == group)
    end = np.where(hit, np.append(key_start, np.nan)[found], np.nan)

    columns = {"group": group_of.take(pa.array(group)), "generation": table.column("generation").take(pa.array(at)),
               "start": longs(went).cast(pa.timestamp("ms")), "end": longs(end).cast(pa.timestamp("ms")),
               "duration_ms": longs(end - went), "cluster": cluster_of.take(pa.array(group))}
    return table_of(columns, arrow_schema("empty_periods")), group



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
    failed = as_array(rebalances.column("failed_members").take(pa.array(order)))
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
    return table_of(columns, arrow_schema("storms")), group[order[first]]
