"""``lab`` and ``soak`` end with their answer in the terminal (what the report's first section
says), within the width, plain in a pipe; ``--json`` is the same answer."""

from __future__ import annotations

import io
import json
import re

import pytest

from kafka_rebalance.pipeline.migration import CONSUMER_UNIFORM, COOPERATIVE, ChurnFigures, MigrationAnswer
from kafka_rebalance.pipeline.report.lab import LabAnswer
from kafka_rebalance.pipeline.report.soak import soak_answer
from kafka_rebalance.pipeline.report.terminal import console_for, print_lab_answer, print_soak_answer

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LAB = LabAnswer(
    sweep="default",
    totals=[("simulations", 99), ("scenarios", 14), ("strategies", 6), ("failed runs", 1),
            ("rebalances simulated", 2_345)],
    checks=[(True, "cooperative-sticky: stop-the-world is 0 partition-ms at most over 17 run(s)"),
            (False, "records lost over all runs: 3")],
    migration=MigrationAnswer(figures=(
        ChurnFigures("typical", CONSUMER_UNIFORM, unowned_partition_s=12.5, pause_p50_s=0.5, pause_max_s=1.0,
                     records_twice=0, rebalances=9, longest_unstable_s=1.2, stop_the_world_partition_s=0),
        ChurnFigures("typical", COOPERATIVE, unowned_partition_s=80.1, pause_p50_s=0.7, pause_max_s=2.0,
                     records_twice=120, rebalances=18, longest_unstable_s=9.8, stop_the_world_partition_s=0)),
        costs=()),
    failed_runs=["storm / sticky / seed 3: the simulation stopped after 10000000 events"],
    tables="lab-out", report="lab-out/report.html")


def show(printer, answer, width: int, terminal: bool) -> str:
    stream = io.StringIO()
    printer(answer, console_for(stream, width=width, terminal=terminal))
    return ANSI.sub("", stream.getvalue())


@pytest.mark.parametrize(("width", "terminal"), [(80, False), (80, True), (132, False)])
def test_lab_tells_its_checks_and_the_migration_verdict(width, terminal):
    text = show(print_lab_answer, LAB, width, terminal)
    assert all(len(line) <= width for line in text.splitlines())
    assert text.startswith("sweep default: 99 simulations, 14 scenarios, 6 strategies, 1 failed runs, 2,345 "
                           "rebalances simulated"[:width - 1])
    flat = " ".join(text.split())
    assert ("✓" if terminal else "ok") + " cooperative-sticky: stop-the-world is 0 partition-ms" in flat
    assert ("✗" if terminal else "NO") + " records lost over all runs: 3" in flat
    assert ("- typical: migrate; KIP-848 uniform leaves 84% fewer partition-seconds unowned than cooperative-sticky "
            "(12.5 against 80.1, moving 0 partitions against 0) at the default heartbeat interval of 5,000 ms.") in flat
    assert "- Overall: migrate: in all 1 situations" in flat and "Should we migrate to KIP-848?" in flat
    assert "storm / sticky / seed 3" in flat
    assert text.splitlines()[-1] == "wrote the tables and the report to lab-out/; open lab-out/report.html"
    as_json = json.loads(json.dumps(LAB.as_dict()))
    assert as_json["checks"][1] == {"passed": False, "statement": LAB.checks[1][1]}
    assert as_json["migration"]["sentences"] == LAB.migration.sentences()
    assert as_json["migration"]["verdict"] == {"verdict": "migrate", "sentence": LAB.migration.overall().sentence}
    assert as_json["migration"]["situations"][0]["verdict"] == "migrate"
    assert as_json["load_aware"]["verdict"] is None  # no load scenario
    assert as_json["migration"]["figures"][0]["setup"] == {"group_protocol": "consumer", "rebalance_protocol": None,
                                                           "strategy": None, "assignor": "uniform"}


def test_soak_tells_what_it_exercised_and_its_failures():
    summary = {"schedules": 10_000, "failing_schedules": 7, "seed": 0, "first_schedule": 0, "wall_s": 152.4,
               "master": "local[2]", "simulated_ms": 1_540_000_000, "joins": 46_047, "crashes": 6_551,
               "violations_by_invariant": {"converges": 6, "owner-consumes": 2}}
    failures = [{"schedule_index": i, "invariant": "converges", "detail": f"still rebalancing at {i} s",
                 "shrunk_events": 4} for i in range(7)]
    answer = soak_answer(summary, failures, tables="rebalance-soak")
    text = show(print_soak_answer, answer, 80, False)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[:2] == ["soak: 10,000 schedules (seed 0), 7 failing (converges 6, owner-consumes 2), 152",
                         "s on local[2]"]  # wrapped at 80
    assert lines[2] == "  exercised: 1,540,000 simulated seconds; 46,047 joins, 6,551 crashes"
    assert lines[3] == "  schedule 0: converges (shrunk to 4 events): still rebalancing at 0 s"
    assert len([line for line in lines if "schedule " in line and "shrunk" in line]) == 5
    assert "  3 more in rebalance-soak/violations (each with its shrunk schedule)" in lines
    assert answer.as_dict()["failures"][4]["schedule"] == 4
