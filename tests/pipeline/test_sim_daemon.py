"""The Python worker daemon of ``lab`` and ``soak``: its workers start with everything a lab
task and a soak task import, and without pandas (the tasks build Arrow tables)."""

from __future__ import annotations

import subprocess
import sys


def test_a_lab_task_and_a_soak_task_import_nothing_the_daemon_has_not(tmp_path):
    probe = f"""
import sys
import kafka_rebalance.pipeline.sim_daemon as daemon
daemon.warm(ahead=True)
before = set(sys.modules)
from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.pipeline import lab, soak
from kafka_rebalance.pipeline.sweep import load_sweep
sweep = load_sweep(None)
runs = [run for run in sweep.runs if run.scenario_name in ("rolling-restart", "skewed-load", "consumer3-joins")][:6]
out = {str(tmp_path)!r}
lab.simulate_batch(0, runs, sweep.name, lab.swept_columns(sweep), {{name: out + "/" + name for name in lab.PART_TABLES}})
tables = {{name: out + "/" + name for name in (soak.SCHEDULES, soak.VIOLATIONS)}}
soak.check_slice(0, range(2), 0, 10, GroupProtocol.CONSUMER, True, tables, 5)
new = {{name.split(".")[0] for name in set(sys.modules) - before}}
# pyarrow.compute imports these on a first scalar (a few ms): not worth a place in the daemon
print(sorted(new - {{"dateutil", "six", "encodings"}}), "pandas" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[] False", done.stdout + done.stderr
