"""The logs report: the answer of ``kafka-rebalance logs`` (per group, most rebalances first: its
rebalances with their causes, then its findings with their advice and numbers), built once from
the tables and findings (``logs_answer``) and rendered twice: as HTML here, for the terminal and
as JSON in ``report.terminal``; plus the figures and the report's other sections.

The tables are read as Arrow tables (``report_tables``) and reduced with pyarrow.compute and
numpy to the few rows told (the groups shown, their latest rebalances, a figure's rows), which
are then formatted in Python: a paste is answered without pandas, whose import alone was a
quarter of the paste's time. Numbers, times and row orders are those the report has always
shown: an integer column missing a value is shown as floats (``12.0``), a sort by time is
numpy's (``_time_order``), a figure's CSV is written as a frame's ``to_csv`` wrote it
(``Columns.to_csv``)."""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_rebalance.pipeline.report import svg
from kafka_rebalance.pipeline.report.page import (
    Figure,
    cards,
    figure_section,
    generated_note,
    missing,
    page,
    rows_table,
    section,
)

if TYPE_CHECKING:
    from kafka_rebalance.pipeline.logparse.findings import GroupFindings

LOG_TABLES = ("rebalances", "member_events", "storms", "empty_periods", "client_rebalances", "causes",
              "unrecognised")
# Groups in the figures; groups told one by one in the answer (the report and --json; the
# terminal tells the first ``TERMINAL_GROUPS`` of them).
TOP_GROUPS = 12
GROUP_SECTIONS = 20
# The latest rebalances of each group told one by one.
GROUP_SECTION_ROWS = 20
EVIDENCE_LINES = 5
# A group's rebalances drawn in the timeline (its latest).
TIMELINE_ROWS = 3000
# Member events marked in the timeline (the first, in table order).
TIMELINE_MARKS = 20000


# The columns the report and its summary use, where a table has more (all columns otherwise).
REPORT_COLUMNS = {
    "rebalances": ("group", "cluster", "old_generation", "generation", "start", "end", "duration_ms", "members", "outcome", "reason",
                   "cause", "cause_member", "failed_members", "left_members", "drawn_until", "start_known",
                   "joined_members", "during", "protocol"),
    "member_events": ("group", "cluster", "member", "time", "kind", "client"),
    "causes": ("cluster", "group", "generation", "start", "cause", "detail", "evidence"),
    "client_rebalances": ("start", "group", "cluster", "client", "client_library", "generation", "protocol",
                          "assigned", "revoked", "lost", "outcome"),
}
# The findings' fields the report shows (its "Groups" table, the storms figure without groups).
FINDINGS_COLUMNS = ("cluster", "group", "rebalances", "open_rebalances", "median_duration_ms", "max_duration_ms",
                    "max_generation", "failures", "poll_timeout_leaves", "leaves", "storms", "empty_periods")


def read_tables(directory: Any) -> dict[str, pa.Table]:
    """The logs tables written under ``directory`` (a path or URL; one Parquet directory each),
    as ``report_tables`` gives them (the Spark engine's; only the columns the report shows are
    read)."""
    from kafka_rebalance.pipeline.io import join, read_parquet_parts

    tables = {}
    for name in LOG_TABLES:
        columns = REPORT_COLUMNS.get(name)
        tables[name] = read_parquet_parts(join(str(directory), name), list(columns) if columns else None)
    return report_tables(tables)


def report_tables(tables: Mapping[str, pa.Table]) -> dict[str, pa.Table]:
    """The tables the report reads (Arrow, either engine's) with the columns it shows
    (``REPORT_COLUMNS``); an integer column missing a value anywhere as floats (NaN where
    missing), as the report shows its numbers."""
    chosen = {}
    for name in LOG_TABLES:
        columns = REPORT_COLUMNS.get(name)
        table = tables[name].select(list(columns)) if columns else tables[name]
        for index, column in enumerate(table.schema):
            if pa.types.is_integer(column.type) and table.column(index).null_count:
                table = table.set_column(index, column.name, pc.cast(table.column(index), pa.float64()))
        chosen[name] = table
    return chosen


# --------------------------------------------------------------------------- small tables

