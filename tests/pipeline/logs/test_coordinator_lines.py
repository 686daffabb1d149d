"""The classic coordinator's lines, as the simulator writes them (``protocol.logformat``) and as
a real incident logged them (seed 002), read back through the product's parser and story
(``pipeline/logparse``, what ``kafka-rebalance logs`` runs): the fields each line carries and
the rebalances a run had. No Spark."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_rebalance.pipeline.logparse.kinds import EventKind
from kafka_rebalance.pipeline.logparse.parse import parse_line, parse_lines
from kafka_rebalance.pipeline.logparse.story import tell
from kafka_rebalance.protocol.logformat import format_record
from kafka_rebalance.protocol.logline import DEFAULT_EPOCH, epoch_ms
from kafka_rebalance.protocol.logrecords import (
    AssignmentReceived,
    GroupEmpty,
    MemberAssignment,
    MemberFailed,
    MemberLeft,
    PreparingRebalance,
    Stabilized,
)
from kafka_rebalance.sim import log_lines, run_simulation
from tests.conftest import DATA, TEST_SYSLOG
from tests.sim.helpers import SCENARIOS, base

SEED_LINES = [line for line in (DATA / "seeds" / "002_2dbaf8b85c23802f.txt").read_text(encoding="utf-8").splitlines()
              if "[GroupCoordinator" in line]


def rebalances_of(lines):
    """Every group's rebalances (the ``rebalances`` table's rows), in order of their start."""
    events = [e for e in parse_lines(lines, "server.log", syslog=TEST_SYSLOG) if e["kind"] is not None]
    groups = sorted({e["group"] for e in events})
    rows = [row for group in groups for row in tell("default", group, [e for e in events if e["group"] == group])
            ["rebalances"]]
    return sorted(rows, key=lambda r: (r["start_ms"], r["group"]))


def test_every_seed_line_parses():
    assert len(SEED_LINES) == 14
    parsed = [parse_line(line, TEST_SYSLOG) for line in SEED_LINES]
    assert all(p is not None for p in parsed)
    first = parsed[0]
    assert (first["kind"], first["broker"], first["group"], first["old_generation"], first["partition"]) == \
        (EventKind.PREPARING_REBALANCE, 0, "answer_action", 741, 9)
    assert first.get("state") is None and first.get("reason") is None
    failed = [p for p in parsed if p["kind"] == EventKind.MEMBER_FAILED]
    assert failed[0]["member"] == "kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f"


def test_seed_rebalances_are_reconstructed():
    rebalances = rebalances_of(SEED_LINES)
    assert [(r["group"], r["old_generation"], r["generation"], r["outcome"]) for r in rebalances] == [
        ("answer_action", 741, 742, "empty"), ("answer_action", 742, 743, "stable"),
        ("illidan-c", 158651, 158652, "stable"), ("illidan-c", 158652, None, "open")]
    assert rebalances[1]["end_ms"] - rebalances[1]["start_ms"] == 30002
    assert len(rebalances[2]["failed_members"]) == 2
    assert rebalances[3]["failed_members"] == ["kafka-python-1.4.7-0094bb59-7cc1-4c80-9020-7c10c61bae98"]
    assert rebalances[3]["end_ms"] is None


RECORDS = [
    PreparingRebalance(5, "my-group", "Stable", 3,
                       "Adding new member c-1 with group instance id Some(x); client reason: (nested) parens"),
    Stabilized(6, "my-group", 4, ("c-1", "c-2"), "c-1", "range"),
    AssignmentReceived(7, "my-group", 4, "c-1", 1, (MemberAssignment("c-1", ("t-0",)), MemberAssignment("c-2", ()))),
    MemberFailed(8, "my-group", "c-2"),
    MemberLeft(9, "my-group", "c-3", "the consumer is being closed"),
    GroupEmpty(10, "my-group", 5),
]
EXPECTED = [  # what each record's line parses back to (the fields the line carries)
    {"old_generation": 3, "reason": RECORDS[0].reason},
    {"generation": 4, "members": 2},
    {"generation": 4, "members": 2, "member": "c-1"},
    {"member": "c-2"},
    {"member": "c-3", "reason": "the consumer is being closed"},
    {"generation": 5},
]


@pytest.mark.parametrize("style", ["modern", "legacy", "legacy-old"])
def test_formatted_lines_parse_back(style):
    for record, expected in zip(RECORDS, EXPECTED, strict=True):
        line = format_record(record, broker_id=2, partition=12, style=style)
        if line is None:
            assert record.KIND == "member_left" and style != "modern"
            continue
        parsed = parse_line(line, TEST_SYSLOG)
        assert parsed["kind"] == record.KIND and parsed["group"] == "my-group" and parsed["broker"] == 2
        assert parsed["time_ms"] == epoch_ms(DEFAULT_EPOCH) + record.time_ms
        for key in ("old_generation", "generation"):
            if key in expected:
                assert parsed[key] == expected[key]
        if record.KIND == "member_failed":
            assert parsed["member"] == expected["member"]
        if style == "modern":
            assert parsed["partition"] == 12
            for key in ("reason", "members", "member"):
                if key in expected:
                    assert parsed[key] == expected[key]


def test_unrelated_lines_are_none():
    assert parse_line("[2019-07-17 15:20:37,266] INFO [Log partition=x] Rolled new segment (kafka.log.Log)",
                      TEST_SYSLOG) is None
    assert parse_line("garbage", TEST_SYSLOG) is None


@pytest.mark.parametrize("name", ["cooperative-join", "eager-join"])
def test_the_log_parses_back_into_the_same_rebalances(name):
    run = run_simulation(SCENARIOS / f"{name}.yaml")
    parsed = rebalances_of(log_lines(run))
    base_ms = epoch_ms(DEFAULT_EPOCH)
    assert [(p["generation"], p["start_ms"] - base_ms, p["end_ms"] - base_ms) for p in parsed] == \
        [(r["generation"], r["start_ms"], r["end_ms"]) for r in run.to_json()["rebalances"]]


@pytest.mark.parametrize("style", ["modern", "legacy", "legacy-old"])
def test_every_log_style_parses_back(style):
    scenario = base(["c1", "c2"], [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c2"}, {"at_ms": 20000, "crash": "c2"},
                                   {"at_ms": 40000, "leave": "c1"}], session_timeout_ms=10000)
    run = run_simulation(scenario)
    parsed = rebalances_of(log_lines(run, style))
    base_ms = epoch_ms(DEFAULT_EPOCH)
    assert [(p["generation"], p["start_ms"] - base_ms, p["end_ms"] - base_ms, p["outcome"] == "empty")
            for p in parsed] == \
        [(r["generation"], r["start_ms"], r["end_ms"], not r["members"]) for r in run.to_json()["rebalances"]]
    assert parsed[-1]["outcome"] == "empty"


def test_simulate_log_option_writes_the_rebalances(tmp_path):
    log = tmp_path / "server.log"
    code = "import sys; from kafka_rebalance.cli import main; main(sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", code, "simulate", str(SCENARIOS / "cooperative-join.yaml"), "--json",
                           "--log", str(log)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["metrics"]["rebalances"] == 3
    assert [r["generation"] for r in rebalances_of(log.read_text().splitlines())] == [1, 2, 3]
