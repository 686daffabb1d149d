"""What every HTML report shares: the page and its sections, tables, cards, and figures (drawn
from small tables, inlined as SVG or PNG: no script, no network), with the data of every figure
written beside the report as ``figures/NAME.csv``. The lab's and soak's figures are drawn by
matplotlib (``pyplot``), imported only by the reports that draw with it, from pandas frames; the
logs report draws its own SVG (``report.svg``) from Arrow tables, and answers a paste without
matplotlib or pandas: nothing here imports either."""

from __future__ import annotations

import base64
import html
import io
import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from types import ModuleType

    import pandas as pd
    from matplotlib.figure import Figure as MplFigure

# Above this many drawn elements a vector figure gets heavy for a browser: use PNG.
SVG_ELEMENT_LIMIT = 4000
# Okabe-Ito (and one of Tol's muted colours): told apart with the common colour-vision
# deficiencies; each strategy has its own line style and marker as well, so no two are told
# apart by colour alone.
STRATEGY_COLOURS = {
    "range": "#D55E00",  # vermillion
    "eager": "#882255",  # Tol's wine: the lab's eager protocol (range), told apart from a range sweep
    "roundrobin": "#E69F00",  # orange
    "sticky": "#56B4E9",  # sky blue
    "cooperative-sticky": "#0072B2",  # blue
    "consumer-uniform": "#009E73",  # bluish green
    "consumer-range": "#CC79A7",  # reddish purple
    "load-aware": "#000000",
}
FALLBACK_COLOURS = ["#999999", "#44AA99", "#332288", "#999933", "#F0E442"]
STRATEGY_STYLES = {
    "range": ("-", "o"), "eager": ("-", "o"), "roundrobin": (":", "v"), "sticky": ("-.", "D"),
    "cooperative-sticky": ("--", "s"), "consumer-uniform": (":", "^"), "consumer-range": ("-.", "P"),
    "load-aware": ("-", "x"),
}


@cache
def pyplot() -> ModuleType:
    """matplotlib's pyplot, drawing off-screen in the reports' style (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches  # noqa: F401  (the figures' patches, registered before drawing)
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "font.size": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titlesize": 11,
        "axes.titleweight": "bold",
        "svg.fonttype": "none",
    })
    return plt


class FigureData(Protocol):
    """A figure's data as written beside the report: a pandas frame (the lab's and soak's
    figures) or the logs report's ``report.logs.Columns``."""

    def to_csv(self, *, index: bool) -> str: ...


@dataclass
class Figure:
    name: str
    title: str
    caption: str
    image: str  # an <svg> element or an <img> with a data: URI
    data: FigureData = field(repr=False)


def strategy_colour(strategy: str, index: int = 0) -> str:
    return STRATEGY_COLOURS.get(strategy, FALLBACK_COLOURS[index % len(FALLBACK_COLOURS)])


def strategy_style(strategy: str) -> tuple[str, str]:
    """A strategy's line style and marker (matplotlib's names)."""
    return STRATEGY_STYLES.get(strategy, ("-", "."))


def render(fig: MplFigure, elements: int = 0) -> str:
    """Inline a matplotlib figure: SVG when light enough, else a PNG data URI."""
    plt = pyplot()
    buffer = io.BytesIO()
    if elements <= SVG_ELEMENT_LIMIT:
        # A group or member named with a control character (a damaged line) has no glyph: drawn
        # as a box, without a warning on the terminal.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
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
    fig, ax = pyplot().subplots(figsize=(8, 1.2))
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
td{overflow-wrap:anywhere} th{overflow-wrap:normal;hyphens:none}
th,td{border-bottom:1px solid #e9ecef;padding:4px 8px;text-align:left} th{background:#f0f2f5}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
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
    inner = "".join(f'<div class="card"><b>{html.escape(format_value(v))}</b><span>{html.escape(k)}</span></div>'
                    for k, v in items)
    return f'<div class="cards">{inner}</div>'


def missing(value: Any) -> bool:
    """None, a float's NaN, or a missing time (pandas' NaT, a datetime unequal to itself)."""
    if isinstance(value, float):
        return math.isnan(value)
    return value is None or (isinstance(value, datetime) and value != value)


def format_value(value: Any) -> str:
    if missing(value):
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, datetime):  # pandas' Timestamp is one
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


# Column titles in words where a table's field name does not read as one (the rest lose their
# underscores: ``client_library`` -> "client library", ``duration_ms`` -> "duration ms").
COLUMN_TITLES = {
    "open_rebalances": "never completed",
    "max_generation": "highest generation",
    "median_duration_ms": "median length ms",
    "max_duration_ms": "longest ms",
    "poll_timeout_leaves": "poll-timeout leaves",
    "empty_periods": "times empty",
    "top_client": "most failing client",
    "top_client_failures": "its failures",
    "stop_the_world_partition_ms": "stop-the-world partition-ms",
    "max_stop_the_world_partition_ms": "worst stop-the-world partition-ms",
    "max_partition_unowned_ms": "longest unowned ms",
    "min_partitions_moved": "fewest moves possible",
    "final_balance": "final spread",
    "max_final_balance": "worst final spread",
    "records_processed_twice": "records twice",
    "records_lost": "records lost",
    "client_library": "client library",
}


def column_title(name: str) -> str:
    """A column's title in words: ``COLUMN_TITLES``, else the name without underscores."""
    return COLUMN_TITLES.get(name) or name.replace("_", " ")


def table(frame: pd.DataFrame, limit: int = 40) -> str:
    """A pandas frame's first ``limit`` rows as an HTML table (``rows_table``)."""
    if frame is None or frame.empty:
        return '<p class="caption">none</p>'
    return rows_table([str(c) for c in frame.columns], frame.head(limit).itertuples(index=False), len(frame), limit)


def rows_table(columns: Sequence[str], records: Iterable[Sequence[Any]], count: int, limit: int = 40) -> str:
    """The first ``limit`` of ``count`` rows (``records``, one value per column; more are not
    read) as an HTML table: numbers right-aligned, missing values as "-"."""
    if not count or not columns:
        return '<p class="caption">none</p>'
    head = "".join(f"<th>{html.escape(column_title(c))}</th>" for c in columns)
    rows: list[str] = []
    for record in records:
        if len(rows) == limit:
            break
        cells = []
        for value in record:
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{html.escape(format_value(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = f'<p class="caption">{count - limit} more rows in the table files</p>' if count > limit else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


def generated_note() -> str:
    return f"generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by kafka-rebalance"