@dataclass(frozen=True)
class Columns:
    """A few rows as the report shows them (an HTML table) and writes them (a figure's data):
    named columns of Python values; whole numbers as ints, or floats (NaN where missing) when one
    is missing; times as naive datetimes (UTC); other missing values None."""

    names: tuple[str, ...]
    values: tuple[Sequence[Any], ...]

    def __len__(self) -> int:
        return len(self.values[0]) if self.values else 0

    def rows(self) -> Iterator[tuple[Any, ...]]:
        return zip(*self.values, strict=True)

    def column(self, name: str) -> Sequence[Any]:
        return self.values[self.names.index(name)]

    def html(self, limit: int = 40, count: int | None = None) -> str:
        """The first ``limit`` rows as an HTML table; ``count``: the rows of the table these are
        the first of, where it has more."""
        return rows_table(self.names, self.rows(), len(self) if count is None else count, limit)

    def to_csv(self, *, index: bool = False) -> str:
        """CSV as the report has always written its figures' data: floats as numpy writes them
        (shortest round trip), nothing where missing; each block of ``_CSV_BLOCK_CELLS`` cells'
        times to the second, or to the millisecond when one of them has milliseconds, or as
        dates when all are midnight."""
        del index  # no index is ever written
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.names)
        block = max(_CSV_BLOCK_CELLS // (len(self.names) or 1), 1)
        for start in range(0, len(self), block):
            cells = [_csv_cells(values[start:start + block]) for values in self.values]
            writer.writerows(zip(*cells, strict=True))
        return buffer.getvalue()


# Rows written at a time (``Columns.to_csv``): how many cells' times share one format.
_CSV_BLOCK_CELLS = 100_000


def _csv_cells(values: Sequence[Any]) -> list[str]:
    """One column's values as CSV fields (``Columns.to_csv``)."""
    present = [v for v in values if not missing(v)]
    if present and all(isinstance(v, datetime) for v in present):
        if all(v.hour == v.minute == v.second == v.microsecond == 0 for v in present):
            shown = "%Y-%m-%d"
        else:
            shown = "%Y-%m-%d %H:%M:%S.%f" if any(v.microsecond for v in present) else "%Y-%m-%d %H:%M:%S"
        texts = ["" if missing(v) else v.strftime(shown) for v in values]
        return [text[:-3] for text in texts] if shown.endswith("%f") else texts  # %f: microseconds
    if any(isinstance(v, float) for v in present):
        texts = np.asarray(values, dtype=np.float64).astype(str).tolist()
        return ["" if missing(v) else text for v, text in zip(values, texts, strict=True)]
    return ["" if missing(v) else str(v) for v in values]


def _python_values(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """A column's values for ``Columns``: floats with NaN where missing, else Arrow's Python
    values (times naive datetimes, lists lists, None where missing)."""
    if pa.types.is_floating(column.type):
        return column.to_numpy(zero_copy_only=False).astype(np.float64).tolist()  # type: ignore[no-any-return]
    return column.to_pylist()  # type: ignore[no-any-return]


def _columns(table: pa.Table, names: Sequence[str] | None = None) -> Columns:
    chosen = list(names) if names is not None else table.column_names
    return Columns(tuple(chosen), tuple(_python_values(table.column(name)) for name in chosen))


def _as_a_column(values: list[Any]) -> list[Any]:
    """Python values as one column holds them: numbers with a missing one, or whole numbers
    among floats, all floats (NaN where missing)."""
    present = [v for v in values if v is not None]
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in present)
    if present and numbers and (len(present) < len(values) or any(isinstance(v, float) for v in present)):
        return [math.nan if v is None else float(v) for v in values]
    return values


def _time_order(times: pa.ChunkedArray | pa.Array, *, ascending: bool = True, kind: str = "quicksort") -> np.ndarray:
    """The row order of a sort by a time column: numpy's ``argsort`` (of ``kind``) of the times
    present, descending by sorting them reversed and reversing the order, missing times last in
    table order. ``quicksort`` is not stable: rows of one time keep numpy's order of them, which
    the report's row orders have always had."""
    if isinstance(times, pa.ChunkedArray):
        times = times.combine_chunks()
    present = ~np.asarray(times.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    values = pc.cast(times.fill_null(0), pa.int64()).to_numpy().astype("datetime64[ms]")
    positions = np.arange(len(values))
    kept, known = values[present], positions[present]
    if not ascending:
        kept, known = kept[::-1], known[::-1]
    order = known[kept.argsort(kind=kind)]
    if not ascending:
        order = order[::-1]
    return np.concatenate([order, positions[~present]])


def _epoch_seconds(times: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Times as epoch seconds (a missing one as the earliest int64 millisecond)."""
    return pc.cast(times, pa.int64()).fill_null(np.iinfo(np.int64).min).to_numpy() / 1000.0  # type: ignore[no-any-return]


def _ms(times: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Times present as epoch milliseconds."""
    return pc.cast(times.drop_null(), pa.int64()).to_numpy()  # type: ignore[no-any-return]


def _of_groups(table: pa.Table, groups: Sequence[str]) -> pa.Table:
    """The rows of ``table`` whose ``group`` is one of ``groups`` (in table order)."""
    return table.filter(pc.is_in(table["group"], value_set=pa.array(list(groups), pa.string())))


def _labelled(table: pa.Table, cluster_names: dict[str, str] | None) -> pa.Table:
    """``group`` as shown: ``cluster/group`` when the inputs span several clusters (see
    ``_cluster_names``)."""
    if not cluster_names or "cluster" not in table.column_names or not table.num_rows:
        return table
    clusters = pc.dictionary_encode(table["cluster"].cast(pa.string()).fill_null("None")).combine_chunks()
    shown = pa.array([cluster_names.get(c, c) for c in clusters.dictionary.to_pylist()], pa.string())
    label = pc.binary_join_element_wise(shown.take(clusters.indices),
                                        table["group"].cast(pa.string()).fill_null("None"), "/")
    return table.set_column(table.column_names.index("group"), "group", label)


def findings_columns(findings: Sequence[GroupFindings], cluster_names: dict[str, str] | None = None) -> Columns:
    """Each group's findings (``FINDINGS_COLUMNS``), ``group`` as shown."""
    values = {name: [f.get(name) for f in findings] for name in FINDINGS_COLUMNS}
    if cluster_names:
        values["group"] = [_label(str(c), str(g), cluster_names) for c, g in zip(values["cluster"], values["group"],
                                                                                 strict=True)]
    return Columns(FINDINGS_COLUMNS, tuple(_as_a_column(values[name]) for name in FINDINGS_COLUMNS))


def _cluster_names(findings: Sequence[GroupFindings]) -> dict[str, str] | None:
    """None for one cluster; else each cluster's name as shown: an input read on its own is a
    cluster named by its path, shown by its file name unless two inputs share one."""
    clusters = sorted({str(f["cluster"]) for f in findings})
    if len(clusters) <= 1:
        return None
    short = {c: c.rstrip("/").rsplit("/", 1)[-1] or c for c in clusters}
    return short if len(set(short.values())) == len(short) else {c: c for c in clusters}


def _label(cluster: str, group: str, cluster_names: dict[str, str] | None) -> str:
    return f"{cluster_names.get(cluster, cluster)}/{group}" if cluster_names else group


def _ranked_groups(groups: Columns, limit: int) -> list[str]:
    """The ``limit`` groups with the most rebalances, then failures, then by name."""
    ranked = sorted(zip(groups.column("rebalances"), groups.column("failures"), groups.column("group"), strict=True),
                    key=lambda g: (-g[0], -g[1], g[2]))
    return [str(group) for _, _, group in ranked[:limit]]


def _top_groups(groups: Columns) -> list[str]:
    return _ranked_groups(groups, TOP_GROUPS)


def logs_figures(tables: Mapping[str, pa.Table], findings: Sequence[GroupFindings]) -> list[Figure]:
    """The figures of the logs report: the top groups' rows, chosen with pyarrow.compute."""
    several = _cluster_names(findings)
    groups = findings_columns(findings, several)
    top = _top_groups(groups)
    rebalances = _of_groups(_labelled(tables["rebalances"], several), top)
    timeline = rebalances.take(_time_order(rebalances["start"]))
    timeline = timeline.take(_latest_of_each_group(timeline["group"], TIMELINE_ROWS))
    timeline = pa.table({
        **{name: timeline[name] for name in ("group", "generation", "start", "end", "duration_ms", "members", "outcome",
                                             "reason", "cause")},
        "failed": pc.list_value_length(timeline["failed_members"]).cast(pa.int64()),
        "left": pc.list_value_length(timeline["left_members"]).cast(pa.int64()),
        "drawn_until": timeline["drawn_until"]})
    events = _of_groups(_labelled(tables["member_events"], several), top)
    marks = events.filter(pc.is_in(events["kind"], value_set=pa.array(["failed", "left", "joined", "fenced",
                                                                       "poll_timeout"])))
    marks = marks.select(["group", "member", "time", "kind", "client"]).slice(0, TIMELINE_MARKS)
    storms = _of_groups(_labelled(tables["storms"], several), top)
    durations = rebalances.filter(pc.is_valid(rebalances["duration_ms"]))
    return [
        rebalance_timeline_figure(timeline, marks, storms, top),
        duration_figure(_duration_quantiles(durations), top),
        storms_figure(groups, storms),
    ]


def _latest_of_each_group(groups: pa.ChunkedArray, latest: int) -> np.ndarray:
    """The positions of each group's last ``latest`` rows, in order."""
    codes = pc.dictionary_encode(groups).combine_chunks().indices.to_numpy()
    kept = [np.flatnonzero(codes == code)[-latest:] for code in np.unique(codes)]
    return np.sort(np.concatenate(kept)) if kept else np.arange(0)


# The quantiles of each group's rebalance durations, by name (the duration figure's data).
_QUANTILES = (("p5", 0.05), ("p25", 0.25), ("p50", 0.5), ("p75", 0.75), ("p95", 0.95))


def _group_codes(groups: pa.ChunkedArray | pa.Array) -> tuple[list[Any], np.ndarray]:
    """The distinct groups (in order of first appearance; a missing one as None) and each row's
    place among them: the figures' per-group sums, extremes and lists, with numpy
    (``Table.group_by``'s first use imports pyarrow's query engine and dataset module, and pandas
    with them where it is importable: 0.02-0.25 s of a run's report)."""
    whole = groups.combine_chunks() if isinstance(groups, pa.ChunkedArray) else groups
    encoded = pc.dictionary_encode(whole, null_encoding="encode")
    return encoded.dictionary.to_pylist(), encoded.indices.to_numpy()


def _duration_quantiles(durations: pa.Table) -> Columns:
    """Per group (by name): how many rebalances have a length, the quantiles of their lengths
    (numpy's linear interpolation), the longest and the shortest, all as floats."""
    if not durations.num_rows:
        return Columns((), ())
    # the lengths as their column holds them: whole milliseconds, or floats where one is missing
    kind = np.int64 if pa.types.is_integer(durations.schema.field("duration_ms").type) else np.float64
    names, codes = _group_codes(durations["group"])
    order = pc.sort_indices(durations["group"]).to_numpy()  # by name, as Arrow sorts: missing last
    in_order = codes[order]
    starts = np.flatnonzero(np.concatenate([[True], in_order[1:] != in_order[:-1]]))
    lengths = durations["duration_ms"].to_numpy().astype(kind)[order]
    rows = []
    for group, values in zip([names[code] for code in in_order[starts]], np.split(lengths, starts[1:]), strict=True):
        rows.append([group, float(len(values)),
                     *(float(np.percentile(values, np.array([q]) * 100.0, method="linear")[0]) for _, q in _QUANTILES),
                     float(values.max()), float(values.min())])
    columns = ("group", "rebalances", *(name for name, _ in _QUANTILES), "max", "min")
    return Columns(columns, tuple(list(column) for column in zip(*rows, strict=True)))


def rebalance_timeline_figure(timeline: pa.Table, departures: pa.Table, storms: pa.Table,
                              groups: list[str]) -> Figure:
    """``timeline``: rebalances (group, start, end, outcome; drawn_until where known), in the
    order drawn; ``departures``: member events (group, time, kind); ``storms``: (group, start,
    end). Either of the last two may be an empty table without columns."""
    caption = ("Each bar is one rebalance, from \"Preparing to rebalance\" until the group was stable again "
               "(grey: ended empty, hatched: never completed, drawn to the next rebalance or the end of the "
               "log; one whose start or end is not in the log is drawn from or to the first or last line that "
               "shows it, and has no length in the durations figure); red crosses are members removed by session timeout or fenced, orange ticks members that left "
               "(or whose poll timeout expired), green pluses members that joined; shaded spans are storms. "
               f"Top {TOP_GROUPS} groups by rebalances.")
    if not timeline.num_rows:
        return Figure("rebalance_timeline", "Rebalances over time", caption, svg.empty("no rebalances found"),
                      _columns(timeline))
    # A line without a timestamp (a paste of bare messages) gives a rebalance with no place on a
    # time axis: it is in the tables, and the figure draws the others.
    untimed = timeline["start"].null_count
    timeline = timeline.filter(pc.is_valid(timeline["start"]))
    if departures.num_rows:
        departures = departures.filter(pc.is_valid(departures["time"]))
    if untimed:
        caption += f" {untimed} rebalance(s) whose lines carry no time are in the tables only."
    if not timeline.num_rows:
        return Figure("rebalance_timeline", "Rebalances over time", caption,
                      svg.empty("the log lines carry no time: the rebalances are in the tables below"),
                      _columns(timeline))
    drawn = set(timeline["group"].to_pylist())
    order = [g for g in groups if g in drawn][::-1]
    starts = _ms(timeline["start"])
    departed = _ms(departures["time"]) if departures.num_rows else np.arange(0)
    start_all = int(np.concatenate([starts, departed]).min())
    end_all = int(np.concatenate([starts, _ms(timeline["end"]), departed]).max())
    spans = _group_spans(timeline, departures, end_all)
    widest = max(max((end - start) / 1000 for start, end in spans.values()), 60.0)
    # Groups whose activity lies far apart (excerpts from different months, say) would shrink to
    # slivers on one shared axis: then each group gets its own row with its own time axis.
    separate = len(order) > 1 and (end_all - start_all) / 1000 > 50 * widest
    left = svg.label_width(order)
    panels = []
    top = 6.0
    for panel_groups in ([[group] for group in order[::-1]] if separate else [order]):
        low, high = spans[panel_groups[0]] if separate else (start_all, end_all)
        # (a whole millisecond, cut toward zero, as times are kept)
        pad = max(int(0.03 * (high - low)), 1000)
        axis = svg.Axis((low - pad) / 1000.0, (high + pad) / 1000.0, left, svg.WIDTH - svg.RIGHT_MARGIN, time=True)
        panel = svg.Panel(panel_groups, axis, top)
        _draw_panel(panel, timeline, departures, storms, end_all)
        panels.append(panel)
        top += panel.height + (svg.AXIS_HEIGHT if separate else 0)
    xlabel = "log time (UTC, as written by the broker)" + ("; each group on its own time axis" if separate else "")
    image = svg.figure(panels, xlabel, defs=svg.hatch_pattern("never-completed", "#2f6fde"))
    # by group, then time (a stable sort: rows of one time in the order drawn)
    group_rank = pc.rank(timeline["group"], sort_keys="ascending", tiebreaker="dense").to_numpy()
    data = timeline.take(np.lexsort((pc.cast(timeline["start"], pa.int64()).to_numpy(), group_rank)))
    return Figure("rebalance_timeline", "Rebalances over time", caption, image, _columns(data))


def _group_spans(timeline: pa.Table, departures: pa.Table, end_all: int) -> dict[str, tuple[int, int]]:
    """First and last moment (epoch ms) each group shows in the log (rebalances and member
    events; a rebalance without an end lasts until ``end_all``)."""
    ends = pc.cast(timeline["end"], pa.int64()).fill_null(end_all)
    moments = [pa.table({"group": timeline["group"], "t": pc.cast(timeline["start"], pa.int64())}),
               pa.table({"group": timeline["group"], "t": ends})]
    if departures.num_rows:
        moments.append(pa.table({"group": departures["group"], "t": pc.cast(departures["time"], pa.int64())}))
    table = pa.concat_tables(moments)
    names, codes = _group_codes(table["group"])
    known = table["t"].is_valid().to_numpy(zero_copy_only=False)
    moment = pc.fill_null(table["t"], 0).to_numpy()[known]
    low = np.full(len(names), np.iinfo(np.int64).max)
    high = np.full(len(names), np.iinfo(np.int64).min)
    np.minimum.at(low, codes[known], moment)
    np.maximum.at(high, codes[known], moment)
    return {group: (int(lowest), int(highest)) for group, lowest, highest in zip(names, low, high, strict=True)}


def _draw_panel(panel: svg.Panel, timeline: pa.Table, departures: pa.Table, storms: pa.Table, end_all: int) -> int:
    """The groups of one panel, one row each: their storms, rebalances and departures, one path
    per kind of mark; returns the marks drawn. A short rebalance stays visible (2 pixels)."""
    row_of = {group: y for y, group in enumerate(panel.labels)}
    in_panel = pa.array(list(row_of), pa.string())

    def rows(table: pa.Table) -> np.ndarray:
        return np.array([row_of[group] for group in table["group"].to_pylist()], dtype=np.int64)

    elements = 0
    if storms.num_rows:
        mine = storms.filter(pc.is_in(storms["group"], value_set=in_panel))
        panel.bars(zip(rows(mine).tolist(), _epoch_seconds(mine["start"]), _epoch_seconds(mine["end"]), strict=True),
                   0.9, "#f4c542", extra=' fill-opacity="0.35"')
    mine = timeline.filter(pc.is_in(timeline["group"], value_set=in_panel))
    for outcome, fill, extra in (("stable", "#2f6fde", ""), ("empty", "#9aa5b1", ""),
                                 ("open", "url(#never-completed)", ' stroke="#1d2733" stroke-width="0.3"')):
        part = mine.filter(pc.equal(mine["outcome"], outcome))
        if not part.num_rows:
            continue
        ends = part["end"]
        if "drawn_until" in part.column_names:
            ends = pc.coalesce(ends, part["drawn_until"])
        ends = pc.coalesce(ends, pa.scalar(end_all, pa.int64()).cast(part.schema.field("start").type))
        elements += panel.bars(zip(rows(part).tolist(), _epoch_seconds(part["start"]), _epoch_seconds(ends), strict=True),
                               0.6, fill, min_width=2.0, extra=extra)
    if departures.num_rows:
        marked = departures.filter(pc.is_in(departures["group"], value_set=in_panel))
        for kinds, offset, shape, colour in ((["failed", "fenced"], 0.38, "x", "#d62728"),
                                             (["left", "poll_timeout"], 0.38, "|", "#ff7f0e"),
                                             (["joined"], -0.42, "+", "#2ca02c")):
            chosen = marked.filter(pc.is_in(marked["kind"], value_set=pa.array(kinds)))
            elements += panel.marks(zip((rows(chosen) + offset).tolist(), _epoch_seconds(chosen["time"]), strict=True),
                                    shape, colour)
    return elements


def duration_figure(quantiles: Columns, groups: list[str]) -> Figure:
    caption = ("How long each group's rebalances took (box: quartiles, whiskers: 5th-95th percentile, dot: the "
               "longest). Long rebalances mean members slow to rejoin, up to the rebalance timeout "
               "(max.poll.interval.ms).")
    if not len(quantiles):
        return Figure("rebalance_durations", "Rebalance durations", caption,
                      svg.empty("no completed rebalances"), quantiles)
    by_group: dict[str, dict[str, Any]] = {}
    for row in quantiles.rows():
        by_group.setdefault(row[0], dict(zip(quantiles.names, row, strict=True)))
    order = [g for g in groups if g in by_group][::-1]
    columns = ["rebalances", "p5", "p25", "p50", "p75", "p95", "max"]
    rows = [{q: float(by_group[group][q]) for q in columns} for group in order]
    labels = [f"{group} ({int(row['rebalances'])})" for group, row in zip(order, rows, strict=True)]
    top = float(max(quantiles.column("max")))
    lowest = float(min(quantiles.column("min")))
    median = min(quantiles.column("p50"))
    log = bool(top and median > 0 and top / max(median, 1) > 100)
    low = max(lowest, 1.0) / 1.5 if log else 0.0
    axis = svg.Axis(low, top * (1.5 if log else 1.05) if top > 0 else 1.0, svg.label_width(labels), svg.WIDTH - svg.RIGHT_MARGIN,
                    log=log)
    panel = svg.Panel(labels, axis, 6.0)
    positions = [(float(y), row) for y, row in enumerate(rows)]
    panel.lines([(y, r["p5"], y, r["p25"]) for y, r in positions] + [(y, r["p75"], y, r["p95"]) for y, r in positions]
                + [(y + d, r[q], y - d, r[q]) for y, r in positions for q in ("p5", "p95") for d in (0.15,)],
                "#1d2733")
    panel.bars([(y, r["p25"], r["p75"]) for y, r in positions], 0.5, "#cfe0fb",
               extra=' stroke="#2f6fde" stroke-width="1"')
    panel.lines([(y + 0.25, r["p50"], y - 0.25, r["p50"]) for y, r in positions], "#1d2733", 1.5)
    panel.marks([(y, r["max"]) for y, r in positions], "o", "#d62728", 3.0)
    shown = [by_group[group] for group in order[::-1]]
    data = Columns(quantiles.names, tuple([row[name] for row in shown] for name in quantiles.names))
    return Figure("rebalance_durations", "Rebalance durations", caption,
                  svg.figure([panel], "rebalance duration (ms)" + (", log scale" if log else "")), data)


def storms_figure(groups: Columns, storms: pa.Table) -> Figure:
    """``groups``: ``findings_columns``; ``storms``: the storms table's rows of the top groups."""
    caption = ("Per group: rebalances, member failures, and rebalances that were part of a storm (many rebalances "
               "close together, or one client failing and rejoining in a loop).")
    if not len(groups):
        return Figure("storms", "Rebalances, failures and storms per group", caption,
                      svg.empty("no groups"), groups)
    top = _top_groups(groups)
    in_storms: dict[str, float] = {}
    if storms.num_rows:
        names, codes = _group_codes(storms["group"])
        sums = np.zeros(len(names), np.int64)
        np.add.at(sums, codes, pc.fill_null(storms["rebalances"], 0).to_numpy())
        in_storms = dict(zip(names, sums.tolist(), strict=True))
    first: dict[str, dict[str, Any]] = {}
    for row in groups.rows():
        first.setdefault(row[groups.names.index("group")], dict(zip(groups.names, row, strict=True)))
    shown = [first[group] for group in top]
    data = Columns(("group", "rebalances", "member_failures", "rebalances_in_storms", "storms"), (
        top, [int(g["rebalances"]) for g in shown], [_count(g["failures"]) for g in shown],
        [int(in_storms.get(g) or 0) for g in top], [_count(g["storms"]) for g in shown]))
    labels = top[::-1]  # the group with the most rebalances on the top row
    highest = max(max(max(data.values[column]) for column in (1, 2, 3)), 1)
    panel = svg.Panel(labels, svg.Axis(0, highest * 1.05, svg.label_width(labels), svg.WIDTH - svg.RIGHT_MARGIN,
                                          counts=True), 6.0)
    row_of = {group: y for y, group in enumerate(labels)}
    legend = []
    for column, offset, colour, words in (("rebalances", 0.28, "#2f6fde", "rebalances"),
                                          ("rebalances_in_storms", 0.0, "#f4c542", "rebalances in storms"),
                                          ("member_failures", -0.28, "#d62728", "member failures")):
        panel.bars([(row_of[g] + offset, 0, v) for g, v in zip(data.column("group"), data.column(column), strict=True) if v],
                   0.26, colour)
        legend.append((colour, words))
    return Figure("storms", "Rebalances, failures and storms per group", caption,
                  svg.figure([panel], "count", legend), data)


def _count(value: Any) -> int:
    """A count of the findings, none where missing."""
    return 0 if missing(value) else int(value)


def advice_html(advice_items: Sequence[Any], groups_shown: int = 8) -> str:
    """One entry per finding, with the advice once and the groups it applies to (the details of
    each group folded away)."""
    from kafka_rebalance.pipeline.advice import by_rule

    ordered = by_rule(list(advice_items))
    entries = []
    for title, items in ordered:
        groups = [i.group for i in items]
        named = ", ".join(html.escape(g) for g in groups[:groups_shown])
        more = f" and {len(groups) - groups_shown} more" if len(groups) > groups_shown else ""
        details = "".join(f"<li>{html.escape(i.group)}: {html.escape(i.finding)}</li>" for i in items[:200])
        entries.append(
            f'<li><span class="{items[0].severity}">{html.escape(title)}</span> '
            f"({len(groups)} group{'s' if len(groups) != 1 else ''}: {named}{more}). "
            f"{html.escape(items[0].advice)}"
            f"<details><summary>details</summary><ul>{details}</ul></details></li>")
    return f'<ul class="advice">{"".join(entries)}</ul>'


def coverage_html(summary: dict[str, Any]) -> str:
    rows = []
    for item in summary.get("coverage", []):
        first, last = item.get("first_ms"), item.get("last_ms")
        span = ""
        if first is not None and last is not None:
            span = (f"{datetime.fromtimestamp(first / 1000, UTC):%Y-%m-%d %H:%M:%S} to "
                    f"{datetime.fromtimestamp(last / 1000, UTC):%Y-%m-%d %H:%M:%S}")
        rows.append({"input": item["source"], "cluster": item.get("cluster"), "lines": item.get("lines"),
                     "broker lines read": item.get("broker_lines"), "client lines read": item.get("client_lines"),
                     "group-related lines not understood": item.get("unrecognised_lines"), "time span": span})
    for item in summary.get("skipped_inputs", []):
        rows.append({"input": item["path"], "cluster": "", "lines": None, "broker lines read": None,
                     "client lines read": None, "group-related lines not understood": None,
                     "time span": f"skipped: {item['why']}"})
    if not rows:
        return ""
    names = tuple(rows[0])
    return Columns(names, tuple(_as_a_column([row[name] for row in rows]) for name in names)).html(limit=200)


def _ms_text(value: Any) -> str:
    if missing(value):
        return ""
    seconds = float(value) / 1000
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _optional_int(value: Any) -> int | None:
    return None if missing(value) else int(value)


# --------------------------------------------------------------------------- the answer

@dataclass(frozen=True)
class Evidence:
    """One cause the story found for a rebalance, with the log lines that show it."""

    cause: str
    detail: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class RebalanceLine:
    """One rebalance of a group as told: times as text (UTC), the cause in words."""

    start: str
    old_generation: int | None
    generation: int | None
    duration_ms: int | None
    length: str
    outcome: str
    members: int | None
    cause: str
    cause_title: str
    cause_member: str
    evidence: tuple[Evidence, ...]
    start_known: bool = True
    protocol: str = "classic"
    # the members that failed, left or joined with it (at its start or while it was open)
    failed: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    joined: tuple[str, ...] = ()
    during: tuple[str, ...] = ()  # what happened while it was open (never its cause)
    cause_basis: str = ""  # why this cause was chosen, in words

    def generations(self) -> str:
        """``old -> new`` (or what of it the log gave)."""
        old, new = self.old_generation, self.generation
        if old is None and new is None:
            return "-"
        return f"{'?' if old is None else old} -> {'?' if new is None else new}"

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start, "start_known": self.start_known, "old_generation": self.old_generation,
                "generation": self.generation, "protocol": self.protocol,
                "duration_ms": self.duration_ms, "length": self.length, "outcome": self.outcome,
                "members": self.members, "failed": list(self.failed), "left": list(self.left),
                "joined": list(self.joined), "during": list(self.during), "cause": self.cause,
                "cause_title": self.cause_title, "cause_member": self.cause_member or None,
                "cause_basis": self.cause_basis,
                "evidence": [{"cause": e.cause, "detail": e.detail or None, "lines": list(e.lines)}
                             for e in self.evidence]}


@dataclass(frozen=True)
class Finding:
    """One finding about a group: what the logs show (with its numbers) and what to do."""

    severity: str
    finding: str
    advice: str
    rule: str

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "finding": self.finding, "advice": self.advice, "rule": self.rule}


# (findings field, words, how to show it) for the numbers told with each group.
_GROUP_NUMBERS: tuple[tuple[str, str, str], ...] = (
    ("rebalances", "rebalances", "count"),
    ("open_rebalances", "never completed", "count"),
    ("median_duration_ms", "median length", "ms"),
    ("max_duration_ms", "longest", "ms"),
    ("max_generation", "highest generation", "count"),
    ("failures", "member failures", "count"),
    ("leaves", "members left", "count"),
    ("poll_timeout_leaves", "poll-timeout leaves", "count"),
    ("storms", "storms", "count"),
    ("empty_periods", "times empty", "count"),
)


@dataclass(frozen=True)
class GroupAnswer:
    """One group: its latest rebalances (oldest of them first), its numbers and findings."""

    group: str  # as shown: cluster/group when the inputs span several clusters
    cluster: str
    rebalance_count: int
    rebalances: tuple[RebalanceLine, ...]
    numbers: dict[str, int]
    findings: tuple[Finding, ...]

    def number_text(self) -> str:
        """The group's numbers in words (but the count of rebalances, told with the group's
        name), those that are not zero."""
        parts = []
        for key, words, kind in _GROUP_NUMBERS:
            value = self.numbers.get(key)
            if not value or key == "rebalances":
                continue
            parts.append(f"{words} {_ms_text(value) if kind == 'ms' else f'{value:,}'}")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "cluster": self.cluster, "rebalance_count": self.rebalance_count,
                "rebalances": [r.as_dict() for r in self.rebalances], "numbers": dict(self.numbers),
                "findings": [f.as_dict() for f in self.findings]}


