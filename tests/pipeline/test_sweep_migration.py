"""Sweeps over migration scenarios: a grown group's clones get their own upgrade/downgrade events."""

from __future__ import annotations

from kafka_rebalance.pipeline.sweep import apply_parameters
from kafka_rebalance.sim import load_scenario


def test_group_size_clones_upgrade_and_downgrade_events_for_the_new_consumers() -> None:
    base = {"name": "m", "group": "g", "group_protocol": "classic", "topics": {"t": 4},
            "consumers": [{"id": "c1", "subscribe": ["t"]}],
            "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 1000, "upgrade": "c1", "after_ms": 100},
                       {"at_ms": 5000, "downgrade": "c1", "after_ms": 100}]}
    grown = apply_parameters(base, {"group_size": 3})
    for name in ("c2", "c3"):
        assert [e["at_ms"] for e in grown["events"] if name in (e.get("upgrade"), e.get("downgrade"))] == [1000, 5000]
    load_scenario(grown)  # one upgrade and one downgrade per consumer: valid
