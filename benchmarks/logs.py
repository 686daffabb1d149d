"""Broker-log analysis throughput: generate a log (or reuse one), run `kafka-rebalance logs` on
it, print a table.

    .venv/bin/python benchmarks/logs.py [--size 1GB] [--log /tmp/server-1g.log] [--master 'local[2]']

The generated log is kept (and reused when it already has the requested size), so a second run
measures the analysis alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logs_generator import generate, parse_size  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GB", help="log size to generate, e.g. 1GB, 200MB (default 1GB)")
    parser.add_argument("--log", type=Path, default=None, help="log file to write or reuse (default: in the temp dir)")
    parser.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    args = parser.parse_args(argv)

    size = parse_size(args.size)
    log = args.log or Path(tempfile.gettempdir()) / f"kafka-rebalance-bench-{args.size}.log"
    generated_s = None
    if not log.exists() or abs(log.stat().st_size - size) > size * 0.01:
        started = time.perf_counter()
        generate(log, size)
        generated_s = time.perf_counter() - started

    from kafka_rebalance.pipeline.logs import run_logs
    from kafka_rebalance.pipeline.spark import build_session

    out = Path(tempfile.mkdtemp(prefix="kafka-rebalance-logs-bench-"))
    started = time.perf_counter()
    spark = build_session(args.master, "kafka-rebalance-logs-bench")
    session_s = time.perf_counter() - started
    try:
        started = time.perf_counter()
        run = run_logs(spark, [str(log)], str(out / "result"), progress=False)
        analysis_s = time.perf_counter() - started
    finally:
        spark.stop()
    summary = json.loads((out / "result" / "summary.json").read_text())
    shutil.rmtree(out, ignore_errors=True)
    megabytes = log.stat().st_size / 1e6
    rows = [
        ("log", f"{log} ({megabytes:,.0f} MB, {summary['lines_read']:,} lines, {summary['groups']:,} groups)"),
        ("generated in", f"{generated_s:.1f} s" if generated_s is not None else "reused"),
        ("Spark session start", f"{session_s:.1f} s"),
        ("analysis (parse, rebuild, tables, report)", f"{analysis_s:.1f} s"),
        ("throughput", f"{megabytes / analysis_s:,.1f} MB/s, {summary['lines_read'] / analysis_s:,.0f} lines/s"),
        ("found", f"{summary['rebalances']:,} rebalances, {summary['member_failures']:,} failures, "
                  f"{summary['storms']:,} storms"),
        ("machine", f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, master {args.master}"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    del run
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
