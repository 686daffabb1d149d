"""The logs report's SVG row charts: axes with readable ticks, marks of one kind in one path
whatever their number, text escaped."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.pipeline.report import svg
from kafka_rebalance.pipeline.report.logs import rebalance_timeline_figure


@given(low=st.floats(0, 2e9), span=st.floats(0.5, 5e8))
def test_time_ticks_are_round_times_inside_the_axis(low, span):
    axis = svg.Axis(low, low + span, 100, 900, time=True)
    ticks = axis.ticks()
    assert 1 <= len(ticks) <= 10 or span < 1
    assert all(low - 1e-6 <= value <= low + span + 1e-6 for value, _ in ticks)
    assert all(100 - 1e-6 <= axis.x(value) <= 900 + 1e-6 for value, _ in ticks)
    steps = {round(b[0] - a[0], 6) for a, b in zip(ticks, ticks[1:], strict=False)}
    assert len(steps) <= 1  # evenly spaced
    for value, label in ticks:  # the label is the tick's own time (UTC)
        moment = datetime.fromtimestamp(value, UTC)
        assert label in (moment.strftime("%H:%M:%S"), moment.strftime("%H:%M"), moment.strftime("%Y-%m-%d"))


@given(high=st.integers(1, 10**7))
def test_count_ticks_are_whole_numbers(high):
    ticks = svg.Axis(0, high * 1.05, 0, 800, counts=True).ticks()
    assert ticks and all(float(value).is_integer() for value, _ in ticks)
    assert len(ticks) <= 10


def test_log_ticks_are_powers_of_ten():
    ticks = svg.Axis(5, 90_000, 0, 800, log=True).ticks()
    assert [value for value, _ in ticks] == [10.0, 100.0, 1000.0, 10000.0]
    assert math.isclose(svg.Axis(5, 90_000, 0, 800, log=True).x(5), 0.0, abs_tol=1e-9)


NOTHING = pa.table({})


def test_ten_thousand_rebalances_are_one_path_per_outcome():
    starts = [datetime(2024, 5, 1) + timedelta(minutes=m) for m in range(10_000)]
    timeline = pa.table({"group": ["g"] * 10_000, "start": pa.array(starts, pa.timestamp("ms")),
                         "end": pa.array([s + timedelta(seconds=20) for s in starts], pa.timestamp("ms")),
                         "outcome": ["stable", "open"] * 5_000})
    image = rebalance_timeline_figure(timeline, NOTHING, NOTHING, ["g"]).image
    assert image.startswith("<svg") and image.count("<path") <= 6  # grid, two outcomes, frame
    assert len(re.findall(r"M[\d.]+ [\d.]+h", image)) == 10_000
    assert len(image) < 400_000


def test_names_are_escaped():
    timeline = pa.table({"group": ["<b>&\"x"], "start": pa.array([datetime(2024, 5, 1)], pa.timestamp("ms")),
                         "end": pa.array([datetime(2024, 5, 1, 0, 0, 30)], pa.timestamp("ms")), "outcome": ["stable"]})
    image = rebalance_timeline_figure(timeline, NOTHING, NOTHING, ["<b>&\"x"]).image
    assert "<b>" not in image and "&lt;b&gt;&amp;&quot;x" in image


def test_simultaneous_marks_are_one_mark_that_says_how_many():
    from kafka_rebalance.pipeline.report.svg import Axis, Panel

    panel = Panel(["a", "b"], Axis(0.0, 100.0, 100.0, 900.0), 0.0)
    drawn = panel.marks([(0, 50.0)] * 12 + [(1, 50.0), (0, 10.0)], "x", "#000000")
    assert drawn == 3
    svg = "".join(panel.parts)
    assert svg.count("<path") == 1 and svg.count("<text") == 1 and ">12</text>" in svg
