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
