"""The report: one self-contained HTML file (figures inlined as SVG or PNG, no script, no
network), with the data of every figure written beside it as ``figures/NAME.csv``.

Figures are drawn by matplotlib from small pandas frames; anything large is aggregated on Spark
before it gets here.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

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


def render(fig: plt.Figure, elements: int = 0) -> str:
    """Inline a matplotlib figure: SVG when light enough, else a PNG data URI."""
    buffer = io.BytesIO()
    if elements <= SVG_ELEMENT_LIMIT:
        fig.savefig(buffer, format="svg", bbox_inches="tight")
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
table{border-collapse:collapse;font-size:12.5px;width:100%}
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
    if value is None or (isinstance(value, float) and pd.isna(value)):
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

def _top_groups(findings: pd.DataFrame) -> list[str]:
    if findings.empty:
        return []
    ranked = findings.sort_values(["rebalances", "failures", "group"], ascending=[False, False, True])
    return [str(g) for g in ranked["group"].head(TOP_GROUPS)]


def logs_figures(spark: Any, rebalances: Any, member_events: Any, storms: Any, findings: pd.DataFrame) -> list[Figure]:
    """The figures of the logs report. ``rebalances``, ``member_events`` and ``storms`` are Spark
    DataFrames; only the top groups' rows (bounded) come to the driver."""
    from pyspark.sql import functions as F

    top = _top_groups(findings)
    in_top = F.col("group").isin(top) if top else F.lit(False)
    per_group_cap = 3000
    ranked = rebalances.where(in_top).select(
        "group", "generation", "start", "end", "duration_ms", "members", "outcome", "reason",
        F.size("failed_members").alias("failed"), F.size("left_members").alias("left"), "start_ms")
    from pyspark.sql import Window

    latest = Window.partitionBy("group").orderBy(F.col("start_ms").desc())
    timeline = (ranked.withColumn("n", F.row_number().over(latest)).where(F.col("n") <= per_group_cap)
                .drop("n", "start_ms").toPandas())
    quantiles = rebalances.where(in_top & F.col("duration_ms").isNotNull()).groupBy("group").agg(
        F.count(F.lit(1)).alias("rebalances"),
        *(F.percentile_approx("duration_ms", q).alias(f"p{int(q * 100)}") for q in (0.05, 0.25, 0.5, 0.75, 0.95)),
        F.max("duration_ms").alias("max"),
        F.min("duration_ms").alias("min"),
    ).toPandas()
    departures = member_events.where(in_top).select("group", "member", "time", "kind", "client").limit(20000).toPandas()
    storm_rows = storms.where(in_top).toPandas()
    return [
        rebalance_timeline_figure(timeline, departures, storm_rows, top),
        duration_figure(quantiles, top),
        storms_figure(findings, storm_rows),
    ]


def rebalance_timeline_figure(timeline: pd.DataFrame, departures: pd.DataFrame, storms: pd.DataFrame,
                              groups: list[str]) -> Figure:
    caption = ("Each bar is one rebalance, from \"Preparing to rebalance\" until the group was stable again "
               "(grey: ended empty, hatched: still open at the end of the log); red crosses are members removed "
               "by session timeout, orange ticks members that left; shaded spans are storms. "
               f"Top {TOP_GROUPS} groups by rebalances.")
    if timeline.empty:
        return Figure("rebalance_timeline", "Rebalances over time", caption, empty_figure("no rebalances found"),
                      timeline)
    order = [g for g in groups if g in set(timeline["group"])][::-1]
    height = max(1.8, 0.55 * len(order) + 1.0)
    fig, ax = plt.subplots(figsize=(11, height))
    start_all = min(timeline["start"].min(), departures["time"].min() if not departures.empty else timeline["start"].min())
    end_candidates = [timeline["start"].max(), timeline["end"].max()]
    if not departures.empty:
        end_candidates.append(departures["time"].max())
    end_all = max(t for t in end_candidates if pd.notna(t))
    span = max((end_all - start_all).total_seconds(), 1.0)
    min_width = span / 400 / 86400  # days, so that a short rebalance stays visible
    elements = 0
    for y, group in enumerate(order):
        rows = timeline[timeline["group"] == group]
        for outcome, colour, hatch in (("stable", "#2f6fde", None), ("empty", "#9aa5b1", None),
                                       ("open", "#2f6fde", "////")):
            part = rows[rows["outcome"] == outcome]
            if part.empty:
                continue
            starts = mdates.date2num(part["start"].dt.tz_localize(None))
            ends = part["end"].fillna(end_all)
            widths = mdates.date2num(ends.dt.tz_localize(None)) - starts
            bars = [(s, max(w, min_width)) for s, w in zip(starts, widths, strict=True)]
            ax.broken_barh(bars, (y - 0.3, 0.6), facecolors=colour, hatch=hatch,
                           edgecolor="#1d2733" if hatch else "none", linewidth=0.3)
            elements += len(bars)
        if not storms.empty:
            for storm in storms[storms["group"] == group].itertuples():
                ax.axvspan(mdates.date2num(storm.start.tz_localize(None)), mdates.date2num(storm.end.tz_localize(None)),
                           ymin=(y + 0.05) / len(order), ymax=(y + 0.95) / len(order), color="#f4c542", alpha=0.35,
                           lw=0)
        if not departures.empty:
            mine = departures[departures["group"] == group]
            failed = mine[mine["kind"] == "failed"]
            left = mine[mine["kind"] == "left"]
            ax.plot(failed["time"].dt.tz_localize(None), [y + 0.38] * len(failed), "x", color="#d62728", ms=6, mew=1.6)
            ax.plot(left["time"].dt.tz_localize(None), [y + 0.38] * len(left), "|", color="#ff7f0e", ms=8, mew=1.6)
            elements += len(mine)
    ax.set_yticks(range(len(order)), order)
    ax.set_ylim(-0.6, len(order) - 0.3)
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel("log time (as written by the broker)")
    ax.grid(axis="x", color="#e9ecef")
    data = timeline.sort_values(["group", "start"])
    return Figure("rebalance_timeline", "Rebalances over time", caption, render(fig, elements), data)


