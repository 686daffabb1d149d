"""The driver's serial "advice and report" stage of ``kafka-rebalance logs`` on its own: CPU
seconds per step (``time.process_time``, best of ``--runs`` fresh processes, so imports count),
from the tables of a log written once by the local engine.

    .venv/bin/python benchmarks/logs_report.py --log /tmp/s300.log [--tables DIR] [--runs 3]

The tables (and the per-group findings, as JSON like the Spark engine hands them over) are kept
in ``--tables`` and reused when they are there, so a second run measures the report alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = ("imports", "read_tables", "advise", "logs_answer", "logs_figures", "render_logs_report", "write_report")


def write_tables(log: str, tables: Path) -> None:
    """The local engine's tables of ``log`` (one Parquet directory each) and its facts."""
    from kafka_rebalance.pipeline.io import StagedOutput
    from kafka_rebalance.pipeline.logparse.layout import SyslogReference
    from kafka_rebalance.pipeline.logparse.local_engine import analyse_local
    from kafka_rebalance.pipeline.logparse.schemas import write_table

    result = analyse_local([(str(Path(log).resolve()), "default")], syslog=SyslogReference(int(time.time() * 1000)))
    with StagedOutput(tables) as out:
        for table, arrow in result.tables.items():
            write_table(arrow, out.path(table))
        facts = {"findings": result.findings, "coverage": result.coverage, "lines_read": result.lines_read,
                 "events": result.events, "groups": result.groups, "files": 1}
        out.write_text("facts.json", json.dumps(facts, default=str))


def summary_of(facts: dict, tables: dict) -> dict:
    """The summary fields the report shows (``logs.run_logs`` writes the full summary.json)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rebalances, events = tables["rebalances"], tables["member_events"]
    return {"lines_read": facts["lines_read"], "lines_matched": facts["events"],
            "lines_unrecognised": int(pc.sum(tables["unrecognised"]["count"]).as_py() or 0), "groups": facts["groups"],
            "rebalances": rebalances.num_rows,
            "open_rebalances": int(pc.sum(pc.equal(rebalances["outcome"], "open")).as_py() or 0),
            "member_failures": int(pc.sum(pc.is_in(events["kind"], value_set=pa.array(["failed", "fenced"]))).as_py() or 0),
            "storms": tables["storms"].num_rows, "files": facts["files"], "engine": "spark", "coverage": facts["coverage"],
            "skipped_inputs": []}


def stage(tables: Path) -> dict[str, float]:
    """One run of the stage, as ``logs.run_logs`` does it after the tables: CPU-s per step."""
    started = time.process_time()
    laps: dict[str, float] = {}
    last = started

    def lap(step: str) -> None:
        nonlocal last
        now = time.process_time()
        laps[step] = now - last
        last = now

    from kafka_rebalance.pipeline import advice
    from kafka_rebalance.pipeline.io import StagedOutput
    from kafka_rebalance.pipeline.report import logs as report
    from kafka_rebalance.pipeline.report.page import write_report
    from kafka_rebalance.pipeline.without_pandas import without_pandas

    lap("imports")
    facts = json.loads((tables / "facts.json").read_text())
    last = time.process_time()
    # as the logs command runs it: without pandas
    with without_pandas(), tempfile.TemporaryDirectory() as scratch, StagedOutput(scratch) as out:
        read = report.read_tables(tables)
        lap("read_tables")
        items = advice.advise(facts["findings"])
        lap("advise")
        answer = report.logs_answer(summary_of(facts, read), read, facts["findings"], items)
        lap("logs_answer")
        figures = report.logs_figures(read, facts["findings"])
        lap("logs_figures")
        page = report.render_logs_report(answer, figures, items, read, facts["findings"])
        lap("render_logs_report")
        write_report(out, page, figures)
        lap("write_report")
    return laps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", default="/tmp/s300.log")
    parser.add_argument("--tables", help="where the tables are kept (default: /tmp/logs-report-NAME)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # one run, in a fresh process
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(stage(Path(args.stage))))
        return
    tables = Path(args.tables or f"/tmp/logs-report-{Path(args.log).name}")
    if not (tables / "facts.json").exists():
        started = time.process_time()
        write_tables(args.log, tables)
        print(f"tables of {args.log} written to {tables} ({time.process_time() - started:.1f} CPU-s)")
    runs = [json.loads(subprocess.run([sys.executable, __file__, "--stage", str(tables)], check=True,
                                      capture_output=True, text=True).stdout) for _ in range(args.runs)]
    groups = json.loads((tables / "facts.json").read_text())["groups"]
    print(f"\n{tables}: {groups:,} groups; CPU seconds, best of {args.runs} fresh processes\n")
    print(f"| {'step':<20} | {'CPU-s':>6} |\n| {'-' * 20} | {'-' * 6}: |")
    for step in STEPS:
        print(f"| {step:<20} | {min(run[step] for run in runs):6.3f} |")
    without = min(sum(run[s] for s in STEPS if s != "imports") for run in runs)
    print(f"| {'stage, no imports':<20} | {without:6.3f} |")
    print(f"| {'stage with imports':<20} | {min(sum(run.values()) for run in runs):6.3f} |")


if __name__ == "__main__":
    main()
