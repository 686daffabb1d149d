"""What only the first run of a Spark session pays: the logs job run ``--runs`` times in one
``local[2]`` session (the logs job's own: its worker daemon, class archive and settings), each
process's CPU seconds read from /proc before and after every run (the driver, the JVM, the
Python worker daemon and each worker it forks; a process that appears during a run is marked
new).

    .venv/bin/python benchmarks/logs_first_run.py --log /tmp/kafka-rebalance-bench-1GB-0.03.log [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logs import _tree_pids  # noqa: E402


def cpu_by_process() -> dict[int, tuple[str, float]]:
    """pid -> (what it is, CPU seconds so far) for this process and its live descendants."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats, commands = {}, {}
    for pid in _tree_pids():
        try:
            stats[pid] = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            commands[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
    found = {}
    for pid, fields in stats.items():
        parent = int(fields[1])
        name = ("driver" if pid == os.getpid() else "JVM" if b"java" in commands[pid]
                else "Python worker daemon" if b"java" in commands.get(parent, b"") else "Python worker")
        found[pid] = (name, (int(fields[11]) + int(fields[12])) / ticks)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="a log file (benchmarks/logs.py's, for one)")
    parser.add_argument("--runs", type=int, default=3, help="runs in the session (default 3)")
    args = parser.parse_args(argv)

    from kafka_rebalance.pipeline.logparse.layout import SyslogReference
    from kafka_rebalance.pipeline.logs import logs_session, run_logs

    spark = logs_session("local[2]", app_name="kafka-rebalance-logs-first-run")
    scratch = Path(tempfile.mkdtemp(prefix="kafka-rebalance-first-run-"))
    syslog = SyslogReference(int(time.time() * 1000))
    print("| run | wall s | process | CPU-s |")
    print("| ---: | ---: | --- | ---: |")
    try:
        for run in range(1, max(1, args.runs) + 1):
            before = cpu_by_process()
            started = time.perf_counter()
            run_logs(spark, [str(args.log)], str(scratch / f"run-{run}"), engine="spark", progress=False, syslog=syslog)
            wall = time.perf_counter() - started
            for pid, (name, used) in sorted(cpu_by_process().items()):
                spent = used - before.get(pid, (name, 0.0))[1]
                if spent >= 0.05:
                    new = " (new)" if pid not in before else ""
                    print(f"| {run} | {wall:.1f} | {name} {pid}{new} | {spent:.2f} |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