# The run's counts as told (report cards, the terminal's first lines): (summary field, words).
TOTALS = (("lines_read", "lines read"), ("lines_matched", "lines understood"),
          ("lines_unrecognised", "group lines not understood"), ("groups", "groups"), ("rebalances", "rebalances"),
          ("open_rebalances", "never completed"), ("client_rebalances", "client-side rebalances"),
          ("member_failures", "member failures"), ("storms", "storms"))
NOTHING_RECOGNISED = ("No line of the input is a Kafka group-membership message this tool knows (broker "
                      "GroupCoordinator, Java consumer, Spring Kafka, kafka-python, librdkafka debug, Kafka Streams).")


@dataclass(frozen=True)
class LogsAnswer:
    """What ``kafka-rebalance logs`` answers, the same in the terminal, in JSON and in the report."""

    summary: dict[str, Any]
    groups: tuple[GroupAnswer, ...]
    more_groups: int
    tables: str
    report: str

    def totals(self) -> list[tuple[str, int]]:
        return [(words, int(self.summary.get(key) or 0)) for key, words in TOTALS]

    def as_dict(self) -> dict[str, Any]:
        """One JSON document: summary.json's fields, then the groups told, then where the rest is."""
        return {**self.summary, "top_groups": [g.as_dict() for g in self.groups], "more_groups": self.more_groups,
                "tables": self.tables, "report": self.report}


