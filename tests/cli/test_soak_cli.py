"""``kafka-rebalance soak``: options checked before Spark starts; the summary line; exit 1 on
violations."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.report.soak import soak_answer
from kafka_rebalance.pipeline.soak import SoakRun
from tests.cli.fuzzing import assert_one_line_bad_input, assert_success_or_bad_input, run_cli


class _SoakStub:
    def __init__(self, failing=0):
        self.calls = []
        self.failing = failing

    def run_soak(self, spark, schedules, out_dir, *, seed=0, first=0, tasks=None, shrink_budget=300, progress=None,
                 group_protocol=None, migrating=False):
        self.calls.append((schedules, out_dir, seed, tasks))
        self.migrating = migrating
        by_invariant = {"converges": self.failing} if self.failing else {}
        summary = {"master": "local[2]", "schedules": schedules, "failing_schedules": self.failing, "seed": seed,
                   "first_schedule": first, "wall_s": 1.0, "violations_by_invariant": by_invariant,
                   "simulated_ms": 3_600_000 * schedules, "joins": 2 * schedules, "crashes": schedules}
        failures = [{"schedule_index": i, "invariant": "converges", "detail": "still rebalancing at the end",
                     "shrunk_events": 3} for i in range(self.failing)]
        return SoakRun(out_dir=out_dir, schedules=schedules, failing=self.failing, violations=self.failing,
                       by_invariant=by_invariant, wall_s=1.0, summary=summary,
                       answer=soak_answer(summary, failures, tables=out_dir))


@pytest.fixture
def soak_stub(monkeypatch):
    stub = _SoakStub()
    monkeypatch.setattr("kafka_rebalance.pipeline.soak.run_soak", stub.run_soak)
    monkeypatch.setattr("kafka_rebalance.pipeline.spark.build_session", lambda *a, **k: None)
    return stub


def test_summary_line_and_exit_status(capsys, tmp_path, soak_stub):
    answer = run_cli(capsys, ["soak", "--schedules", "12", "--seed", "3", "--out", str(tmp_path / "o")])
    assert answer.code == 0
    assert answer.out == ("soak: 12 schedules (seed 3), 0 failing, 1 s on local[2]\n"
                          "  exercised: 43,200 simulated seconds; 24 joins, 12 crashes\n"
                          f"tables in {tmp_path / 'o'}/\n")
    soak_stub.failing = 2
    answer = run_cli(capsys, ["soak", "--schedules", "12", "--out", str(tmp_path / "o")])
    assert answer.code == 1 and "2 failing (converges 2)" in answer.out
    assert "  schedule 1: converges (shrunk to 3 events): still rebalancing at the end\n" in answer.out
    answer = run_cli(capsys, ["soak", "--schedules", "12", "--out", str(tmp_path / "o"), "--json"])
    document = json.loads(answer.out)
    assert (document["failing"], document["failures"][0]["schedule"], document["exercised"]["joins"]) == (2, 0, 24)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--schedules", "0"], "--schedules"),
        (["--schedules", "-5"], "--schedules"),
        (["--schedules", "10000000000000000000000"], "--schedules"),
        (["--schedules", "many"], "--schedules"),
        (["--seed", "-1"], "--seed"),
        (["--seed", "1e9"], "--seed"),
        (["--master", "local[0]"], "--master"),
        (["--master", "http://x"], "--master"),
        (["--tasks", "0"], "--tasks"),
        (["--shrink-budget", "-1"], "--shrink-budget"),
    ],
)
def test_bad_options_are_one_line_before_spark(capsys, tmp_path, soak_stub, args, problem):
    answer = run_cli(capsys, ["soak", *args, "--out", str(tmp_path / "o")])
    assert_one_line_bad_input(answer, problem)
    assert soak_stub.calls == []


def test_out_that_is_a_file_is_refused_and_kept(capsys, tmp_path, soak_stub):
    (tmp_path / "f").write_text("earlier results")
    assert_one_line_bad_input(run_cli(capsys, ["soak", "--out", str(tmp_path / "f")]), "--out", "not a directory")
    assert (tmp_path / "f").read_text() == "earlier results" and soak_stub.calls == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schedules=st.one_of(st.integers(-10, 10**12).map(str), st.text(max_size=8)),
       seed=st.one_of(st.integers(-(2**70), 2**70).map(str), st.text(max_size=5)),
       master=st.one_of(st.sampled_from(["local", "local[2]", "local[*]", "spark://h:7077", "yarn"]), st.text(max_size=10)))
def test_fuzzed_options(capsys, tmp_path, soak_stub, schedules, seed, master):
    answer = run_cli(capsys, ["soak", "--schedules", schedules, "--seed", seed, "--master", master,
                              "--out", str(tmp_path / "o")])
    assert_success_or_bad_input(answer, "--")


def test_migrate_reaches_the_soak(capsys, tmp_path, soak_stub):
    assert run_cli(capsys, ["soak", "--schedules", "2", "--migrate", "--out", str(tmp_path / "o")]).code == 0
    assert soak_stub.migrating is True
    assert run_cli(capsys, ["soak", "--schedules", "2", "--out", str(tmp_path / "p")]).code == 0
    assert soak_stub.migrating is False
