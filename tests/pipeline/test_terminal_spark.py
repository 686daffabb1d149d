"""The Spark commands as a user sees them on a terminal: a progress bar driven by Spark's status
tracker on stderr, the summary on stdout, and none of the JVM's or Spark's own output (the
incubator-modules warning, log4j lines): that goes to a log file, named when Spark fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.terminal import JVM_NOISE, run_on_terminal

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"
TINY_SWEEP = {
    "name": "tiny",
    "seeds": [1],
    "runs": [{"scenario": {
        "name": "two-join", "topics": {"t0": 2},
        "consumers": [{"id": "c1", "subscribe": ["t0"]}, {"id": "c2", "subscribe": ["t0"]}],
        "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 5000, "join": "c2"}], "end_ms": 15000},
        "grid": {"strategy": ["range", "cooperative-sticky"]}}],
}


def assert_no_jvm_noise(*outputs: str) -> None:
    for output in outputs:
        for noise in JVM_NOISE:
            assert noise not in output


@pytest.fixture
def cache(tmp_path) -> dict[str, str]:
    """Spark's log files go under the cache folder: a fresh one per test."""
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "KAFKA_REBALANCE_CLASS_ARCHIVE": "off"}


def spark_logs(env: dict[str, str]) -> list[Path]:
    return sorted((Path(env["XDG_CACHE_HOME"]) / "kafka-rebalance" / "spark-logs").glob("spark-*.log"))


@pytest.mark.spark
def test_soak_shows_progress_and_no_jvm_output(tmp_path, cache):
    run = run_on_terminal(["soak", "--schedules", "4", "--master", "local[2]", "--out", str(tmp_path / "o")], cache)
    assert run.code == 0, run.stderr
    assert "soaking 4 schedules" in run.stderr and "tasks" in run.stderr and "ETA" in run.stderr
    assert run.stdout.startswith("soak: 4 schedules (seed 0), 0 failing") and "exercised:" in run.stdout
    assert_no_jvm_noise(run.stdout, run.stderr)
    assert "incubator" in "".join(log.read_text() for log in spark_logs(cache))  # where it went instead


@pytest.mark.spark
def test_logs_on_spark_and_lab_answer_without_jvm_output(tmp_path, cache):
    logs = run_on_terminal(["logs", str(DATA), "--engine", "spark", "--master", "local[2]", "--out",
                            str(tmp_path / "logs")], cache)
    assert logs.code == 0, logs.stderr
    assert "Group broker-3.9.log/billing: 2 rebalances" in logs.stdout and "reading logs" in logs.stderr
    assert_no_jvm_noise(logs.stdout, logs.stderr)
    sweep = tmp_path / "tiny.json"
    sweep.write_text(json.dumps(TINY_SWEEP))
    lab = run_on_terminal(["lab", str(sweep), "--master", "local[2]", "--out", str(tmp_path / "lab")], cache)
    assert lab.code == 0, lab.stderr
    assert "sweep tiny: 2 simulations" in lab.stdout and "What the sweep shows" in lab.stdout
    assert "simulating 2 runs" in lab.stderr
    assert_no_jvm_noise(lab.stdout, lab.stderr)


def test_a_jvm_that_does_not_start_is_one_line_naming_its_log(tmp_path, cache):
    env = {**cache, "JAVA_HOME": str(tmp_path / "no-java")}
    run = run_on_terminal(["soak", "--schedules", "1", "--master", "local[1]", "--out", str(tmp_path / "o")], env)
    lines = run.stderr.strip().splitlines()
    assert run.code == 1 and len(lines) == 1, run.stderr
    (log,) = spark_logs(cache)
    assert lines[0].startswith("kafka-rebalance: Spark failed: ") and lines[0].endswith(f"Spark's output is in {log}")
    assert "no-java/bin/java" in log.read_text()  # what went wrong is in the log
    assert not (tmp_path / "o").exists()
