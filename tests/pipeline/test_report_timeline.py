"""The logs timeline: groups active months apart each get their own time axis."""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow as pa

from kafka_rebalance.pipeline.report.logs import rebalance_timeline_figure

NOTHING = pa.table({})


def _timeline(starts):
    times = [datetime.fromisoformat(t) for _, t in starts]
    return pa.table({"group": [g for g, _ in starts], "start": pa.array(times, pa.timestamp("ms")),
                     "end": pa.array([t + timedelta(seconds=30) for t in times], pa.timestamp("ms")),
                     "outcome": ["stable"] * len(starts)})


def _axes(figure) -> int:
    return figure.image.count('<g id="axes_')


def test_groups_months_apart_get_their_own_axes():
    far = _timeline([("a", "2019-07-17 15:20:00"), ("b", "2020-01-06 12:11:00")])
    assert _axes(rebalance_timeline_figure(far, NOTHING, NOTHING, ["a", "b"])) == 2


def test_groups_active_together_share_one_axis():
    near = _timeline([("a", "2024-05-01 10:00:00"), ("b", "2024-05-01 10:20:00"), ("a", "2024-05-01 11:00:00")])
    assert _axes(rebalance_timeline_figure(near, NOTHING, NOTHING, ["a", "b"])) == 1