def logs_answer(summary: dict[str, Any], tables: Mapping[str, pa.Table], findings: Sequence[GroupFindings],
                advice_items: Sequence[Any], tables_dir: str = "", report: str = "") -> LogsAnswer:
    """The answer from the tables (``report_tables``) and each group's findings and advice: the
    ``GROUP_SECTIONS`` groups with the most rebalances (then failures, then name), each with its
    latest ``GROUP_SECTION_ROWS`` rebalances. ``tables_dir`` and ``report``: where they are."""
    several = _cluster_names(findings)
    groups = findings_columns(findings, several)
    shown = _ranked_groups(groups, GROUP_SECTIONS)
    rebalances_of = _rows_by_group(_labelled(tables["rebalances"], several), shown)
    causes_of = _rows_by_group(_labelled(tables["causes"], several), shown)
    by_label = {_label(str(f["cluster"]), str(f["group"]), several): f for f in findings}
    told = []
    for label in shown:
        mine = [a for a in advice_items if _label(a.cluster, a.group, several) == label]
        told.append(group_answer(label, rebalances_of[label], causes_of[label], mine, by_label.get(label)))
    return LogsAnswer(summary=summary, groups=tuple(told), more_groups=max(len(groups) - len(shown), 0),
                      tables=tables_dir, report=report)


