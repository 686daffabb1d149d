"""The report: one self-contained HTML file (figures inlined as SVG or PNG, no script, no
network), with the data of every figure written beside it as ``figures/NAME.csv``.

Figures are drawn by matplotlib from small pandas frames; anything large is aggregated on Spark
before it gets here.
"""

from __future__ import annotations

import base64
import html
import io
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.patches  # noqa: E402,F401
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402

from kafka_rebalance.pipeline.logparse.rows import Row  # noqa: E402

if TYPE_CHECKING:
    from kafka_rebalance.pipeline.advice import Advice

# Above this many drawn elements a vector figure gets heavy for a browser: use PNG.
SVG_ELEMENT_LIMIT = 4000
STRATEGY_COLOURS = {
    "range": "#d1495b",
    "roundrobin": "#edae49",
    "sticky": "#00798c",
    "cooperative-sticky": "#30a14e",
}
FALLBACK_COLOURS = ["#66a182", "#8d96a3", "#2e4057", "#b8336a", "#726da8", "#7d938a"]
TOP_GROUPS = 12

plt.rcParams.update({
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "svg.fonttype": "none",
})


@dataclass
class Figure:
    name: str
    title: str
    caption: str
    image: str  # an <svg> element or an <img> with a data: URI
    data: pd.DataFrame = field(repr=False)


def strategy_colour(strategy: str, index: int = 0) -> str:
    return STRATEGY_COLOURS.get(strategy, FALLBACK_COLOURS[index % len(FALLBACK_COLOURS)])


def render(fig: MplFigure, elements: int = 0) -> str:
    """Inline a matplotlib figure: SVG when light enough, else a PNG data URI."""
    buffer = io.BytesIO()
    # A group or member named with a control character (a damaged line) has no glyph: drawn as a
    # box, without a warning on the terminal.
    warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
    if elements <= SVG_ELEMENT_LIMIT:
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
        plt.close(fig)
        text = buffer.getvalue().decode("utf-8")
        start = text.find("<svg")
        return text[start:]
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="" src="data:image/png;base64,{encoded}">'


