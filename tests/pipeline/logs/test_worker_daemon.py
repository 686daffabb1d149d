"""The logs job's Python worker daemon imports PySpark from its installation, not from the zip
files Spark puts first on the workers' path (a zip's modules are compiled from source at every
import: a second of CPU on the first run of every session)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark


def test_the_daemon_imports_the_installed_pyspark_not_the_bundled_zips():
    bundled = sorted((Path(pyspark.__file__).parent / "python" / "lib").glob("*.zip"))
    assert bundled, "pyspark ships its zips in python/lib"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(zip_file) for zip_file in bundled)}
    probe = ("import kafka_rebalance.pipeline.logparse.worker_daemon as d; d.warm(); import pyspark, py4j, sys; "
             "print(pyspark.__file__); print(py4j.__file__); print(sys.path[-1])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    pyspark_file, py4j_file, last_entry = done.stdout.splitlines()
    assert ".zip" not in pyspark_file and ".zip" not in py4j_file
    assert Path(pyspark_file) == Path(pyspark.__file__)
    # Still on the path, behind the installation: where pyspark is not installed they serve.
    assert last_entry in {str(zip_file) for zip_file in bundled}


def test_the_daemons_workers_build_arrow_arrays_without_pandas():
    """pyarrow asks whether what it is given is one of pandas' and, pandas not found, does
    without: the workers never import it (nor pay for it)."""
    probe = ("import kafka_rebalance.pipeline.logparse.worker_daemon as d; d.warm(); import sys, pyarrow as pa\n"
             "assert pa.array([1, None]).to_pylist() == [1, None]\n"
             "assert pa.array([{'a': 'x'}], pa.struct([('a', pa.string())])).to_pylist() == [{'a': 'x'}]\n"
             "try:\n    import pandas\nexcept ModuleNotFoundError:\n    print('no pandas', 'pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "no pandas False"


def test_the_daemons_workers_import_nothing_more_for_a_scan_task_and_a_story_task(tmp_path):
    """What a task imports on first use, each forked worker imports again on its first job (the
    story's first ``Table.group_by`` alone imported pyarrow's query engine: 0.2 s a worker)."""
    log = Path(__file__).resolve().parents[2] / "data" / "logs" / "broker-3.9.log"
    probe = f"""
import sys, time
import kafka_rebalance.pipeline.logparse.worker_daemon as daemon
daemon.warm(ahead=True)
from kafka_rebalance.pipeline.logparse import exchange, scan
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES
from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE
before = set(sys.modules)
out = {str(tmp_path)!r}
rows = list(exchange.read_split(scan.Split({str(log)!r}), 0, "default", "broker.log", 1, out + "/events",
                                syslog=SyslogReference(int(time.time() * 1000))))
told = list(exchange.tell_received(rows, DEFAULT_STORM_RULE, 1, out + "/events",
                                   {{table: out + "/" + table for table in STORY_TABLES}}, "00000"))
assert any(finding for finding, _ in told), "the log tells at least one group's story"
print(sorted(set(sys.modules) - before))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