def duration_figure(quantiles: pd.DataFrame, groups: list[str]) -> Figure:
    caption = ("How long each group's rebalances took (box: quartiles, whiskers: 5th-95th percentile, dot: the "
               "longest). Long rebalances mean members slow to rejoin, up to the rebalance timeout "
               "(max.poll.interval.ms).")
    if quantiles.empty:
        return Figure("rebalance_durations", "Rebalance durations", caption,
                      empty_figure("no completed rebalances"), quantiles)
    order = [g for g in groups if g in set(quantiles["group"])][::-1]
    stats = []
    for group in order:
        row = quantiles[quantiles["group"] == group].iloc[0]
        stats.append({"label": f"{group} ({int(row['rebalances'])})", "whislo": row["p5"], "q1": row["p25"],
                      "med": row["p50"], "q3": row["p75"], "whishi": row["p95"], "fliers": [row["max"]]})
    fig, ax = plt.subplots(figsize=(11, max(1.8, 0.5 * len(order) + 1.0)))
    ax.bxp(stats, vert=False, showfliers=True, patch_artist=True,
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
    in_storms = storms.groupBy("group")["rebalances"].sum() if not storms.empty else pd.Series(dtype="int64")
    data = pd.DataFrame({
        "group": top,
        "rebalances": [int(findings.loc[findings["group"] == g, "rebalances"].iloc[0]) for g in top],
        "member_failures": [int(findings.loc[findings["group"] == g, "failures"].iloc[0]) for g in top],
        "rebalances_in_storms": [int(in_storms.get(g, 0)) for g in top],
        "storms": [int(findings.loc[findings["group"] == g, "storms"].iloc[0]) for g in top],
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


def render_logs_report(summary: dict, figures: list[Figure], advice_items: list, findings: pd.DataFrame,
                       storms: Any) -> str:
    if hasattr(storms, "toPandas"):
        storms = storms.limit(200).toPandas()
    sections = [cards([
        ("lines read", summary["lines_read"]),
        ("coordinator lines parsed", summary["lines_matched"]),
        ("lines skipped", summary["lines_skipped"]),
        ("groups", summary["groups"]),
        ("rebalances", summary["rebalances"]),
        ("member failures", summary["member_failures"]),
        ("storms", summary["storms"]),
    ])]
    if advice_items:
        items = "".join(
            f'<li><span class="{a.severity}">{html.escape(a.group)}: {html.escape(a.finding)}.</span> '
            f"{html.escape(a.advice)}</li>" for a in advice_items[:60])
        sections.append(section("What the log shows, and what to do", f'<ul class="advice">{items}</ul>'))
    else:
        sections.append(section("What the log shows, and what to do",
                                '<p class="caption">No failures, storms or slow rebalances found.</p>'))
    sections.extend(figure_section(f) for f in figures)
    if not storms.empty:
        sections.append(section("Storms", table(storms)))
    if not findings.empty:
        columns = ["group", "rebalances", "median_duration_ms", "max_duration_ms", "max_generation", "failures",
                   "leaves", "storms", "empty_periods"]
        ranked = findings.sort_values(["rebalances", "group"], ascending=[False, True])[columns]
        sections.append(section("Groups", table(ranked)))
    subtitle = f"{summary.get('files', 0)} file(s); {generated_note()}"
    return page("Kafka rebalances in broker logs", subtitle, sections)
