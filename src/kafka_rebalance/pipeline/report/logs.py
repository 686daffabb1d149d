"""The logs report: the answer of ``kafka-rebalance logs`` (per group, most rebalances first: its
rebalances with their causes, then its findings with their advice and numbers), built once from
the tables and findings (``logs_answer``) and rendered twice: as HTML here, for the terminal and
as JSON in ``report.terminal``; plus the figures and the report's other sections."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kafka_rebalance.pipeline.report import svg
from kafka_rebalance.pipeline.report.page import (
    Figure,
    cards,
    figure_section,
    generated_note,
    page,
    section,
    table,
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


# The columns the report and its summary use, where a table has more (all columns otherwise):
# the rest (list columns above all) cost more to convert to pandas than anything else here.
REPORT_COLUMNS = {
    "rebalances": ("group", "cluster", "old_generation", "generation", "start", "end", "duration_ms", "members", "outcome", "reason",
                   "cause", "cause_member", "failed_members", "left_members", "drawn_until", "start_known",
                   "joined_members", "during", "protocol"),
    "member_events": ("group", "cluster", "member", "time", "kind", "client"),
    "causes": ("cluster", "group", "generation", "start", "cause", "detail", "evidence"),
    "client_rebalances": ("start", "group", "cluster", "client", "client_library", "generation", "protocol",
                          "assigned", "revoked", "lost", "outcome"),
}


def read_tables(directory: Any) -> dict[str, pd.DataFrame]:
    """The logs tables written under ``directory`` (a path or URL; one Parquet directory each),
    as ``report_frames`` gives them (the Spark engine's; only the columns the report shows are
    read)."""
    import pyarrow.parquet as pq

    from kafka_rebalance.pipeline.io import join, resolve

    tables = {}
    for name in LOG_TABLES:
        columns = REPORT_COLUMNS.get(name)
        filesystem, path = resolve(join(str(directory), name))
        tables[name] = pq.read_table(path, columns=list(columns) if columns else None, filesystem=filesystem)
    return report_frames(tables)


def report_frames(tables: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """The tables the report reads (Arrow, either engine's) as pandas, with the columns it shows
    (``REPORT_COLUMNS``). List columns stay Arrow arrays (``pd.ArrowDtype``): the report reads
    them for a few groups' rows, and making a Python list of every row costs more than the rest
    of the table."""
    import pyarrow as pa

    def arrow_lists(kind: pa.DataType) -> Any:
        return pd.ArrowDtype(kind) if pa.types.is_list(kind) else None

    frames = {}
    for name in LOG_TABLES:
        columns = REPORT_COLUMNS.get(name)
        table = tables[name]
        frames[name] = (table.select(list(columns)) if columns else table).to_pandas(types_mapper=arrow_lists)
    return frames


def _naive(series: pd.Series) -> pd.Series:
    if not pd.api.types.is_datetime64_any_dtype(series):
        # (to_datetime samples a datetime column element by element before returning it as is)
        series = pd.to_datetime(series)
    return series.dt.tz_convert(None) if getattr(series.dt, "tz", None) is not None else series


def _labelled(frame: pd.DataFrame, cluster_names: dict[str, str] | None) -> pd.DataFrame:
    """``group`` as shown: ``cluster/group`` when the inputs span several clusters (see
    ``_cluster_names``)."""
    frame = frame.copy()
    if cluster_names and "cluster" in frame.columns and len(frame):
        shown = frame["cluster"].astype(str).map(lambda c: cluster_names.get(c, c))
        frame["group"] = shown + "/" + frame["group"].astype(str)
    for column in ("start", "end", "time", "drawn_until"):
        if column in frame.columns:
            frame[column] = _naive(frame[column])
    return frame


def findings_frame(findings: Sequence[GroupFindings]) -> pd.DataFrame:
    columns = ["cluster", "group", "rebalances", "open_rebalances", "median_duration_ms", "max_duration_ms",
               "max_generation", "failures", "poll_timeout_leaves", "leaves", "storms", "empty_periods"]
    frame = pd.DataFrame(findings, columns=columns) if findings else pd.DataFrame(columns=columns)
    return frame


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


def _ranked_groups(findings: pd.DataFrame, limit: int) -> list[str]:
    """The ``limit`` groups with the most rebalances, then failures, then by name."""
    if findings.empty:
        return []
    ranked = findings.sort_values(["rebalances", "failures", "group"], ascending=[False, False, True])
    return [str(g) for g in ranked["group"].head(limit)]


def _top_groups(findings: pd.DataFrame) -> list[str]:
    return _ranked_groups(findings, TOP_GROUPS)


def logs_figures(frames: dict[str, pd.DataFrame], findings: Sequence[GroupFindings]) -> list[Figure]:
    """The figures of the logs report, from the (already small) tables."""
    several = _cluster_names(findings)
    groups = _labelled(findings_frame(findings), several)
    top = _top_groups(groups)
    rebalances = _labelled(frames["rebalances"], several)
    timeline = rebalances[rebalances["group"].isin(top)].copy()
    timeline["failed"] = timeline["failed_members"].map(len)
    timeline["left"] = timeline["left_members"].map(len)
    timeline = timeline.sort_values("start").groupby("group").tail(3000)
    timeline = timeline[["group", "generation", "start", "end", "duration_ms", "members", "outcome", "reason", "cause",
                         "failed", "left", "drawn_until"]]
    events = _labelled(frames["member_events"], several)
    marks = events[events["group"].isin(top) & events["kind"].isin(["failed", "left", "joined", "fenced",
                                                                     "poll_timeout"])]
    marks = marks[["group", "member", "time", "kind", "client"]].head(20000)
    storms = _labelled(frames["storms"], several)
    storms = storms[storms["group"].isin(top)]
    durations = rebalances[rebalances["group"].isin(top) & rebalances["duration_ms"].notna()]
    quantiles = durations.groupby("group")["duration_ms"].agg(
        rebalances="count", p5=lambda s: s.quantile(0.05), p25=lambda s: s.quantile(0.25),
        p50=lambda s: s.quantile(0.5), p75=lambda s: s.quantile(0.75), p95=lambda s: s.quantile(0.95),
        max="max", min="min").reset_index() if len(durations) else pd.DataFrame()
    return [
        rebalance_timeline_figure(timeline, marks, storms, top),
        duration_figure(quantiles.astype({c: float for c in quantiles.columns if c != "group"}), top),
        storms_figure(groups.fillna({"failures": 0, "storms": 0}), storms),
    ]


def _epoch_seconds(times: pd.Series) -> np.ndarray:
    """Naive UTC times (no NaT) as epoch seconds."""
    return times.to_numpy(dtype="datetime64[ms]").astype("int64") / 1000.0


def rebalance_timeline_figure(timeline: pd.DataFrame, departures: pd.DataFrame, storms: pd.DataFrame,
                              groups: list[str]) -> Figure:
    caption = ("Each bar is one rebalance, from \"Preparing to rebalance\" until the group was stable again "
               "(grey: ended empty, hatched: never completed, drawn to the next rebalance or the end of the "
               "log; one whose start or end is not in the log is drawn from or to the first or last line that "
               "shows it, and has no length in the durations figure); red crosses are members removed by session timeout or fenced, orange ticks members that left "
               "(or whose poll timeout expired), green pluses members that joined; shaded spans are storms. "
               f"Top {TOP_GROUPS} groups by rebalances.")
    if timeline.empty:
        return Figure("rebalance_timeline", "Rebalances over time", caption, svg.empty("no rebalances found"),
                      timeline)
    # A line without a timestamp (a paste of bare messages) gives a rebalance with no place on a
    # time axis: it is in the tables, and the figure draws the others.
    untimed = int(timeline["start"].isna().sum())
    timeline = timeline[timeline["start"].notna()]
    departures = departures[departures["time"].notna()] if not departures.empty else departures
    if untimed:
        caption += f" {untimed} rebalance(s) whose lines carry no time are in the tables only."
    if timeline.empty:
        return Figure("rebalance_timeline", "Rebalances over time", caption,
                      svg.empty("the log lines carry no time: the rebalances are in the tables below"), timeline)
    order = [g for g in groups if g in set(timeline["group"])][::-1]
    start_all = min(timeline["start"].min(), departures["time"].min() if not departures.empty else timeline["start"].min())
    end_candidates = [timeline["start"].max(), timeline["end"].max()]
    if not departures.empty:
        end_candidates.append(departures["time"].max())
    end_all = max(t for t in end_candidates if pd.notna(t))
    spans = _group_spans(timeline, departures, end_all)
    widest = max(max((end - start).total_seconds() for start, end in spans.values()), 60.0)
    # Groups whose activity lies far apart (excerpts from different months, say) would shrink to
    # slivers on one shared axis: then each group gets its own row with its own time axis.
    separate = len(order) > 1 and (end_all - start_all).total_seconds() > 50 * widest
    left = svg.label_width(order)
    panels = []
    elements = 0
    top = 6.0
    for panel_groups in ([[group] for group in order[::-1]] if separate else [order]):
        if separate:
            low, high = spans[panel_groups[0]]
        else:
            low, high = start_all, end_all
        pad = max((high - low) * 0.03, pd.Timedelta(seconds=1))
        axis = svg.Axis(_epoch_seconds(pd.Series([low - pad]))[0], _epoch_seconds(pd.Series([high + pad]))[0],
                        left, svg.WIDTH - svg.RIGHT_MARGIN, time=True)
        panel = svg.Panel(panel_groups, axis, top)
        elements += _draw_panel(panel, timeline, departures, storms, end_all)
        panels.append(panel)
        top += panel.height + (svg.AXIS_HEIGHT if separate else 0)
    xlabel = "log time (UTC, as written by the broker)" + ("; each group on its own time axis" if separate else "")
    image = svg.figure(panels, xlabel, defs=svg.hatch_pattern("never-completed", "#2f6fde"))
    data = timeline.sort_values(["group", "start"])
    return Figure("rebalance_timeline", "Rebalances over time", caption, image, data)


def _group_spans(timeline: pd.DataFrame, departures: pd.DataFrame, end_all: pd.Timestamp
                 ) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """First and last moment each group shows in the log (rebalances and member events)."""
    ends = timeline["end"].fillna(end_all)
    frame = pd.concat([
        pd.DataFrame({"group": timeline["group"], "t": timeline["start"]}),
        pd.DataFrame({"group": timeline["group"], "t": ends}),
        pd.DataFrame({"group": departures["group"], "t": departures["time"]}) if not departures.empty else None,
    ])
    grouped = frame.groupby("group")["t"]
    return {group: (low, high) for group, low, high in zip(grouped.min().index, grouped.min(), grouped.max(), strict=True)}


def _draw_panel(panel: svg.Panel, timeline: pd.DataFrame, departures: pd.DataFrame, storms: pd.DataFrame,
                end_all: Any) -> int:
    """The groups of one panel, one row each: their storms, rebalances and departures, one path
    per kind of mark; returns the marks drawn. A short rebalance stays visible (2 pixels)."""
    row_of = {group: y for y, group in enumerate(panel.labels)}
    elements = 0
    if not storms.empty:
        in_panel = storms[storms["group"].isin(row_of)]
        panel.bars(zip(in_panel["group"].map(row_of), _epoch_seconds(in_panel["start"]), _epoch_seconds(in_panel["end"]),
                       strict=True), 0.9, "#f4c542", extra=' fill-opacity="0.35"')
    mine = timeline[timeline["group"].isin(row_of)]
    for outcome, fill, extra in (("stable", "#2f6fde", ""), ("empty", "#9aa5b1", ""),
                                 ("open", "url(#never-completed)", ' stroke="#1d2733" stroke-width="0.3"')):
        part = mine[mine["outcome"] == outcome]
        if part.empty:
            continue
        ends = part["end"].fillna(part.get("drawn_until", end_all)).fillna(end_all)
        elements += panel.bars(zip(part["group"].map(row_of), _epoch_seconds(part["start"]), _epoch_seconds(ends),
                                   strict=True), 0.6, fill, min_width=2.0, extra=extra)
    if not departures.empty:
        marked = departures[departures["group"].isin(row_of)]
        rows = marked["group"].map(row_of)
        for kinds, offset, shape, colour in ((["failed", "fenced"], 0.38, "x", "#d62728"),
                                             (["left", "poll_timeout"], 0.38, "|", "#ff7f0e"),
                                             (["joined"], -0.42, "+", "#2ca02c")):
            chosen = marked["kind"].isin(kinds)
            elements += panel.marks(zip(rows[chosen] + offset, _epoch_seconds(marked.loc[chosen, "time"]), strict=True),
                                    shape, colour)
    return elements


def duration_figure(quantiles: pd.DataFrame, groups: list[str]) -> Figure:
    caption = ("How long each group's rebalances took (box: quartiles, whiskers: 5th-95th percentile, dot: the "
               "longest). Long rebalances mean members slow to rejoin, up to the rebalance timeout "
               "(max.poll.interval.ms).")
    if quantiles.empty:
        return Figure("rebalance_durations", "Rebalance durations", caption,
                      svg.empty("no completed rebalances"), quantiles)
    order = [g for g in groups if g in set(quantiles["group"])][::-1]
    columns = ["rebalances", "p5", "p25", "p50", "p75", "p95", "max"]
    by_group = quantiles.drop_duplicates("group").set_index("group")[columns].to_dict("index")
    rows = [{q: float(by_group[group][q]) for q in columns} for group in order]
    labels = [f"{group} ({int(row['rebalances'])})" for group, row in zip(order, rows, strict=True)]
    top = float(quantiles["max"].max())
    lowest = float(quantiles["min"].min())
    log = bool(top and quantiles["p50"].min() > 0 and top / max(quantiles["p50"].min(), 1) > 100)
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
    data = quantiles.set_index("group").loc[order[::-1]].reset_index()
    return Figure("rebalance_durations", "Rebalance durations", caption,
                  svg.figure([panel], "rebalance duration (ms)" + (", log scale" if log else "")), data)


def storms_figure(findings: pd.DataFrame, storms: pd.DataFrame) -> Figure:
    caption = ("Per group: rebalances, member failures, and rebalances that were part of a storm (many rebalances "
               "close together, or one client failing and rejoining in a loop).")
    if findings.empty:
        return Figure("storms", "Rebalances, failures and storms per group", caption,
                      svg.empty("no groups"), findings)
    top = _top_groups(findings)
    in_storms = storms.groupby("group")["rebalances"].sum() if not storms.empty else pd.Series(dtype="int64")
    shown = findings.drop_duplicates("group").set_index("group").loc[top]
    data = pd.DataFrame({
        "group": top,
        "rebalances": [int(v) for v in shown["rebalances"]],
        "member_failures": [int(v) for v in shown["failures"]],
        "rebalances_in_storms": [int(in_storms.get(g, 0)) for g in top],
        "storms": [int(v) for v in shown["storms"]],
    })
    labels = top[::-1]  # the group with the most rebalances on the top row
    highest = max(int(data[["rebalances", "member_failures", "rebalances_in_storms"]].to_numpy().max()), 1)
    panel = svg.Panel(labels, svg.Axis(0, highest * 1.05, svg.label_width(labels), svg.WIDTH - svg.RIGHT_MARGIN,
                                          counts=True), 6.0)
    row_of = {group: y for y, group in enumerate(labels)}
    legend = []
    for column, offset, colour, words in (("rebalances", 0.28, "#2f6fde", "rebalances"),
                                          ("rebalances_in_storms", 0.0, "#f4c542", "rebalances in storms"),
                                          ("member_failures", -0.28, "#d62728", "member failures")):
        panel.bars([(row_of[g] + offset, 0, v) for g, v in zip(data["group"], data[column], strict=True) if v], 0.26,
                   colour)
        legend.append((colour, words))
    return Figure("storms", "Rebalances, failures and storms per group", caption,
                  svg.figure([panel], "count", legend), data)


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
    return table(pd.DataFrame(rows), limit=200) if rows else ""




def _ms_text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value)):
        return ""
    seconds = float(value) / 1000
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _optional_int(value: Any) -> int | None:
    return None if value is None or value is pd.NA or pd.isna(value) else int(value)


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


def logs_answer(summary: dict[str, Any], frames: dict[str, pd.DataFrame], findings: Sequence[GroupFindings],
                advice_items: Sequence[Any], tables: str = "", report: str = "") -> LogsAnswer:
    """The answer from the tables and each group's findings and advice: the ``GROUP_SECTIONS``
    groups with the most rebalances (then failures, then name), each with its latest
    ``GROUP_SECTION_ROWS`` rebalances."""
    several = _cluster_names(findings)
    groups = _labelled(findings_frame(findings), several)
    shown = _ranked_groups(groups, GROUP_SECTIONS)
    rebalances = _labelled(frames["rebalances"], several)
    causes = _labelled(frames["causes"], several)
    rebalances_of, causes_of = _rows_by_group(rebalances, shown), _rows_by_group(causes, shown)
    by_label = {_label(str(f["cluster"]), str(f["group"]), several): f for f in findings}
    told = []
    for label in shown:
        mine = [a for a in advice_items if _label(a.cluster, a.group, several) == label]
        told.append(group_answer(label, rebalances_of[label], causes_of[label], mine, by_label.get(label)))
    return LogsAnswer(summary=summary, groups=tuple(told), more_groups=max(len(groups) - len(shown), 0),
                      tables=tables, report=report)


# The rebalances table's fields a rebalance is told with.
_REBALANCE_FIELDS = ("start", "old_generation", "generation", "duration_ms", "outcome", "members", "cause",
                     "cause_member", "start_known", "protocol", "failed_members", "left_members", "joined_members",
                     "during")
# The length of a rebalance whose opening line is not in the input.
STARTED_BEFORE_THE_LOG = "started before the log"
# The length of a rebalance a later generation proved complete, whose closing line is missing.
END_NOT_IN_THE_LOG = "completed (end not in the log)"


def group_answer(group: str, rebalances: pd.DataFrame, causes: pd.DataFrame, advice_items: Sequence[Any],
                 finding: GroupFindings | None = None) -> GroupAnswer:
    """One group's part of the answer from its rows of the rebalances and causes tables."""
    from kafka_rebalance.pipeline.logparse.causes import cause_title

    columns = [c for c in _REBALANCE_FIELDS if c in rebalances.columns]
    rows = rebalances[columns].sort_values("start", ascending=False, kind="stable").head(GROUP_SECTION_ROWS)
    evidence = _CauseEvidence(causes, cause_title)
    lines = []
    for r in rows.iloc[::-1].to_dict("records"):
        start = r.get("start")
        generation = _optional_int(r.get("generation"))
        outcome = str(r.get("outcome") or "")
        told = r.get("cause")
        cause = told if isinstance(told, str) else ""
        member = r.get("cause_member")
        start_known = r.get("start_known")
        opened_in_log = not isinstance(start_known, bool | np.bool_) or bool(start_known)
        duration = _optional_int(r.get("duration_ms"))
        told_evidence = evidence.of(float(generation) if generation is not None else -1.0, start)
        lines.append(RebalanceLine(
            start="" if start is None or pd.isna(start) else f"{start:%Y-%m-%d %H:%M:%S.%f}"[:-3],
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
               if isinstance(value := known.get(key), int | float) and not pd.isna(value)}
    cluster = str(known.get("cluster") or (advice_items[0].cluster if advice_items else "default"))
    return GroupAnswer(group=group, cluster=cluster, rebalance_count=len(rebalances), rebalances=tuple(lines),
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
    """A list column's strings (an Arrow list, a numpy array or a list; None: a member the line
    did not name)."""
    if values is None or (isinstance(values, float) and pd.isna(values)):
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
    """A group's causes, looked up per rebalance: the causes of its generation, and those that
    know no generation but started when it did (in table order). Indexed once per group, not
    filtered per rebalance."""

    def __init__(self, causes: pd.DataFrame, title: Callable[[str], str]):
        self._title = title
        self._by_generation: dict[float, list[int]] = {}
        self._by_start: dict[Any, list[int]] = {}
        self._rows: list[Evidence] = []
        if not len(causes):
            return
        # Missing generations as None: pandas takes na_value=None, pandas-stubs' overloads do not list it.
        generations = causes["generation"].astype("Float64").to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
        for position, (generation, start, cause, detail, lines) in enumerate(zip(
                generations, causes["start"], causes["cause"], causes["detail"], causes["evidence"], strict=True)):
            self._rows.append(Evidence(self._title(cause) if isinstance(cause, str) else "", detail if isinstance(detail, str) else "",
                                       tuple(str(line) for line in list(lines)[:EVIDENCE_LINES])))
            if generation is not None:
                self._by_generation.setdefault(float(generation), []).append(position)
            elif not pd.isna(start):
                self._by_start.setdefault(start, []).append(position)

    def of(self, generation: float, start: Any) -> tuple[Evidence, ...]:
        positions = self._by_generation.get(generation, [])
        if start is not None and not pd.isna(start):
            positions = sorted(positions + self._by_start.get(start, []))
        return tuple(self._rows[p] for p in positions)


def _rows_by_group(frame: pd.DataFrame, groups: list[str]) -> dict[str, pd.DataFrame]:
    """Each of ``groups``' rows of ``frame`` (in table order), from one pass over the table."""
    chosen = frame[frame["group"].isin(groups)]
    parts = dict(tuple(chosen.groupby("group", sort=False))) if len(chosen) else {}
    return {group: parts.get(group, frame.iloc[0:0]) for group in groups}


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
                       frames: dict[str, pd.DataFrame], findings: Sequence[GroupFindings]) -> str:
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
    groups = _labelled(findings_frame(findings), several)
    storms = frames["storms"]
    if len(storms):
        sections.append(section("Storms", table(_labelled(storms, several))))
    if len(groups):
        ranked = groups.sort_values(["rebalances", "group"], ascending=[False, True])
        sections.append(section("Groups", table(ranked, limit=200)))
    client = frames["client_rebalances"]
    if len(client):
        latest = _labelled(client, several).sort_values("start", ascending=False).head(200).copy()
        for column in ("assigned", "revoked", "lost"):
            latest[column] = latest[column].map(lambda v: ", ".join(list(v)[:6]) + (" ..." if len(v) > 6 else ""))
        sections.append(section("Client-side rebalances",
                                table(latest[["start", "group", "client", "client_library", "generation", "protocol",
                                             "assigned", "revoked", "lost", "outcome"]], limit=200)))
    unrecognised = frames["unrecognised"]
    if len(unrecognised):
        sections.append(section("Not understood", table(unrecognised.head(30), limit=30),
                                "Lines that mention groups, members, generations or rebalances but match no known "
                                "message, counted by wording."))
    subtitle = f"{summary.get('files', 0)} input(s), {summary.get('engine', 'spark')} engine; {generated_note()}"
    return page("Kafka rebalances in logs", subtitle, sections)