# The rebalances table's fields a rebalance is told with.
_REBALANCE_FIELDS = ("start", "old_generation", "generation", "duration_ms", "outcome", "members", "cause",
                     "cause_member", "start_known", "protocol", "failed_members", "left_members", "joined_members",
                     "during")
# The length of a rebalance whose opening line is not in the input.
STARTED_BEFORE_THE_LOG = "started before the log"
# The length of a rebalance a later generation proved complete, whose closing line is missing.
END_NOT_IN_THE_LOG = "completed (end not in the log)"


def group_answer(group: str, rebalances: pa.Table, causes: pa.Table, advice_items: Sequence[Any],
                 finding: GroupFindings | None = None) -> GroupAnswer:
    """One group's part of the answer from its rows of the rebalances and causes tables
    (``report_tables``' columns, or some of them)."""
    from kafka_rebalance.pipeline.logparse.causes import cause_title

    columns = [c for c in _REBALANCE_FIELDS if c in rebalances.column_names]
    # the latest, oldest of them first (a stable sort: rows of one time in table order)
    latest = _time_order(rebalances["start"], ascending=False, kind="stable")[:GROUP_SECTION_ROWS][::-1]
    rows = rebalances.select(columns).take(latest).to_pylist()
    evidence = _CauseEvidence(causes, rows, cause_title)
    lines = []
    for r in rows:
        start = r.get("start")
        generation = _optional_int(r.get("generation"))
        outcome = str(r.get("outcome") or "")
        told = r.get("cause")
        cause = told if isinstance(told, str) else ""
        member = r.get("cause_member")
        start_known = r.get("start_known")
        opened_in_log = not isinstance(start_known, bool) or start_known
        duration = _optional_int(r.get("duration_ms"))
        told_evidence = evidence.of(float(generation) if generation is not None else -1.0, start)
        lines.append(RebalanceLine(
            start="" if start is None else f"{start:%Y-%m-%d %H:%M:%S.%f}"[:-3],
            old_generation=_optional_int(r.get("old_generation")), generation=generation,
            duration_ms=duration if opened_in_log else None, length=_length(opened_in_log, outcome, duration),
            outcome=outcome, members=_optional_int(r.get("members")), cause=cause,
            cause_title=cause_title(cause) if cause else "", cause_member=member if isinstance(member, str) else "",
            evidence=told_evidence, start_known=opened_in_log, protocol=str(r.get("protocol") or "classic"),
            failed=_texts(r.get("failed_members")), left=_texts(r.get("left_members")),
            joined=_texts(r.get("joined_members")), during=_texts(r.get("during")),
            cause_basis=cause_basis(cause, told_evidence[0] if told_evidence else None)))
    known: Mapping[str, object] = finding or {}
    numbers = {key: int(value) for key, _, _ in _GROUP_NUMBERS
               if isinstance(value := known.get(key), int | float) and not missing(value)}
    cluster = str(known.get("cluster") or (advice_items[0].cluster if advice_items else "default"))
    return GroupAnswer(group=group, cluster=cluster, rebalance_count=rebalances.num_rows, rebalances=tuple(lines),
                       numbers=numbers,
                       findings=tuple(Finding(a.severity, a.finding, a.advice, a.rule) for a in advice_items))


