"""The lab's answer to "does load-aware assignment pay off?" from the skewed-load runs, without
Spark: the rows one simulation yields, the comparison, the sentences, the plot and the section
(the Spark path is tests/pipeline/test_lab.py's built-in sweep)."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest
from rich.console import Console

from kafka_rebalance.pipeline.lab import simulate_run, swept_columns
from kafka_rebalance.pipeline.load_answer import load_answer
from kafka_rebalance.pipeline.migration import has_load, migration_answer
from kafka_rebalance.pipeline.report.lab import lab_answer, lag_figure, load_section
from kafka_rebalance.pipeline.report.terminal import print_lab_answer
from kafka_rebalance.pipeline.sweep import parse_sweep

PROTOCOLS = ["eager", "cooperative-sticky", "consumer-uniform", "load-aware"]
SMALL_SKEW = {
    "name": "small-skew",
    "topics": {"t": 16},
    "consumers": [{"id": f"c{i}", "subscribe": ["t"]} for i in range(1, 6)],
    "load": {"rates": [{"topic": "t", "records_per_s": 1400, "zipf": 1.1}], "capacity_records_per_s": 500},
    "events": [*({"at_ms": 0, "join": f"c{i}"} for i in range(1, 5)),
               {"at_ms": 20000, "restart": "c1", "after_ms": 3000}, {"at_ms": 40000, "join": "c5"}],
    "end_ms": 70000,
}


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    sweep = parse_sweep({"name": "skew", "seeds": [1], "runs": [
        {"scenario": SMALL_SKEW, "grid": {"protocol": PROTOCOLS}},
        {"churn": "crashes", "service": {"members": 4, "partitions": 8}, "grid": {"protocol": PROTOCOLS[:3]}}]})
    swept = swept_columns(sweep)
    runs = [simulate_run(run, sweep.name, swept) for run in sweep.runs]
    return (pd.DataFrame([tables.simulation for tables in runs]),
            pd.concat([tables.lag.to_pandas() for tables in runs], ignore_index=True))


def test_a_skewed_run_yields_its_lag_series_and_load_figures(tables):
    sims, lag = tables
    assert sims["error"].isna().all()
    skewed = sims[sims["scenario"] == "small-skew"]
    assert has_load(sims).tolist() == (sims["scenario"] == "small-skew").tolist()
    for metrics in skewed["extra_metrics"]:
        assert {"max_lag_records", "p99_delay_ms", "drain_p50_ms", "max_moved_per_rebalance", "end_lag_records",
                "produce_records_per_s", "behind_ms"} <= set(metrics)
        assert metrics["produce_records_per_s"] == pytest.approx(1400, rel=0.01)
        assert 0 <= metrics["behind_ms"] <= 70000
    assert set(lag["strategy"]) == set(PROTOCOLS)
    # the group's lag at the end is the lag table's last total; behind: samples above one second of production
    for run_id, run in lag.groupby("run_id"):
        metrics = dict(sims.set_index("run_id").loc[run_id, "extra_metrics"])
        assert metrics["end_lag_records"] == run.sort_values("time_ms")["total_lag"].iloc[-1]
        assert metrics["behind_ms"] == 5000 * (run["total_lag"] > metrics["produce_records_per_s"]).sum()
    per_run = lag.groupby("run_id")["time_ms"].agg(["count", "max"])
    assert (per_run["count"] == 14).all() and (per_run["max"] == 70000).all()  # a sample every 5 s
    assert (lag["max_lag"] <= lag["total_lag"]).all()


def test_the_comparison_and_its_sentences(tables):
    sims, _ = tables
    answer = load_answer(sims)
    assert [f.title for f in answer.figures] == ["range (eager)", "cooperative-sticky", "KIP-848 uniform", "load-aware"]
    for figures in answer.figures:
        assert figures.produce_per_s == pytest.approx(1400, rel=0.01) and figures.behind_s >= 0
        assert figures.keeps_up == (figures.end_lag <= figures.produce_per_s)
    lab = lab_answer("skew", sims)
    assert lab.load_aware == answer
    assert re.match(r"small-skew: load-aware (pays off|does not pay off|makes no difference); ",
                    answer.sentences()[0])
    assert answer.sentences()[-1].startswith("Overall: load-aware ")
    as_dict = lab.as_dict()["load_aware"]
    assert as_dict["situations"][0]["sentence"] == answer.sentences()[0]
    assert as_dict["verdict"]["verdict"] in ("pays off", "does not pay off", "makes no difference")
    assert {"keeps_up", "end_lag", "behind_s", "drain_max_s"} <= set(as_dict["figures"][0])
    # the skewed runs stay out of "should we migrate?" (their churn is another question)
    assert {f.churn for f in migration_answer(sims).figures} == {"crashes"}


def test_the_section_and_the_plot(tables):
    sims, lag = tables
    figure = lag_figure(sims, lag)
    assert figure is not None and "<svg" in figure.image
    assert set(figure.data["strategy"]) == set(PROTOCOLS)
    html = load_section(lab_answer("skew", sims).load_aware, figure)
    assert "Does load-aware assignment pay off?" in html and "figures/max_lag_over_time.csv" in html
    header = html[html.index("<thead>"):html.index("</thead>")]
    assert header.count("<th>") <= 10  # fits the page
    assert "keeps up" in header and "lag at end" in header and "drain" in header
    assert lag_figure(sims, lag.iloc[0:0]) is None


def test_the_terminal_answer_fits_80_columns(tables):
    sims, _ = tables
    out = io.StringIO()
    print_lab_answer(lab_answer("skew", sims, tables="out", report="out/report.html"),
                     Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert "Does load-aware assignment pay off?" in text and "small-skew: load-aware" in text
    assert max(len(line) for line in text.splitlines()) <= 80
