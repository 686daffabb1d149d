"""Row charts drawn straight as SVG: labelled rows against one horizontal axis (log time, a
count, milliseconds), for the logs report's figures.

Importing and running matplotlib took longer than answering a 30-line paste (about 1 CPU-s of
import and 0.3 s per report, against the 2 s a paste may take end to end), and these figures
need none of its generality: bars, boxes, ticks and marks on rows. Marks of one kind are one
``<path>`` whatever their number, so a timeline of tens of thousands of rebalances stays a light
vector image (no PNG fallback needed). Text is drawn in the page's own font (``svg.fonttype``
none, as the matplotlib figures were); its width is estimated from the character count.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

WIDTH = 1000.0
ROW_HEIGHT = 26.0
FONT_SIZE = 11.0
CHAR_WIDTH = 6.4  # about, for FONT_SIZE in a sans-serif font
LABEL_CHARS = 48
AXIS_HEIGHT = 34.0
TITLE_HEIGHT = 18.0
RIGHT_MARGIN = 24.0
GRID_COLOUR = "#e9ecef"
TEXT_COLOUR = "#1d2733"

# Time-axis steps (seconds) and how their ticks are written.
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
               2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 182 * 86400, 365 * 86400)
_MAX_TICKS = 9


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def label_width(labels: Iterable[str]) -> float:
    """Room for the row labels on the left (they are cut at ``LABEL_CHARS``)."""
    longest = max((min(len(label), LABEL_CHARS) for label in labels), default=0)
    return max(longest * CHAR_WIDTH + 14.0, 40.0)


def shown_label(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "\u2026"


@dataclass
class Axis:
    """A horizontal axis from ``low`` to ``high`` onto pixels ``left``..``right``: linear, log
    (``log``: values > 0) or time (``time``: epoch seconds, ticks at round times, UTC)."""

    low: float
    high: float
    left: float
    right: float
    log: bool = False
    time: bool = False
    counts: bool = False  # ticks at whole numbers only

    def __post_init__(self) -> None:
        if self.log:
            self.low, self.high = math.log10(max(self.low, 1e-9)), math.log10(max(self.high, 1e-9))
        if self.high <= self.low:
            self.high = self.low + 1.0

    def x(self, value: float) -> float:
        if self.log:
            value = math.log10(max(value, 1e-9))
        return self.left + (value - self.low) / (self.high - self.low) * (self.right - self.left)

    def scale(self) -> float:
        """Pixels per unit (linear and time axes)."""
        return (self.right - self.left) / (self.high - self.low)

    def ticks(self) -> list[tuple[float, str]]:
        """(value, label) of each tick inside the axis."""
        if self.log:
            return [(10.0 ** p, _number(10.0 ** p)) for p in range(math.ceil(self.low), math.floor(self.high) + 1)]
        span = self.high - self.low
        if self.time:
            step = float(next((s for s in _TIME_STEPS if span / s <= _MAX_TICKS), _TIME_STEPS[-1] * math.ceil(
                span / _TIME_STEPS[-1] / _MAX_TICKS)))
            pattern = "%H:%M:%S" if step < 60 else "%H:%M" if step < 86400 else "%Y-%m-%d"
            first = math.ceil(self.low / step) * step
            count = int((self.high - first) // step) + 1
            return [(first + i * step, datetime.fromtimestamp(first + i * step, UTC).strftime(pattern))
                    for i in range(count)]
        magnitude = 10.0 ** math.floor(math.log10(span / _MAX_TICKS)) if span > 0 else 1.0
        step = next(m * magnitude for m in (1, 2, 5, 10) if span / (m * magnitude) <= _MAX_TICKS)
        if self.counts:
            step = max(step, 1.0)
        first = math.ceil(self.low / step) * step
        count = int((self.high - first) // step + 1e-9) + 1
        return [(first + i * step, _number(first + i * step) if step < 1 else f"{first + i * step:,.0f}")
                for i in range(count)]

    def date_note(self) -> str:
        """A time axis's first day, written under its left end when its ticks show times only."""
        if not self.time or self.high - self.low >= 86400 * 2:
            return ""
        return datetime.fromtimestamp(self.low, UTC).strftime("%Y-%m-%d")