def _length(start_known: bool, outcome: str, duration_ms: int | None) -> str:
    """A rebalance's length in words: none without its start, none without its end."""
    if not start_known:
        return STARTED_BEFORE_THE_LOG
    if outcome == "open":
        return "never completed"
    if duration_ms is None:
        return END_NOT_IN_THE_LOG
    return _ms_text(duration_ms)


def _texts(values: Any) -> tuple[str, ...]:
    """A list column's strings (a list; None: a member the line did not name)."""
    if missing(values):
        return ()
    return tuple(str(v) if v is not None else "(unnamed)" for v in list(values))


def cause_basis(cause: str, first: Evidence | None) -> str:
    """Why the story chose a rebalance's cause (its first; ``group_story``'s rules), in words."""
    from kafka_rebalance.pipeline.logparse.causes import EVIDENCE_WINDOW_MS, REASONS_FROM_VERSION

    lines = first.lines if first is not None else ()
    detail = first.detail if first is not None else ""
    if cause == "unknown":
        return "no line at or before its start explains it"
    if cause == "not_logged":
        return f"the broker gives no reason (before Kafka {REASONS_FROM_VERSION}) and no line before it explains it"
    if detail.endswith("(inferred)"):
        return f"inferred from the group's member count ({detail.removesuffix(' (inferred)')})"
    opening = [line for line in lines if "Preparing to rebalance group" in line or "Preparing to restabilize" in line]
    if opening:
        also = ", and a line before it shows it" if len(lines) > len(opening) else ""
        return "the coordinator's reason for the rebalance names it" + also
    window = EVIDENCE_WINDOW_MS // 1000
    if lines:
        return f"the first line at or before its start (within {window} s) that explains it"
    return f"a line at or before its start (within {window} s) explains it"


