"""The ``lab`` command, whole process (Python's start, the Spark session's start, the job, the
report: what a user waits for), on a small sweep or the built-in one, beside what its
simulations alone cost: the rest is the lab's fixed cost. ``--soak N`` times ``soak --schedules
N`` instead, the same way.

    .venv/bin/python benchmarks/spark_commands.py [--sweep small|builtin|FILE] [--repeat 3] [--master 'local[2]']
                                       [--vs-src DIR] [--soak N]

``--vs-src`` another tree's ``src`` (run by ``PYTHONPATH``) in turn with this one (now, then,
then, now, ...), so the host's drift falls on both alike. Each run is a fresh process with a
fresh ``--out``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = "from kafka_rebalance.cli import main; main()"
# Two scenarios under every classic strategy, two seeds: 16 runs of a few consumers.
SMALL_SWEEP = """
name: small
seeds: [1, 2]
runs:
  - scenario:
      name: consumer3-joins
      topics: {t0: 3}
      consumers:
        - {id: consumer1, subscribe: [t0]}
        - {id: consumer2, subscribe: [t0]}
        - {id: consumer3, subscribe: [t0]}
      produce: [{topic: t0, records_per_s: 100, keys: 50}]
      events:
        - {at_ms: 0, join: consumer1}
        - {at_ms: 0, join: consumer2}
        - {at_ms: 20000, join: consumer3}
      end_ms: 40000
    grid:
      strategy: [range, roundrobin, sticky, cooperative-sticky]
  - scenario:
      name: crash
      topics: {orders: 6}
      consumers:
        - {id: c1, subscribe: [orders]}
        - {id: c2, subscribe: [orders]}
        - {id: c3, subscribe: [orders]}
      produce: [{topic: orders, records_per_s: 50}]
      events:
        - {at_ms: 0, join: c1}
        - {at_ms: 0, join: c2}
        - {at_ms: 0, join: c3}
        - {at_ms: 10000, crash: c2}
      end_ms: 60000
    grid:
      strategy: [sticky, cooperative-sticky]
      session_timeout_ms: [10000, 30000]
"""


def simulations_cpu_seconds(sweep_arg: str | None) -> tuple[int, float]:
    """The sweep's runs and the CPU seconds of simulating them in this process, one by one."""
    from kafka_rebalance.pipeline.sweep import load_sweep
    from kafka_rebalance.sim import load_scenario, run_simulation

    sweep = load_sweep(sweep_arg)
    started = time.process_time()
    for run in sweep.runs:
        run_simulation(load_scenario(run.scenario), run.seed)
    return len(sweep.runs), time.process_time() - started


def command_run(command: list[str], master: str, source: str | None) -> float:
    """``kafka-rebalance COMMAND --master M --out (fresh) --json --quiet`` in a fresh process: its
    wall seconds. ``source``: another tree's ``src`` to run instead (by ``PYTHONPATH``)."""
    out = Path(tempfile.mkdtemp(prefix="kafka-rebalance-lab-bench-"))
    env = {**os.environ, **({"PYTHONPATH": source} if source else {})}
    args = [sys.executable, "-c", CLI, *command, "--master", master, "--out", str(out / "out"), "--json", "--quiet"]
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - started
    shutil.rmtree(out, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {done.stderr.strip()[-500:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweep", default="small", help="small (16 runs, embedded), builtin, or a sweep file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--vs-src", default=None, help="another tree's src, timed in turn with this one")
    parser.add_argument("--soak", type=int, default=None, metavar="N", help="time soak --schedules N instead")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="kafka-rebalance-lab-sweep-"))
    try:
        if args.sweep == "small":
            sweep_arg: str | None = str(scratch / "small.yaml")
            Path(sweep_arg).write_text(SMALL_SWEEP)
        else:
            sweep_arg = None if args.sweep == "builtin" else args.sweep
        if args.soak is None:
            runs, cpu = simulations_cpu_seconds(sweep_arg)
            command = ["lab", *([sweep_arg] if sweep_arg else [])]
            what = (f"the lab command on the {args.sweep} sweep ({runs} runs; simulating them one by one in one "
                    f"process: {cpu:.2f} CPU-s)")
        else:
            command = ["soak", "--schedules", str(args.soak)]
            what = f"soak --schedules {args.soak}"
        rows: list[tuple[int, float, float | None]] = []
        for number in range(max(1, args.repeat)):
            if args.vs_src is None:
                rows.append((number + 1, command_run(command, args.master, None), None))
                continue
            order = [None, args.vs_src] if number % 2 == 0 else [args.vs_src, None]
            timed = {source: command_run(command, args.master, source) for source in order}
            rows.append((number + 1, timed[None], timed[args.vs_src]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{what}, --master {args.master}, whole process")
    print(f"{'run':>3}  {'now':>7}" + (f"  {'--vs-src':>8}  {'now/vs':>6}" if args.vs_src else ""))
    for number, now, then in rows:
        print(f"{number:>3}  {now:>6.2f}s" + (f"  {then:>7.2f}s  {now / then:>5.2f}x" if then is not None else ""))
    summary = f"median {statistics.median(r[1] for r in rows):.2f} s"
    if args.vs_src:
        summary += (f", --vs-src {statistics.median(r[2] for r in rows if r[2] is not None):.2f} s, now/vs "
                    f"{statistics.median(r[1] / r[2] for r in rows if r[2] is not None):.2f}x (median of pairs)")
    print(f"{summary}; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