@dataclass
class Panel:
    """Rows (``labels[y]`` on row ``y``, the first at the bottom) against one axis."""

    labels: Sequence[str]
    axis: Axis
    top: float
    parts: list[str] = field(default_factory=list)

    @property
    def height(self) -> float:
        return ROW_HEIGHT * max(len(self.labels), 1)

    def y(self, row: float) -> float:
        """The pixel height of the middle of row ``row`` (rows count upwards from the bottom)."""
        return self.top + self.height - (row + 0.5) * ROW_HEIGHT

    def bars(self, rows: Iterable[tuple[float, float, float]], thickness: float, fill: str, *,
             min_width: float = 0.0, extra: str = "") -> int:
        """Boxes ``(row, start, end)`` (axis values; row may be fractional: its middle) as one path;
        each at least ``min_width`` pixels wide, cut at the axis's ends. The count drawn."""
        x, y = self.axis.x, self.y
        half = thickness * ROW_HEIGHT / 2
        pieces = []
        low, high = self.axis.left, self.axis.right
        for row, start, end in rows:
            left = min(max(x(start), low), high)
            width = max(min(x(end), high) - left, min_width)
            pieces.append(f"M{left:.1f} {y(row) - half:.1f}h{width:.1f}v{2 * half:.1f}h{-width:.1f}z")
        if pieces:
            self.parts.append(f'<path d="{"".join(pieces)}" fill="{fill}"{extra}/>')
        return len(pieces)

    def marks(self, points: Iterable[tuple[float, float]], shape: str, colour: str, size: float = 4.0,
              width: float = 1.5) -> int:
        """``points`` (row, value) as one path of ``shape``: "x", "+", "|" (stroked) or "o" (filled).
        Points that fall on the same pixel (12 members failing at once) are one mark with their
        count written beside it. The count of marks drawn."""
        x, y = self.axis.x, self.y
        s = size
        draw = {"x": f"m{-s:g} {-s:g}l{2 * s:g} {2 * s:g}m0 {-2 * s:g}l{-2 * s:g} {2 * s:g}",
                "+": f"m{-s:g} 0h{2 * s:g}m{-s:g} {-s:g}v{2 * s:g}",
                "|": f"m0 {-s:g}v{2 * s:g}",
                "o": f"m{-s:g} 0a{s:g} {s:g} 0 1 0 {2 * s:g} 0a{s:g} {s:g} 0 1 0 {-2 * s:g} 0"}[shape]
        at: dict[tuple[float, float], int] = {}
        for row, value in points:
            where = (round(x(value), 1), round(y(row), 1))
            at[where] = at.get(where, 0) + 1
        pieces = [f"M{px:.1f} {py:.1f}{draw}" for px, py in at]
        if pieces:
            paint = f'fill="{colour}"' if shape == "o" else f'fill="none" stroke="{colour}" stroke-width="{width:g}"'
            self.parts.append(f'<path d="{"".join(pieces)}" {paint}/>')
            self.parts.extend(f'<text x="{px + s + 2:.1f}" y="{py - s:.1f}" font-size="{FONT_SIZE - 2:g}" '
                              f'fill="{colour}">{count}</text>' for (px, py), count in at.items() if count > 1)
        return len(pieces)

    def lines(self, segments: Iterable[tuple[float, float, float, float]], colour: str, width: float = 1.0) -> None:
        """Straight lines ``(row, start, row, end)`` in axis values, as one path."""
        x, y = self.axis.x, self.y
        pieces = [f"M{x(a):.1f} {y(ra):.1f}L{x(b):.1f} {y(rb):.1f}" for ra, a, rb, b in segments]
        if pieces:
            self.parts.append(f'<path d="{"".join(pieces)}" fill="none" stroke="{colour}" stroke-width="{width:g}"/>')

    def render(self, index: int, xlabel: str = "") -> str:
        axis, bottom = self.axis, self.top + self.height
        grid, text = [], []
        for value, label in axis.ticks():
            px = axis.x(value)
            grid.append(f"M{px:.1f} {self.top:.1f}V{bottom:.1f}")
            text.append(f'<text x="{px:.1f}" y="{bottom + 14:.1f}" text-anchor="middle">{html.escape(label)}</text>')
        note = axis.date_note()
        if note:
            text.append(f'<text x="{axis.left:.1f}" y="{bottom + 27:.1f}">{note}</text>')
        if xlabel:
            text.append(f'<text x="{(axis.left + axis.right) / 2:.1f}" y="{bottom + AXIS_HEIGHT - 2:.1f}" '
                        f'text-anchor="middle">{html.escape(xlabel)}</text>')
        for row, label in enumerate(self.labels):
            text.append(f'<text x="{axis.left - 6:.1f}" y="{self.y(row) + 4:.1f}" text-anchor="end">'
                        f"{html.escape(shown_label(label))}</text>")
        frame = f"M{axis.left:.1f} {self.top:.1f}V{bottom:.1f}H{axis.right:.1f}"
        return (f'<g id="axes_{index}"><path d="{"".join(grid)}" stroke="{GRID_COLOUR}"/>{"".join(self.parts)}'
                f'<path d="{frame}" fill="none" stroke="{TEXT_COLOUR}" stroke-width="0.8"/>{"".join(text)}</g>')


def figure(panels: Sequence[Panel], xlabel: str, legend: Sequence[tuple[str, str]] = (), defs: str = "") -> str:
    """The ``<svg>`` of ``panels`` stacked top to bottom (the last one carries ``xlabel``), with
    a legend of (colour, words) under it."""
    bodies = [panel.render(i + 1, xlabel if i == len(panels) - 1 else "") for i, panel in enumerate(panels)]
    height = (panels[-1].top + panels[-1].height + AXIS_HEIGHT + 6) if panels else 40.0
    if legend:
        x = panels[-1].axis.left if panels else 10.0
        items = []
        for colour, words in legend:
            items.append(f'<rect x="{x:.1f}" y="{height:.1f}" width="12" height="10" fill="{colour}"/>'
                         f'<text x="{x + 16:.1f}" y="{height + 9:.1f}">{html.escape(words)}</text>')
            x += 16 + len(words) * CHAR_WIDTH + 18
        bodies.append("".join(items))
        height += 18
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH:g} {height:.0f}" width="{WIDTH:g}" '
            f'height="{height:.0f}" font-size="{FONT_SIZE:g}" font-family="sans-serif" fill="{TEXT_COLOUR}">'
            f"{defs}{''.join(bodies)}</svg>")


def empty(message: str) -> str:
    """A figure with nothing to draw: the reason, in its place."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH:g} 40" width="{WIDTH:g}" height="40" '
            f'font-size="{FONT_SIZE:g}" font-family="sans-serif"><text x="{WIDTH / 2:g}" y="24" '
            f'text-anchor="middle" fill="#666">{html.escape(message)}</text></svg>')


def hatch_pattern(name: str, colour: str) -> str:
    """A ``<defs>`` with a diagonal hatch ``url(#name)`` fills with (bars of a kind not finished)."""
    return (f'<defs><pattern id="{name}" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/>'
            f'<path d="M0 0V6" stroke="{colour}" stroke-width="2.5"/></pattern></defs>')