class _CauseEvidence:
    """A group's causes, looked up per rebalance told: the causes of its generation, and those
    that know no generation but started when it did (in table order). Only the causes of the
    rebalances told (``rows``) are read, and indexed once, not filtered per rebalance."""

    def __init__(self, causes: pa.Table, rows: Sequence[Mapping[str, Any]], title: Callable[[str], str]):
        self._title = title
        self._by_generation: dict[float, list[int]] = {}
        self._by_start: dict[Any, list[int]] = {}
        self._rows: list[Evidence] = []
        if not causes.num_rows:
            return
        # (a rebalance without a generation is looked up as generation -1)
        generations = pa.array([-1.0 if missing(r.get("generation")) else float(r["generation"]) for r in rows],
                               pa.float64())
        starts = pa.array([r["start"] for r in rows if r.get("start") is not None], causes.schema.field("start").type)
        generation = pc.cast(causes["generation"], pa.float64())
        told = pc.or_(pc.is_in(generation, value_set=generations),
                      pc.and_(pc.invert(pc.is_valid(generation)), pc.is_in(causes["start"], value_set=starts)))
        chosen = causes.filter(pc.fill_null(told, False))
        for position, (generation_told, start, cause, detail, lines) in enumerate(zip(
                *(_python_values(chosen[name]) for name in ("generation", "start", "cause", "detail", "evidence")),
                strict=True)):
            self._rows.append(Evidence(self._title(cause) if isinstance(cause, str) else "",
                                       detail if isinstance(detail, str) else "",
                                       tuple(str(line) for line in list(lines)[:EVIDENCE_LINES])))
            if not missing(generation_told):
                self._by_generation.setdefault(float(generation_told), []).append(position)
            elif start is not None:
                self._by_start.setdefault(start, []).append(position)

    def of(self, generation: float, start: Any) -> tuple[Evidence, ...]:
        positions = self._by_generation.get(generation, [])
        if start is not None:
            positions = sorted(positions + self._by_start.get(start, []))
        return tuple(self._rows[p] for p in positions)


