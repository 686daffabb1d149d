"""The soak job on the shared local Spark session: tables, summary, violations with shrunk
schedules, and what a task computes."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest
import yaml

from kafka_rebalance.pipeline import soak
from kafka_rebalance.sim import load_scenario
from kafka_rebalance.sim.invariants import Violation

pytestmark = pytest.mark.spark


def test_run_soak_writes_schedules_violations_and_summary(spark, tmp_path):
    out = tmp_path / "soak"
    result = soak.run_soak(spark, 4, str(out), seed=11, tasks=2, progress=False)
    schedules = pd.read_parquet(out / soak.SCHEDULES).sort_values("schedule_index")
    assert list(schedules["schedule_index"]) == [0, 1, 2, 3]
    summary = json.loads((out / soak.SUMMARY).read_text())
    assert summary["schedules"] == result.schedules == 4
    assert summary["failing_schedules"] == result.failing == int((schedules["invariants"].map(len) > 0).sum())
    assert summary["joins"] == int(schedules["joins"].sum()) > 0
    assert (out / soak.VIOLATIONS).is_dir()
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    again = soak.run_soak(spark, 4, str(out), seed=11, tasks=3, progress=False)
    assert pd.read_parquet(out / soak.SCHEDULES).sort_values("schedule_index")["schedule_seed"].tolist() == \
        schedules["schedule_seed"].tolist()
    assert again.failing == result.failing


def test_a_failing_schedule_comes_with_a_shrunk_one(monkeypatch):
    def crash_with_failover_fails(schedule):
        events = schedule["events"]
        if any("crash" in e for e in events) and any("coordinator_failover" in e for e in events):
            return [Violation("converges", "made up for the test")]
        return []

    monkeypatch.setattr("kafka_rebalance.sim.invariants.check_schedule", crash_with_failover_fails)
    index = next(i for i in range(500) if soak.schedule_row(i, 5, 0)["invariants"])
    row = soak.schedule_row(index, 5, 200)
    assert row["invariants"] == ["converges"] and row["details"] == ["made up for the test"]
    shrunk = yaml.safe_load(row["shrunk_yaml"])
    load_scenario(shrunk)
    assert row["shrunk_events"] == len(shrunk["events"]) == 2
    assert load_scenario(yaml.safe_load(row["schedule_yaml"]))


def test_violations_explode_one_row_per_broken_invariant():
    columns = soak.SCHEDULE_SCHEMA.names
    base = {name: None for name in columns}
    rows = [
        {**base, "schedule_index": 1, "schedule_seed": 11, "group_protocol": "classic", "rebalance_protocol": "EAGER", "invariants": ["single-owner", "converges"],
         "details": ["d2", "d1"], "schedule_yaml": "s", "shrunk_yaml": "m", "shrunk_events": 2, "shrink_tries": 9,
         "cpu_ms": 3.0, "simulated_ms": 100, "joins": 2},
        {**base, "schedule_index": 0, "schedule_seed": 10, "group_protocol": "classic", "rebalance_protocol": "COOPERATIVE", "invariants": [], "details": [],
         "cpu_ms": 5.0, "simulated_ms": 50, "joins": 1},
    ]
    table = pa.Table.from_pylist(rows, schema=soak.SCHEDULE_SCHEMA)
    violations = soak.violations_of(table).to_pylist()
    assert [(v["schedule_index"], v["invariant"], v["detail"], v["shrunk_yaml"]) for v in violations] == [
        (1, "converges", "d1", "m"), (1, "single-owner", "d2", "m")]
    facts = soak.SliceFacts.of(table, soak.violations_of(table), told=1)
    assert (facts.schedules, facts.failing_schedules, facts.violations, facts.cooperative_schedules) == (2, 1, 2, 1)
    assert facts.first_failures == [{"schedule_index": 1, "invariant": "converges", "detail": "d1", "shrunk_events": 2}]
    merged = facts.merge(facts, told=3).totals()
    assert (merged["schedules"], merged["violations"], merged["cpu_ms"], merged["max_cpu_ms"], merged["joins"]) == \
        (4, 4, 16.0, 5.0, 6)


def test_slices_are_contiguous_and_cover_every_schedule_once():
    assert soak.slices(10, 7, 3) == [range(10, 12), range(12, 14), range(14, 17)]
    assert soak.slices(0, 2, 8) == [range(0, 1), range(1, 2)]