def empty_figure(message: str) -> str:
    fig, ax = plt.subplots(figsize=(8, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", color="#666")
    return render(fig)


def write_report(out: Any, page: str, figures: Iterable[Figure]) -> None:
    """Write report.html and figures/NAME.csv through a ``StagedOutput``."""
    out.write_text("report.html", page)
    for figure in figures:
        out.write_text(f"figures/{figure.name}.csv", figure.data.to_csv(index=False))


# --------------------------------------------------------------------------- page

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;color:#1d2733;background:#f6f7f9}
header{background:#1d2733;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:22px} header p{margin:4px 0 0;color:#c9d1da;font-size:13px}
main{max-width:1180px;margin:0 auto;padding:16px 32px 48px}
section{background:#fff;border:1px solid #e1e5ea;border-radius:8px;padding:16px 20px;margin:16px 0}
h2{font-size:17px;margin:0 0 8px} p.caption{color:#4a5663;font-size:13px;margin:4px 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:12px}
.card{background:#fff;border:1px solid #e1e5ea;border-radius:8px;padding:10px 16px;min-width:120px}
.card b{display:block;font-size:22px} .card span{color:#4a5663;font-size:12px}
table{border-collapse:collapse;font-size:12.5px;width:100%;table-layout:auto}
th,td{overflow-wrap:anywhere}
th,td{border-bottom:1px solid #e9ecef;padding:4px 8px;text-align:left} th{background:#f0f2f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.figure svg,.figure img{max-width:100%;height:auto}
.csv{font-size:12px} .advice li{margin:6px 0} .problem{color:#b42318;font-weight:600} .note{color:#6b7785;font-weight:600}
.verdict{font-size:13.5px} .verdict li{margin:4px 0} .ok{color:#1a7f37} .bad{color:#b42318}
"""


def page(title: str, subtitle: str, sections: Sequence[str]) -> str:
    body = "\n".join(sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1><p>{html.escape(subtitle)}</p></header>"
        f"<main>{body}</main></body></html>\n"
    )


def section(title: str, inner: str, caption: str = "") -> str:
    cap = f'<p class="caption">{caption}</p>' if caption else ""
    return f"<section><h2>{html.escape(title)}</h2>{cap}{inner}</section>"


def figure_section(figure: Figure) -> str:
    link = f'<p class="csv">Data: <a href="figures/{figure.name}.csv">figures/{figure.name}.csv</a></p>'
    return section(figure.title, f'<div class="figure">{figure.image}</div>{link}', figure.caption)


def cards(items: Sequence[tuple[str, Any]]) -> str:
    inner = "".join(f'<div class="card"><b>{html.escape(_fmt(v))}</b><span>{html.escape(k)}</span></div>'
                    for k, v in items)
    return f'<div class="cards">{inner}</div>'


def _fmt(value: Any) -> str:
    if value is None or value is pd.NaT or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, pd.Timestamp | datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def table(frame: pd.DataFrame, limit: int = 40) -> str:
    if frame is None or frame.empty:
        return '<p class="caption">none</p>'
    shown = frame.head(limit)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    rows = []
    for record in shown.itertuples(index=False):
        cells = []
        for value in record:
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{html.escape(_fmt(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = f'<p class="caption">{len(frame) - limit} more rows in the table files</p>' if len(frame) > limit else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


def generated_note() -> str:
    return f"generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by kafka-rebalance"


# --------------------------------------------------------------------------- logs report

LOG_TABLES = ("rebalances", "member_events", "storms", "empty_periods", "client_rebalances", "causes",
              "unrecognised")
GROUP_SECTIONS = 20
GROUP_SECTION_ROWS = 30


# The columns the report and its summary use, where a table has more (all columns otherwise):
# the rest (list columns above all) cost more to convert to pandas than anything else here.
REPORT_COLUMNS = {
    "rebalances": ("group", "cluster", "generation", "start", "end", "duration_ms", "members", "outcome", "reason",
                   "cause", "cause_member", "failed_members", "left_members", "drawn_until"),
    "member_events": ("group", "cluster", "member", "time", "kind", "client"),
    "causes": ("cluster", "group", "generation", "start", "cause", "detail", "evidence"),
    "client_rebalances": ("start", "group", "cluster", "client", "client_library", "generation", "protocol",
                          "assigned", "revoked", "lost", "outcome"),
}


def read_tables(directory: Any) -> dict[str, pd.DataFrame]:
    """The logs tables written under ``directory`` (one Parquet directory each) as pandas, with
    the columns the report shows (``REPORT_COLUMNS``). List columns stay Arrow arrays
    (``pd.ArrowDtype``): the report reads them for a few groups' rows, and making a Python
    list of every row costs more than the rest of the table."""
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    def arrow_lists(kind: pa.DataType) -> Any:
        return pd.ArrowDtype(kind) if pa.types.is_list(kind) else None

    frames = {}
    for name in LOG_TABLES:
        columns = REPORT_COLUMNS.get(name)
        table = pq.read_table(Path(directory) / name, columns=list(columns) if columns else None)
        frames[name] = table.to_pandas(types_mapper=arrow_lists)
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


def findings_frame(findings: list[Row]) -> pd.DataFrame:
    columns = ["cluster", "group", "rebalances", "open_rebalances", "median_duration_ms", "max_duration_ms",
               "max_generation", "failures", "poll_timeout_leaves", "leaves", "storms", "empty_periods"]
    frame = pd.DataFrame(findings, columns=columns) if findings else pd.DataFrame(columns=columns)
    return frame


def _cluster_names(findings: list[Row]) -> dict[str, str] | None:
    """None for one cluster; else each cluster's name as shown: an input read on its own is a
    cluster named by its path, shown by its file name unless two inputs share one."""
    clusters = sorted({str(f["cluster"]) for f in findings})
    if len(clusters) <= 1:
        return None
    short = {c: c.rstrip("/").rsplit("/", 1)[-1] or c for c in clusters}
    return short if len(set(short.values())) == len(short) else {c: c for c in clusters}


def _top_groups(findings: pd.DataFrame) -> list[str]:
    if findings.empty:
        return []
    ranked = findings.sort_values(["rebalances", "failures", "group"], ascending=[False, False, True])
    return [str(g) for g in ranked["group"].head(TOP_GROUPS)]


def logs_figures(frames: dict[str, pd.DataFrame], findings: list[Row]) -> list[Figure]:
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


def rebalance_timeline_figure(timeline: pd.DataFrame, departures: pd.DataFrame, storms: pd.DataFrame,
                              groups: list[str]) -> Figure:
    caption = ("Each bar is one rebalance, from \"Preparing to rebalance\" until the group was stable again "
               "(grey: ended empty, hatched: never completed, drawn to the next rebalance or the end of the "
               "log); red crosses are members removed by session timeout or fenced, orange ticks members that left "
               "(or whose poll timeout expired), green pluses members that joined; shaded spans are storms. "
               f"Top {TOP_GROUPS} groups by rebalances.")
    if timeline.empty:
        return Figure("rebalance_timeline", "Rebalances over time", caption, empty_figure("no rebalances found"),
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
                      empty_figure("the log lines carry no time: the rebalances are in the tables below"), timeline)
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
    if separate:
        fig, axes = plt.subplots(len(order), 1, figsize=(11, 1.15 * len(order) + 0.5), squeeze=False)
        panels = [(ax, [group]) for ax, group in zip(axes[::-1, 0], order, strict=True)]
    else:
        fig, ax = plt.subplots(figsize=(11, max(1.8, 0.55 * len(order) + 1.0)))
        panels = [(ax, order)]
    elements = 0
    for ax, panel_groups in panels:
        if separate:
            low, high = spans[panel_groups[0]]
            pad = max((high - low) * 0.05, pd.Timedelta(seconds=1))
            low, high = low - pad, high + pad
        else:
            low, high = start_all, end_all
        min_width = max((high - low).total_seconds(), 1.0) / 400 / 86400  # days: a short rebalance stays visible
        elements += _draw_panel(ax, panel_groups, timeline, departures, storms, end_all, min_width)
        ax.set_yticks(range(len(panel_groups)), panel_groups)
        ax.set_ylim(-0.6, len(panel_groups) - 0.3)
        if separate:
            ax.set_xlim(mdates.date2num(low.tz_localize(None)), mdates.date2num(high.tz_localize(None)))
        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.grid(axis="x", color="#e9ecef")
    bottom = axes[-1, 0] if separate else ax
    bottom.set_xlabel("log time (as written by the broker)" + ("; each group on its own time axis" if separate else ""))
    if separate:
        fig.tight_layout()
    data = timeline.sort_values(["group", "start"])
    return Figure("rebalance_timeline", "Rebalances over time", caption, render(fig, elements), data)

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


def _draw_panel(ax: Any, panel_groups: list[str], timeline: pd.DataFrame, departures: pd.DataFrame,
                storms: pd.DataFrame, end_all: Any, min_width: float) -> int:
    """The groups of one panel, one row each (``panel_groups[y]`` on row ``y``): their rebalances,
    storms and departures, one collection per kind of mark for the whole panel (an artist per
    group and kind costs more to build and to render than the marks in it); returns elements drawn."""
    from matplotlib.collections import PolyCollection

    row_of = {group: y for y, group in enumerate(panel_groups)}
    elements = 0
    mine = timeline[timeline["group"].isin(row_of)]
    for outcome, colour, hatch in (("stable", "#2f6fde", None), ("empty", "#9aa5b1", None),
                                   ("open", "#2f6fde", "////")):
        part = mine[mine["outcome"] == outcome]
        if part.empty:
            continue
        starts = mdates.date2num(part["start"].dt.tz_localize(None))
        ends = part["end"].fillna(part.get("drawn_until", end_all)).fillna(end_all)
        widths = np.maximum(mdates.date2num(ends.dt.tz_localize(None)) - starts, min_width)
        bottoms = part["group"].map(row_of).to_numpy(dtype=float) - 0.3
        tops = bottoms + 0.6
        vertices = np.stack([np.column_stack(corner) for corner in (
            (starts, bottoms), (starts, tops), (starts + widths, tops), (starts + widths, bottoms))], axis=1)
        # A 3-D array is PolyCollection's fast path; its annotation lists only sequences of arrays.
        polygons = PolyCollection(vertices,  # type: ignore[arg-type]
                                  facecolors=colour, hatch=hatch, edgecolor="#1d2733" if hatch else "none", linewidth=0.3)
        ax.add_collection(polygons)
        elements += len(part)
    if not storms.empty:
        rows_in_panel = len(panel_groups)
        in_panel = storms[storms["group"].isin(row_of)]
        for group, start, end in zip(in_panel["group"], in_panel["start"], in_panel["end"], strict=True):
            y = row_of[group]
            ax.axvspan(mdates.date2num(start.tz_localize(None)), mdates.date2num(end.tz_localize(None)),
                       ymin=(y + 0.05) / rows_in_panel, ymax=(y + 0.95) / rows_in_panel, color="#f4c542", alpha=0.35,
                       lw=0)
    if not departures.empty:
        marked = departures[departures["group"].isin(row_of)]
        rows = marked["group"].map(row_of)
        for kinds, offset, marker, colour, size, width in (
                (["failed", "fenced"], 0.38, "x", "#d62728", 6, 1.6), (["left", "poll_timeout"], 0.38, "|", "#ff7f0e", 8, 1.6),
                (["joined"], -0.42, "+", "#2ca02c", 7, 1.4)):
            chosen = marked["kind"].isin(kinds)
            # Times as Matplotlib date numbers, like the bars: datetimes would give the axis date
            # units, and a collection on an axis with units converts its paths one by one at draw.
            ax.plot(mdates.date2num(marked.loc[chosen, "time"].dt.tz_localize(None)),
                    (rows[chosen] + offset).to_list(), marker, color=colour, ms=size, mew=width)
            elements += int(chosen.sum())
    return elements


def duration_figure(quantiles: pd.DataFrame, groups: list[str]) -> Figure:
    caption = ("How long each group's rebalances took (box: quartiles, whiskers: 5th-95th percentile, dot: the "
               "longest). Long rebalances mean members slow to rejoin, up to the rebalance timeout "
               "(max.poll.interval.ms).")
    if quantiles.empty:
        return Figure("rebalance_durations", "Rebalance durations", caption,
                      empty_figure("no completed rebalances"), quantiles)
    order = [g for g in groups if g in set(quantiles["group"])][::-1]
    stats = []
    by_group = quantiles.drop_duplicates("group").set_index("group", drop=False)
    for group in order:
        row = by_group.loc[group]
        stats.append({"label": f"{group} ({int(row['rebalances'])})", "whislo": row["p5"], "q1": row["p25"],
                      "med": row["p50"], "q3": row["p75"], "whishi": row["p95"], "fliers": [row["max"]]})
    fig, ax = plt.subplots(figsize=(11, max(1.8, 0.5 * len(order) + 1.0)))
    ax.bxp(stats, orientation="horizontal", showfliers=True, patch_artist=True,
           boxprops={"facecolor": "#cfe0fb", "edgecolor": "#2f6fde"}, medianprops={"color": "#1d2733"},
           flierprops={"marker": "o", "markerfacecolor": "#d62728", "markeredgecolor": "none"})
    ax.set_xlabel("rebalance duration (ms)")
    top = quantiles["max"].max()
    if top and quantiles["p50"].min() > 0 and top / max(quantiles["p50"].min(), 1) > 100:
        ax.set_xscale("log")
    ax.grid(axis="x", color="#e9ecef")
    data = quantiles.set_index("group").loc[order[::-1]].reset_index()
    return Figure("rebalance_durations", "Rebalance durations", caption, render(fig), data)


def storms_figure(findings: pd.DataFrame, storms: pd.DataFrame) -> Figure:
    caption = ("Per group: rebalances, member failures, and rebalances that were part of a storm (many rebalances "
               "close together, or one client failing and rejoining in a loop).")
    if findings.empty:
        return Figure("storms", "Rebalances, failures and storms per group", caption,
                      empty_figure("no groups"), findings)
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
    fig, ax = plt.subplots(figsize=(11, max(1.8, 0.5 * len(top) + 1.0)))
    ys = list(range(len(top)))[::-1]
    h = 0.26
    ax.barh([y + h for y in ys], data["rebalances"], height=h, color="#2f6fde", label="rebalances")
    ax.barh(ys, data["rebalances_in_storms"], height=h, color="#f4c542", label="rebalances in storms")
    ax.barh([y - h for y in ys], data["member_failures"], height=h, color="#d62728", label="member failures")
    ax.set_yticks(ys, top)
    ax.legend(loc="lower right", frameon=False)
    ax.grid(axis="x", color="#e9ecef")
    ax.set_xlabel("count")
    return Figure("storms", "Rebalances, failures and storms per group", caption, render(fig), data)


def advice_html(advice_items: Sequence[Any], groups_shown: int = 8) -> str:
    """One entry per finding, with the advice once and the groups it applies to (the details of
    each group folded away)."""
    from kafka_rebalance.pipeline.advice import RULE_TITLES, by_rule

    ordered = by_rule(list(advice_items))
    entries = []
    for rule, items in ordered:
        groups = [i.group for i in items]
        named = ", ".join(html.escape(g) for g in groups[:groups_shown])
        more = f" and {len(groups) - groups_shown} more" if len(groups) > groups_shown else ""
        title = RULE_TITLES.get(rule, rule)
        details = "".join(f"<li>{html.escape(i.group)}: {html.escape(i.finding)}</li>" for i in items[:200])
        entries.append(
            f'<li><span class="{items[0].severity}">{html.escape(title)}</span> '
            f"({len(groups)} group{'s' if len(groups) != 1 else ''}: {named}{more}). "
            f"{html.escape(items[0].advice)}"
            f"<details><summary>details</summary><ul>{details}</ul></details></li>")
    return f'<ul class="advice">{"".join(entries)}</ul>'


def _ms_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return ""
    seconds = float(value) / 1000
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def coverage_html(summary: Row) -> str:
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


def group_section(group: str, rebalances: pd.DataFrame, causes: pd.DataFrame, advice_items: list[Advice]) -> str:
    """One group: its advice, then its rebalances (latest first) with cause and evidence."""
    from kafka_rebalance.pipeline.logparse.story import CAUSE_TITLES

    parts = []
    mine = [a for a in advice_items if a.group == group]
    if mine:
        parts.append("<ul class=\"advice\">" + "".join(
            f'<li><span class="{a.severity}">{html.escape(a.finding)}</span>. {html.escape(a.advice)}</li>'
            for a in mine) + "</ul>")
    rows = rebalances.sort_values("start", ascending=False).head(GROUP_SECTION_ROWS)
    evidence = _CauseEvidence(causes, CAUSE_TITLES)
    lines = []
    during_lists = rows["during"] if "during" in rows.columns else pd.Series([None] * len(rows), index=rows.index)
    for started, outcome, duration_ms, generation_number, cause, cause_member, members, during_list in zip(
            rows["start"], rows["outcome"], rows["duration_ms"], rows["generation"], rows["cause"],
            rows["cause_member"], rows["members"], during_lists, strict=True):
        start = "" if pd.isna(started) else f"{started:%Y-%m-%d %H:%M:%S.%f}"[:-3]
        length = "never completed" if outcome == "open" else _ms_text(duration_ms)
        generation = "" if pd.isna(generation_number) else f"{int(generation_number)}"
        cause_text = html.escape(CAUSE_TITLES.get(cause, cause or ""))
        member = f" ({html.escape(str(cause_member))})" if isinstance(cause_member, str) and cause_member else ""
        details = evidence.html(float(generation_number) if generation else -1.0, started)
        during = list(during_list) if during_list is not None else []
        # what happened while it was open: never its cause (a cause is at or before the start)
        during_text = (f'<div class="caption">during it: {html.escape("; ".join(during[:6]))}'
                       f'{" and more" if len(during) > 6 else ""}</div>') if during else ""
        lines.append(
            f"<tr><td>{start}</td><td>{generation}</td><td>{html.escape(str(outcome))}</td><td>{length}</td>"
            f"<td>{'' if pd.isna(members) else int(members)}</td><td>{cause_text}{member}{during_text}"
            + (f"<details><summary>evidence</summary><ul>{details}</ul></details>" if details else "")
            + "</td></tr>")
    more = len(rebalances) - len(rows)
    note = f'<p class="caption">latest {len(rows)} of {len(rebalances)} rebalances</p>' if more > 0 else ""
    parts.append("<table><thead><tr><th>start</th><th>generation</th><th>outcome</th><th>length</th><th>members</th>"
                 f"<th>cause</th></tr></thead><tbody>{''.join(lines)}</tbody></table>{note}")
    return "".join(parts)


class _CauseEvidence:
    """A group's causes, looked up per rebalance: the causes of its generation, and those that
    know no generation but started when it did (in table order). Indexed once per group, not
    filtered per rebalance."""

    def __init__(self, causes: pd.DataFrame, titles: dict[str, str]):
        self._titles = titles
        self._by_generation: dict[float, list[int]] = {}
        self._by_start: dict[Any, list[int]] = {}
        self._rows: list[tuple[str, Any, Any]] = []
        if not len(causes):
            return
        # Missing generations as None: pandas takes na_value=None, pandas-stubs' overloads do not list it.
        generations = causes["generation"].astype("Float64").to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
        for position, (generation, start, cause, detail, lines) in enumerate(zip(
                generations, causes["start"], causes["cause"], causes["detail"], causes["evidence"], strict=True)):
            self._rows.append((cause, detail, lines))
            if generation is not None:
                self._by_generation.setdefault(float(generation), []).append(position)
            elif not pd.isna(start):
                self._by_start.setdefault(start, []).append(position)

    def html(self, generation: float, start: Any) -> str:
        positions = self._by_generation.get(generation, [])
        if not pd.isna(start):
            positions = sorted(positions + self._by_start.get(start, []))
        return "".join(self._item(*self._rows[p]) for p in positions)

    def _item(self, cause: str, detail: Any, lines: Any) -> str:
        return (f"<li>{html.escape(self._titles.get(cause, cause))}"
                f"{': ' + html.escape(str(detail)) if isinstance(detail, str) and detail else ''}"
                f"<pre>{html.escape(chr(10).join(list(lines)[:5]))}</pre></li>")


def _rows_by_group(frame: pd.DataFrame, groups: list[str]) -> dict[str, pd.DataFrame]:
    """Each of ``groups``' rows of ``frame`` (in table order), from one pass over the table."""
    chosen = frame[frame["group"].isin(groups)]
    parts = dict(tuple(chosen.groupby("group", sort=False))) if len(chosen) else {}
    return {group: parts.get(group, frame.iloc[0:0]) for group in groups}


def render_logs_report(summary: Row, figures: list[Figure], advice_items: list[Advice], frames: dict[str, pd.DataFrame],
                       findings: list[Row]) -> str:
    several = _cluster_names(findings)
    sections = [cards([
        ("lines read", summary["lines_read"]),
        ("lines understood", summary["lines_matched"]),
        ("group lines not understood", summary.get("lines_unrecognised", 0)),
        ("groups", summary["groups"]),
        ("rebalances", summary["rebalances"]),
        ("never completed", summary.get("open_rebalances", 0)),
        ("member failures", summary["member_failures"]),
        ("storms", summary["storms"]),
    ])]
    if summary["lines_matched"] == 0:
        samples = "".join(f"<li><code>{html.escape(s[:200])}</code></li>" for s in summary.get("sample_lines", []))
        sections.append(section("Nothing recognised", "<p>No line of the input is a Kafka group-membership message "
                                "this tool knows (broker GroupCoordinator, Java consumer, Spring Kafka, kafka-python, "
                                "librdkafka debug, Kafka Streams). The input starts with:</p>"
                                f"<ul>{samples}</ul>"))
    if advice_items:
        sections.append(section("What the logs show, and what to do", advice_html(advice_items)))
    elif summary["lines_matched"]:
        sections.append(section("What the logs show, and what to do",
                                '<p class="caption">No failures, storms or slow rebalances found.</p>'))
    sections.append(section("Inputs", coverage_html(summary),
                            "What was read from each input. Lines about groups that match no known message are "
                            "listed under \"Not understood\"."))
    sections.extend(figure_section(f) for f in figures)
    groups = _labelled(findings_frame(findings), several)
    raw_groups = dict(zip(groups["group"], findings_frame(findings)["group"], strict=True)) if len(groups) else {}
    rebalances = _labelled(frames["rebalances"], several)
    causes = _labelled(frames["causes"], several)
    shown = _top_groups(groups)[:GROUP_SECTIONS] if len(groups) else []
    rebalances_of, causes_of = _rows_by_group(rebalances, shown), _rows_by_group(causes, shown)
    for group in shown:
        label = group
        group_advice = [a for a in advice_items
                        if (f"{several.get(a.cluster, a.cluster)}/{a.group}" if several else a.group) == group]
        raw_group = raw_groups.get(group, group)
        sections.append(section(f"Group {label}", group_section(raw_group, rebalances_of[group], causes_of[group],
                                                               group_advice)))
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


# --------------------------------------------------------------------------- lab report

STRATEGY_ORDER = ["range", "roundrobin", "sticky", "cooperative-sticky"]
EAGER_STRATEGIES = ("range", "roundrobin", "sticky")
# Columns that identify a configuration apart from the strategy (for picking comparable runs).
_CONFIG_COLUMNS = ["scenario", "seed", "group_size", "total_partitions", "session_timeout_ms",
                   "heartbeat_interval_ms", "max_poll_interval_ms", "max_poll_records", "produce_records_per_s"]


def _strategy_rank(strategy: str) -> tuple[int, str]:
    return (STRATEGY_ORDER.index(strategy) if strategy in STRATEGY_ORDER else len(STRATEGY_ORDER), strategy)


def pick_showcase(sims: pd.DataFrame) -> list[str]:
    """Run ids of one configuration under every strategy: the sweep's showcase run if it marks
    one, else the first scenario swept over more than one strategy."""
    ok = sims[sims["error"].isna()]
    if ok.empty:
        return []
    candidates = ok[ok["showcase"].fillna(False)]
    if candidates.empty:
        per_scenario = ok.groupby("scenario")["strategy"].nunique()
        multi = [s for s in ok["scenario"].unique() if per_scenario.get(s, 0) > 1]
        if not multi:
            return []
        candidates = ok[ok["scenario"] == multi[0]]
    swept_extra = [c for c in candidates.columns if c not in _CONFIG_COLUMNS and c not in _RESULT_COLUMNS]
    keys = [c for c in _CONFIG_COLUMNS + swept_extra if c in candidates.columns]
    reference = candidates.sort_values(["seed", "run_id"]).iloc[0]
    same = candidates
    for key in keys:
        value = reference[key]
        same = same[same[key].isna()] if pd.isna(value) else same[same[key] == value]
    same = same.drop_duplicates("strategy")
    by_strategy = sorted(zip(same["strategy"], same["run_id"], strict=True), key=lambda pair: _strategy_rank(pair[0]))
    return [run_id for _, run_id in by_strategy]


_RESULT_COLUMNS = {"run_id", "sweep", "label", "strategy", "rebalances", "partitions_moved",
                   "stop_the_world_partition_ms", "max_partition_unowned_ms", "records_processed_twice",
                   "records_lost", "min_partitions_moved", "final_balance", "final_members", "protocol",
                   "chosen_strategy", "coordinator_partition", "extra_metrics", "showcase", "error"}


def _member_colours(members: Sequence[str]) -> dict[str, str]:
    palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
               "#9c755f", "#bab0ac"]
    return {m: palette[i % len(palette)] for i, m in enumerate(sorted(members, key=_natural_key))}


def _natural_key(text: str) -> tuple[int | str, ...]:
    import re

    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(text)))


def ownership_figure(sims: pd.DataFrame, ownership: pd.DataFrame | None, rebalances: pd.DataFrame | None,
                     run_ids: list[str]) -> Figure:
    title = "Partition ownership over time, per strategy"
    caption = ("The same scenario and seed under each strategy. Each row is a partition, coloured by the member "
               "consuming it; grey bands are rebalances. Red marks a stop-the-world pause: the partition was "
               "revoked and given back to the same member (often milliseconds, so drawn wider than it lasted); "
               "hatching marks a hand-off to another member, during which nobody consumes the partition. EAGER "
               "strategies revoke everything at every rebalance, so every row stops; cooperative-sticky only "
               "stops the partitions that move.")
    if not run_ids or ownership is None or ownership.empty:
        return Figure("ownership_timeline", title, caption, empty_figure("no scenario swept over strategies"),
                      pd.DataFrame())
    runs = sims.set_index("run_id").loc[run_ids]
    partitions = sorted(ownership["partition"].unique(), key=_natural_key)
    members = sorted(ownership["member"].unique(), key=_natural_key)
    colours = _member_colours(members)
    # Zoom on the rebalances after the group first settled, where strategies differ.
    later = rebalances[rebalances["generation"] > 1] if rebalances is not None and not rebalances.empty else None
    end_all = float(ownership["end_ms"].max())
    if later is not None and not later.empty:
        lo = float(later["start_ms"].min())
        hi = float(later["end_ms"].fillna(end_all).max())
        pad = max(1500.0, 0.25 * (hi - lo))
        x_lo, x_hi = max(0.0, lo - pad), min(end_all, hi + pad)
    else:
        x_lo, x_hi = 0.0, end_all
    min_gap_s = (x_hi - x_lo) / 1000 * 0.006
    rows = len(partitions)
    panel_height = max(1.1, 0.2 * rows + 0.7)
    fig, axes = plt.subplots(len(run_ids), 1, figsize=(11, panel_height * len(run_ids) + 0.8), sharex=True,
                             squeeze=False)
    elements = 0
    for ax, run_id in zip(axes[:, 0], run_ids, strict=True):
        run = runs.loc[run_id]
        mine = ownership[ownership["run_id"] == run_id]
        for y, partition in enumerate(partitions):
            intervals = mine[mine["partition"] == partition].sort_values("start_ms")
            for member, part in intervals.groupby("member"):
                bars = [(s / 1000, (e - s) / 1000) for s, e in zip(part["start_ms"], part["end_ms"], strict=True)]
                ax.broken_barh(bars, (y - 0.38, 0.76), facecolors=colours[member], linewidth=0)
                elements += len(bars)
            # A gap between two intervals of the same member is a stop-the-world pause (the
            # partition was revoked and given back); often milliseconds, so drawn widened.
            previous = None
            for interval in intervals.itertuples():
                if previous is not None and interval.start_ms > previous.end_ms:
                    gap_mid = (previous.end_ms + interval.start_ms) / 2000
                    gap = max((interval.start_ms - previous.end_ms) / 1000, min_gap_s)
                    if interval.member == previous.member:
                        ax.broken_barh([(gap_mid - gap / 2, gap)], (y - 0.45, 0.9), facecolors="#d62728", linewidth=0)
                    else:
                        ax.broken_barh([(previous.end_ms / 1000, (interval.start_ms - previous.end_ms) / 1000)],
                                       (y - 0.38, 0.76), facecolors="none", edgecolor="#1d2733", hatch="///",
                                       linewidth=0.4)
                    elements += 1
                previous = interval
        if rebalances is not None:
            of_run = rebalances[rebalances["run_id"] == run_id]
            for start_ms, end_ms in zip(of_run["start_ms"], of_run["end_ms"], strict=True):
                end = end_ms if pd.notna(end_ms) else end_all
                ax.axvspan(start_ms / 1000, end / 1000, color="#9aa5b1", alpha=0.25, lw=0)
        stw = run["stop_the_world_partition_ms"]
        ax.set_title(f"{run['strategy']} ({run['protocol']}): stop-the-world {_fmt(int(stw))} partition-ms, "
                     f"{_fmt(int(run['partitions_moved']))} partition(s) moved, {_fmt(int(run['rebalances']))} "
                     "rebalances", loc="left", fontsize=10)
        ax.set_yticks(range(rows), partitions if rows <= 24 else [""] * rows)
        ax.set_ylim(-0.6, rows - 0.4)
        ax.invert_yaxis()
        ax.set_xlim(x_lo / 1000, x_hi / 1000)
    axes[-1, 0].set_xlabel("simulated time (s)")
    handles = [matplotlib.patches.Patch(color=colours[m], label=m) for m in members[:12]]
    handles.append(matplotlib.patches.Patch(color="#9aa5b1", alpha=0.4, label="rebalance"))
    handles.append(matplotlib.patches.Patch(color="#d62728", label="stop-the-world (revoked, same owner; widened)"))
    handles.append(matplotlib.patches.Patch(facecolor="none", edgecolor="#1d2733", hatch="///",
                                            label="hand-off to a new owner"))
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 4), frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.25 / max(len(run_ids), 1)))
    fig.tight_layout()
    scenario = runs.iloc[0]["scenario"]
    caption = f"Scenario <b>{html.escape(str(scenario))}</b>, seed {int(runs.iloc[0]['seed'])}. " + caption
    data = ownership.merge(runs[["strategy"]].reset_index(), on="run_id", suffixes=("_table", ""))
    data = data[["strategy", "partition", "member", "start_ms", "end_ms"]]
    return Figure("ownership_timeline", title, caption, render(fig, elements), data)


def _grouped_bars(summary: pd.DataFrame, value: str, ylabel: str, *, marker: str | None = None,
                  marker_label: str = "", log: bool = False) -> tuple[MplFigure, int]:
    scenarios = list(dict.fromkeys(summary["scenario"]))
    strategies = sorted(summary["strategy"].unique(), key=_strategy_rank)
    width = 0.8 / max(len(strategies), 1)
    fig, ax = plt.subplots(figsize=(11, 3.8))
    top = float(summary[value].max() or 0) if not summary.empty else 0
    for i, strategy in enumerate(strategies):
        part = summary[summary["strategy"] == strategy].set_index("scenario")
        xs = [k + (i - (len(strategies) - 1) / 2) * width for k in range(len(scenarios))]
        heights = [float(part[value].get(s, float("nan"))) if s in part.index else float("nan") for s in scenarios]
        ax.bar(xs, heights, width=width * 0.92, color=strategy_colour(strategy, i), label=strategy)
        for x, h in zip(xs, heights, strict=True):
            if h == 0:
                ax.text(x, 0, "0", ha="center", va="bottom", fontsize=8, color="#1d2733")
        if marker:
            marks = [float(part[marker].get(s, float("nan"))) if s in part.index else float("nan") for s in scenarios]
            ax.scatter(xs, marks, marker="_", s=160, color="#1d2733", zorder=3,
                       label=marker_label if i == 0 else None)
    ax.set_xticks(range(len(scenarios)), scenarios, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    if log and top > 0:
        ax.set_yscale("symlog", linthresh=max(1.0, top / 1000))
    ax.grid(axis="y", color="#e9ecef")
    ax.legend(frameon=False, ncol=5, loc="upper left", bbox_to_anchor=(0, 1.15))
    return fig, len(scenarios) * len(strategies)


def lab_figures(sims: pd.DataFrame, summary: pd.DataFrame, ownership: pd.DataFrame | None,
                rebalances: pd.DataFrame | None) -> list[Figure]:
    figures = [ownership_figure(sims, ownership, rebalances, pick_showcase(sims))]
    if summary.empty:
        return figures
    fig, n = _grouped_bars(summary, "stop_the_world_partition_ms", "partition-ms (mean over runs, symlog)",
                           log=True)
    figures.append(Figure(
        "stop_the_world", "Stop-the-world by strategy",
        "Partition-milliseconds during which a partition that kept its owner was nonetheless not consumed "
        "because of a rebalance (EAGER revokes everything first). Mean over the runs of each scenario.",
        render(fig, n), summary[["scenario", "strategy", "runs", "stop_the_world_partition_ms",
                                 "max_stop_the_world_partition_ms"]]))
    fig, n = _grouped_bars(summary, "partitions_moved", "partitions moved (mean over runs)",
                           marker="min_partitions_moved", marker_label="minimum needed for balance")
    figures.append(Figure(
        "partitions_moved", "Partitions moved by strategy",
        "Partitions that changed owner over the run; the black tick is the minimum any assignor must move to "
        "stay balanced after each membership change (shown where all members subscribe to the same topics).",
        render(fig, n), summary[["scenario", "strategy", "runs", "partitions_moved", "min_partitions_moved"]]))
    fig, n = _grouped_bars(summary, "final_balance", "max - min partitions per member (mean)")
    figures.append(Figure(
        "balance", "Balance by strategy",
        "Spread of the final assignment: the most partitions any member has minus the fewest (0 or 1 is "
        "balanced). Range balances each topic on its own and RoundRobin ignores who may take what, so both "
        "go uneven when topics or subscriptions differ.",
        render(fig, n), summary[["scenario", "strategy", "runs", "final_balance", "max_final_balance"]]))
    fig, n = _grouped_bars(summary, "max_partition_unowned_ms", "ms (mean over runs)")
    figures.append(Figure(
        "unowned", "Longest time a partition had no owner",
        "Includes the initial join (the group's first rebalance waits group.initial.rebalance.delay.ms).",
        render(fig, n), summary[["scenario", "strategy", "runs", "max_partition_unowned_ms"]]))
    return figures


def lab_checks(sims: pd.DataFrame) -> list[tuple[bool, str]]:
    """The statements the report makes about the sweep, each checked against the data."""
    ok = sims[sims["error"].isna()]
    checks: list[tuple[bool, str]] = []
    coop = ok[ok["strategy"] == "cooperative-sticky"]
    eager = ok[ok["strategy"].isin(EAGER_STRATEGIES)]
    if not coop.empty:
        worst = int(coop["stop_the_world_partition_ms"].max())
        checks.append((worst == 0, f"cooperative-sticky: stop-the-world is {worst} partition-ms at most over "
                                   f"{len(coop)} run(s)"))
    if not eager.empty:
        later = eager[eager["rebalances"] > 1]
        positive = int((later["stop_the_world_partition_ms"] > 0).sum())
        checks.append((positive > 0, f"eager strategies: stop-the-world above 0 in {positive} of {len(later)} "
                                     "run(s) with more than one rebalance (mean "
                                     f"{_fmt(float(later['stop_the_world_partition_ms'].mean() or 0))} partition-ms)"))
    sticky = ok[(ok["strategy"] == "sticky") & ok["min_partitions_moved"].notna()]
    if not sticky.empty:
        over = sticky[sticky["partitions_moved"] > sticky["min_partitions_moved"]]
        checks.append((over.empty, f"sticky moves no more partitions than the minimum needed for balance in "
                                   f"{len(sticky) - len(over)} of {len(sticky)} comparable run(s)"))
    for strategy in ("range", "roundrobin"):
        mine = ok[ok["strategy"] == strategy]
        uneven = mine[mine["final_balance"] > 1]
        if not mine.empty:
            names = ", ".join(sorted(uneven["scenario"].unique())) or "none"
            checks.append((True, f"{strategy}: uneven (max - min > 1) in {uneven['scenario'].nunique()} "
                                 f"scenario(s): {names}"))
    lost = int(ok["records_lost"].fillna(0).sum()) if "records_lost" in ok else 0
    checks.append((lost == 0, f"records lost over all runs: {lost}"))
    return checks


def render_lab_report(sweep: Any, sims: pd.DataFrame, summary: pd.DataFrame, figures: list[Figure]) -> str:
    failed = sims[sims["error"].notna()]
    sections = [cards([
        ("simulations", len(sims)),
        ("scenarios", sims["scenario"].nunique()),
        ("strategies", sims["strategy"].nunique()),
        ("failed runs", len(failed)),
        ("rebalances simulated", int(sims["rebalances"].fillna(0).sum())),
    ])]
    items = "".join(
        f'<li><span class="{"ok" if passed else "bad"}">{"&#10003;" if passed else "&#10007;"}</span> '
        f"{html.escape(text)}</li>" for passed, text in lab_checks(sims))
    sections.append(section("What the sweep shows", f'<ul class="verdict">{items}</ul>'))
    migrate = migration_section(sims)
    if migrate:
        sections.append(migrate)
    sections.extend(figure_section(f) for f in figures)
    if not summary.empty:
        sections.append(section("Per scenario and strategy", table(summary, limit=200),
                                "Means over the runs (seeds and swept parameters) of each scenario."))
    if not failed.empty:
        sections.append(section("Failed runs", table(failed[["scenario", "strategy", "seed", "error"]])))
    subtitle = f"sweep {sweep.name}: {len(sims)} simulations; {generated_note()}"
    return page("Kafka rebalance lab", subtitle, sections)


# --------------------------------------------------------------------------- should we migrate?

PROTOCOL_ORDER = ("eager", "cooperative-sticky", "consumer-uniform", "consumer-range")
PROTOCOL_NAMES = {"eager": "eager (range)", "cooperative-sticky": "cooperative-sticky",
                  "consumer-uniform": "KIP-848 uniform", "consumer-range": "KIP-848 range"}


def _extra(sims: pd.DataFrame, key: str) -> pd.Series:
    return sims["extra_metrics"].map(lambda m: (m or {}).get(key) if isinstance(m, dict) else None)


def protocol_comparison(sims: pd.DataFrame) -> pd.DataFrame:
    """Per churn and protocol (runs swept over ``protocol``), the figures that answer "should we
    migrate?", in seconds (means over seeds)."""
    ok = sims[sims["error"].isna() & sims["strategy"].isin(PROTOCOL_ORDER) & (sims["scenario"] != "migration")].copy()
    if ok.empty:
        return pd.DataFrame()
    for key in ("unowned_partition_ms", "member_pause_p50_ms", "member_pause_max_ms", "longest_unstable_ms"):
        ok[key] = pd.to_numeric(_extra(ok, key), errors="coerce")
    grouped = ok.groupby(["scenario", "strategy"], sort=False).agg(
        unowned=("unowned_partition_ms", "mean"), pause_p50=("member_pause_p50_ms", "mean"),
        pause_max=("member_pause_max_ms", "mean"), duplicates=("records_processed_twice", "mean"),
        rebalances=("rebalances", "mean"), unstable=("longest_unstable_ms", "mean"),
        stw=("stop_the_world_partition_ms", "mean")).reset_index()
    grouped["order"] = grouped["strategy"].map(PROTOCOL_ORDER.index)
    grouped = grouped.sort_values(["scenario", "order"])
    return pd.DataFrame({
        "churn": grouped["scenario"],
        "protocol": grouped["strategy"].map(PROTOCOL_NAMES),
        "unowned partition-s": (grouped["unowned"] / 1000).round(1),
        "pause per member p50 / max s": [f"{a / 1000:.1f} / {b / 1000:.1f}" for a, b in
                                         zip(grouped["pause_p50"], grouped["pause_max"], strict=True)],
        "records twice": grouped["duplicates"].round(0),
        "rebalances": grouped["rebalances"].round(0),
        "longest unstable s": (grouped["unstable"] / 1000).round(1),
        "stop-the-world partition-s": (grouped["stw"] / 1000).round(1),
    })


def _migration_label(protocol: str) -> str:
    """The ``migration`` churn under ``protocol``: from which classic group to which assignor (sim/churn.py)."""
    if protocol.startswith("consumer-"):
        return f"cooperative-sticky -> {PROTOCOL_NAMES[protocol]}"
    return f"{PROTOCOL_NAMES[protocol]} -> KIP-848 uniform"


def migration_cost(sims: pd.DataFrame) -> pd.DataFrame:
    """What the rolling upgrade itself costs (the ``migration`` churn), next to a plain rolling
    restart of the group it starts from (the same events, consumers coming back on the same protocol)."""
    ok = sims[sims["error"].isna() & sims["strategy"].isin(PROTOCOL_ORDER)
              & sims["scenario"].isin(["migration", "rolling-restart"])].copy()
    if ok.empty or not (ok["scenario"] == "migration").any():
        return pd.DataFrame()
    for key in ("unowned_partition_ms", "unstable_ms", "longest_unstable_ms"):
        ok[key] = pd.to_numeric(_extra(ok, key), errors="coerce")
    grouped = ok.groupby(["scenario", "strategy"], sort=False).agg(
        unowned=("unowned_partition_ms", "mean"), duplicates=("records_processed_twice", "mean"),
        rebalances=("rebalances", "mean"), unstable=("unstable_ms", "mean"), longest=("longest_unstable_ms", "mean"),
        stw=("stop_the_world_partition_ms", "mean")).reset_index()
    restart = {r["strategy"]: r for _, r in grouped[grouped["scenario"] == "rolling-restart"].iterrows()}
    rows = []
    for _, r in grouped[grouped["scenario"] == "migration"].iterrows():
        source = "cooperative-sticky" if str(r["strategy"]).startswith("consumer-") else r["strategy"]
        plain = restart.get(source)
        rows.append({
            "rolling upgrade": _migration_label(str(r["strategy"])),
            "unowned partition-s (plain restart)": f"{r['unowned'] / 1000:,.1f}" + (
                f" ({plain['unowned'] / 1000:,.1f})" if plain is not None else ""),
            "records twice": round(float(r["duplicates"])),
            "rebalances": round(float(r["rebalances"])),
            "unstable s total / longest": f"{r['unstable'] / 1000:,.1f} / {r['longest'] / 1000:,.1f}",
            "stop-the-world partition-s": round(float(r["stw"]) / 1000, 1),
            "order": PROTOCOL_ORDER.index(str(r["strategy"])),
        })
    return pd.DataFrame(rows).sort_values("order").drop(columns="order").reset_index(drop=True)


def migration_cost_verdict(cost: pd.DataFrame) -> list[str]:
    lines = []
    for _, r in cost.iterrows():
        lines.append(f"Rolling upgrade {r['rolling upgrade']}: {r['unowned partition-s (plain restart)']} "
                     f"partition-seconds unowned (in brackets: a plain rolling restart of the same group), "
                     f"{r['rebalances']} rebalances, {r['records twice']} records processed twice, unstable for "
                     f"{r['unstable s total / longest']} s (total / longest stretch), "
                     f"{r['stop-the-world partition-s']:,.1f} stop-the-world partition-seconds.")
    return lines


def migration_verdict(comparison: pd.DataFrame) -> list[str]:
    """Sentences with numbers: what KIP-848 buys over cooperative-sticky (and eager), per churn."""
    lines: list[str] = []
    if comparison.empty:
        return lines
    for churn, rows in comparison.groupby("churn", sort=False):
        by = {r["protocol"]: r for _, r in rows.iterrows()}
        new, old = by.get("KIP-848 uniform"), by.get("cooperative-sticky")
        if new is None or old is None:
            continue
        a, b = float(new["unowned partition-s"]), float(old["unowned partition-s"])
        change = f"{(a - b) / b * 100:+.0f}%" if b else "n/a"
        lines.append(
            f"{churn}: KIP-848 (uniform) leaves {a:,.1f} partition-seconds unowned against {b:,.1f} for "
            f"cooperative-sticky ({change}); {int(new['rebalances'])} rebalances against {int(old['rebalances'])}; "
            f"{int(new['records twice'])} records processed twice against {int(old['records twice'])}; "
            f"longest unstable stretch {float(new['longest unstable s']):.1f} s against "
            f"{float(old['longest unstable s']):.1f} s.")
        eager = by.get("eager (range)")
        if eager is not None:
            lines[-1] += (f" Eager stops the world for {float(eager['stop-the-world partition-s']):,.1f} "
                          "partition-seconds; neither cooperative-sticky nor KIP-848 does.")
    return lines


def migration_section(sims: pd.DataFrame) -> str:
    comparison = protocol_comparison(sims)
    if comparison.empty:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in migration_verdict(comparison))
    caption = ("The same churn under each protocol (sim/churn.py: a typical service's costs, see "
               "docs/scenarios.md). Unowned partition-seconds: time partitions had no consumer. Pause: per "
               "member, the longest time it owned nothing between two periods of owning something (includes "
               "a restarted member's own downtime). Longest unstable: the longest stretch of back-to-back "
               "rebalances (a cooperative follow-up belongs to the rebalance before it). Both simulators "
               "charge the listener work (revocation_ms, assignment_ms) to the application thread.")
    cost = migration_cost(sims)
    if not cost.empty:
        items += "".join(f"<li>{html.escape(line)}</li>" for line in migration_cost_verdict(cost))
        caption += (" What the migration costs: the 'migration' churn restarts every member once, one at a time, "
                    "with group.protocol=consumer (the first ConsumerGroupHeartbeat converts the group; members not "
                    "yet upgraded stay in it as classic members); in brackets the same restarts without upgrading. "
                    "Unstable: time with a rebalance open, in total and the longest stretch.")
    body = f'<ul class="verdict">{items}</ul>' + table(comparison, limit=200)
    if not cost.empty:
        body += "<h3>What the migration costs</h3>" + table(cost, limit=50)
    return section("Should we migrate to KIP-848?", body, caption)