def _rows_by_group(table: pa.Table, groups: list[str]) -> dict[str, pa.Table]:
    """Each of ``groups``' rows of ``table`` (in table order), the table filtered once for all."""
    chosen = _of_groups(table, groups)
    return {group: chosen.filter(pc.equal(chosen["group"], group)) for group in groups}


# --------------------------------------------------------------------------- the answer as HTML

def group_section(group: GroupAnswer) -> str:
    """One group: its findings with their advice, its numbers, then its rebalances with cause and evidence."""
    parts = []
    if group.findings:
        parts.append("<ul class=\"advice\">" + "".join(
            f'<li><span class="{f.severity}">{html.escape(f.finding)}</span>. {html.escape(f.advice)}</li>'
            for f in group.findings) + "</ul>")
    numbers = f"{group.rebalance_count:,} rebalance{'s' if group.rebalance_count != 1 else ''}"
    if group.number_text():
        numbers += f"; {group.number_text()}"
    parts.append(f'<p class="caption">{html.escape(numbers)}</p>')
    lines = []
    for r in group.rebalances:
        member = f" ({html.escape(r.cause_member)})" if r.cause_member else ""
        details = "".join(
            f"<li>{html.escape(e.cause)}{': ' + html.escape(e.detail) if e.detail else ''}"
            f"<pre>{html.escape(chr(10).join(e.lines))}</pre></li>" for e in r.evidence)
        lines.append(
            f"<tr><td>{html.escape(r.start)}</td><td>{html.escape(r.generations())}</td>"
            f"<td>{html.escape(r.outcome)}</td><td>{html.escape(r.length)}</td>"
            f"<td>{'' if r.members is None else r.members}</td><td>{html.escape(r.cause_title)}{member}"
            + (f"<br><small>while open: {html.escape('; '.join(r.during))}</small>" if r.during else "")
            + (f"<details><summary>evidence</summary><ul>{details}</ul></details>" if details else "")
            + "</td></tr>")
    note = (f'<p class="caption">the latest {len(group.rebalances)} of {group.rebalance_count} rebalances</p>'
            if group.rebalance_count > len(group.rebalances) else "")
    parts.append("<table><thead><tr><th>start</th><th>generation</th><th>outcome</th><th>length</th><th>members</th>"
                 f"<th>cause</th></tr></thead><tbody>{''.join(lines)}</tbody></table>{note}")
    return "".join(parts)


def render_logs_report(answer: LogsAnswer, figures: list[Figure], advice_items: list[Any],
                       tables: Mapping[str, pa.Table], findings: Sequence[GroupFindings]) -> str:
    summary = answer.summary
    several = _cluster_names(findings)
    sections = [cards(answer.totals())]
    if summary["lines_matched"] == 0:
        samples = "".join(f"<li><code>{html.escape(s[:200])}</code></li>" for s in summary.get("sample_lines", []))
        sections.append(section("Nothing recognised", f"<p>{html.escape(NOTHING_RECOGNISED)} The input starts "
                                f"with:</p><ul>{samples}</ul>"))
    if advice_items:
        sections.append(section("What the logs show, and what to do", advice_html(advice_items)))
    elif summary["lines_matched"]:
        sections.append(section("What the logs show, and what to do",
                                '<p class="caption">No failures, storms or slow rebalances found.</p>'))
    sections.append(section("Inputs", coverage_html(summary),
                            "What was read from each input. Lines about groups that match no known message are "
                            "listed under \"Not understood\"."))
    sections.extend(figure_section(f) for f in figures)
    for group in answer.groups:
        sections.append(section(f"Group {group.group}", group_section(group)))
    storms = tables["storms"]
    if storms.num_rows:
        sections.append(section("Storms", _columns(_labelled(storms.slice(0, 40), several)).html(count=storms.num_rows)))
    groups = findings_columns(findings, several)
    if len(groups):
        ranked = sorted(groups.rows(), key=lambda g: (-g[FINDINGS_COLUMNS.index("rebalances")],
                                                      g[FINDINGS_COLUMNS.index("group")]))
        sections.append(section("Groups", rows_table(groups.names, ranked, len(ranked), limit=200)))
    client = tables["client_rebalances"]
    if client.num_rows:
        latest = client.take(_time_order(client["start"], ascending=False)[:200])
        shown = _columns(_labelled(latest, several), ["start", "group", "client", "client_library", "generation",
                                                      "protocol", "assigned", "revoked", "lost", "outcome"])
        # each list of partitions as its first six
        shown = Columns(shown.names, tuple(
            [", ".join(v[:6]) + (" ..." if len(v) > 6 else "") for v in values] if name in ("assigned", "revoked", "lost")
            else values for name, values in zip(shown.names, shown.values, strict=True)))
        sections.append(section("Client-side rebalances", shown.html(limit=200)))
    unrecognised = tables["unrecognised"]
    if unrecognised.num_rows:
        sections.append(section("Not understood", _columns(unrecognised.slice(0, 30)).html(limit=30),
                                "Lines that mention groups, members, generations or rebalances but match no known "
                                "message, counted by wording."))
    subtitle = f"{summary.get('files', 0)} input(s), {summary.get('engine', 'spark')} engine; {generated_note()}"
    return page("Kafka rebalances in logs", subtitle, sections)

