"""The logs timeline: groups active months apart each get their own time axis."""

from __future__ import annotations

import pandas as pd

from kafka_rebalance.pipeline.report.logs import rebalance_timeline_figure


def _timeline(starts):
    rows = [{"group": g, "start": pd.Timestamp(t, tz="UTC"), "end": pd.Timestamp(t, tz="UTC") + pd.Timedelta(seconds=30),
             "outcome": "stable"} for g, t in starts]
    return pd.DataFrame(rows)


def _axes(figure) -> int:
    return figure.image.count('<g id="axes_')


def test_groups_months_apart_get_their_own_axes():
    far = _timeline([("a", "2019-07-17 15:20:00"), ("b", "2020-01-06 12:11:00")])
    assert _axes(rebalance_timeline_figure(far, pd.DataFrame(), pd.DataFrame(), ["a", "b"])) == 2


def test_groups_active_together_share_one_axis():
    near = _timeline([("a", "2024-05-01 10:00:00"), ("b", "2024-05-01 10:20:00"), ("a", "2024-05-01 11:00:00")])
    assert _axes(rebalance_timeline_figure(near, pd.DataFrame(), pd.DataFrame(), ["a", "b"])) == 1
