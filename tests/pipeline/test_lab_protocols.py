"""The lab compares eager, cooperative-sticky and KIP-848 on the same churn and the report
answers "should we migrate?" with numbers."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.pipeline.sweep import parse_sweep

pytestmark = pytest.mark.spark

PROTOCOLS = ["eager", "cooperative-sticky", "consumer-uniform", "consumer-range"]


def churn_sweep(*churns: str) -> dict:
    return {"name": "protocols", "seeds": [1], "runs": [
        {"churn": churn, "service": {"members": 6, "partitions": 12}, "grid": {"protocol": PROTOCOLS}}
        for churn in churns]}


def test_churn_runs_expand_per_protocol_on_the_same_events() -> None:
    sweep = parse_sweep(churn_sweep("rolling-restart"))
    assert [r.params["protocol"] for r in sweep.runs] == PROTOCOLS
    events = {tuple(sorted((e["at_ms"], str(e)) for e in r.scenario["events"])) for r in sweep.runs}
    assert len(events) == 1  # the same churn for every protocol
    kinds = {(r.scenario["group_protocol"], r.scenario.get("assignor")) for r in sweep.runs}
    assert ("consumer", "uniform") in kinds and ("consumer", "range") in kinds


@pytest.mark.parametrize(("spec", "field"), [
    ({"churn": "meteor"}, "runs[0].churn"),
    ({"churn": "crashes", "service": {"nodes": 3}}, "runs[0].service"),
    ({"churn": "crashes", "grid": {"protocol": ["kip999"]}}, "runs[0].grid.protocol"),
])
def test_bad_churn_runs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InvalidInput) as error:
        parse_sweep({"name": "x", "runs": [spec]})
    assert error.value.field == field


def test_report_answers_should_we_migrate(spark, tmp_path) -> None:
    from kafka_rebalance.pipeline.lab import run_lab

    sweep = churn_sweep("rolling-restart", "crashes", "migration")
    sweep["runs"].append({"churn": "rolling-restart", "service": {"members": 6, "partitions": 12},
                          "grid": {"protocol": ["consumer-uniform"], "consumer_heartbeat_interval_ms": [1000]}})
    result = run_lab(spark, parse_sweep(sweep), str(tmp_path / "out"), progress=False)
    assert result.failed == 0
    sims = pd.read_parquet(tmp_path / "out" / "simulations")
    assert set(sims["strategy"]) == set(PROTOCOLS)
    kip848 = sims[sims["strategy"].str.startswith("consumer-")]
    assert (kip848["records_lost"] == 0).all()
    unowned = sims["extra_metrics"].map(lambda m: dict(m)["unowned_partition_ms"])
    assert (unowned > 0).all()
    # A verdict per churn and overall, in the terminal's answer, --json and the page alike.
    answer = result.answer.migration
    assert {v.churn for v in answer.verdicts()} == {"rolling-restart", "crashes"}
    assert answer.overall() is not None
    assert [(h.churn, h.interval_ms) for h in answer.heartbeat] == [("rolling-restart", 5000),
                                                                    ("rolling-restart", 1000)]
    as_json = result.answer.as_dict()["migration"]
    assert as_json["verdict"]["verdict"] in ("migrate", "wait", "it depends")
    assert [s["churn"] for s in as_json["situations"]] == [v.churn for v in answer.verdicts()]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Should we migrate to KIP-848?" in page
    assert re.search(r"<b>rolling-restart: (migrate|wait|it depends on group.consumer.heartbeat.interval.ms)</b>; "
                     r"(at the default 5,000 ms )?KIP-848 uniform leaves", page)
    assert "<b>Overall: " in page and "Why KIP-848 leaves partitions unowned longer" in page
    section = page[page.index("Should we migrate"):]
    heartbeat = section[section.index("<thead>"):section.index("</thead>")]
    assert "KIP-848 5,000 ms (default)" in heartbeat and "KIP-848 1,000 ms" in heartbeat
    comparison = section[section.index("Every protocol, per churn"):]
    header = comparison[comparison.index("<thead>"):comparison.index("</thead>")]
    assert header.count("<th>") <= 9  # fits the page
    # What the migration itself costs, with numbers, next to a plain rolling restart.
    migration = sims[sims["scenario"] == "migration"]
    assert (migration["records_lost"] == 0).all() and (migration["error"].isna()).all()
    assert re.search(r"Upgrading cooperative-sticky to KIP-848 uniform one member at a time leaves partitions "
                     r"unowned for [\d,.]+ partition-seconds \((more|less) than the [\d,.]+ of the same restarts "
                     r"without upgrading\)", page)
    cost = section[section.index("<h3>What the migration costs"):]
    cost_header = cost[cost.index("<thead>"):cost.index("</thead>")]
    assert cost_header.count("<th>") <= 7  # fits the page
