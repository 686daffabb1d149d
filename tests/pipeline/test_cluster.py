"""The same sweep gives the same tables on local Spark and on a standalone master + workers
started here on 127.0.0.1 (and stopped by their own pids), written to the S3 server; so does
``logs`` reading from and writing to it, on workers that share no folder (each its own work and local
directories: the events reach the story tasks through Spark's shuffle, the tables the bucket)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from s3server import free_port, port_open
from spark_commands import SMALL_SWEEP

from tests.conftest import TEST_SYSLOG

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

SWEEP = SMALL_SWEEP  # two scenarios under the classic strategies, two seeds: 16 runs
TABLES = {
    "simulations": ["run_id"],
    "rebalances": ["run_id", "start_ms", "generation"],
    "ownership": ["run_id", "partition", "start_ms", "member"],
    "moves": ["run_id", "partition", "acquired_ms"],
}


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


WORKERS = 2


@pytest.fixture(scope="module")
def standalone(s3_server, tmp_path_factory):
    """A master and ``WORKERS`` workers of one core each; every worker has its own work and
    local directories and the S3 server's variables, as machines of a cluster would."""
    import pyspark

    root = tmp_path_factory.mktemp("standalone")
    spark_home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_NO_DAEMONIZE="1", **s3_server.env())
    spark_class = str(spark_home / "bin" / "spark-class")
    master_port, master_ui = free_port(), free_port()
    processes: list[subprocess.Popen] = []
    logs = []
    try:
        master_log = (root / "master.log").open("w")
        logs.append(master_log)
        processes.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(master_port),
             "--webui-port", str(master_ui)], env=env, stdout=master_log, stderr=subprocess.STDOUT))
        wait_for(lambda: port_open(master_port), 90, "the Spark master")
        url = f"spark://127.0.0.1:{master_port}"
        worker_logs = []
        for number in range(WORKERS):
            home = root / f"worker-{number}"
            (home / "local").mkdir(parents=True)
            worker_log = (root / f"worker-{number}.log").open("w")
            logs.append(worker_log)
            worker_logs.append(root / f"worker-{number}.log")
            processes.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                 "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(home / "work")],
                env=dict(env, SPARK_WORKER_DIR=str(home / "work"), SPARK_LOCAL_DIRS=str(home / "local")),
                cwd=home, stdout=worker_log, stderr=subprocess.STDOUT))
        wait_for(lambda: (root / "master.log").read_text(errors="replace").count("Registering worker") >= WORKERS,
                 90, "the workers to register")
        yield url, worker_logs
    finally:
        for process in reversed(processes):  # workers first, then master: only the pids started here
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for log in logs:
            log.close()


def read_table(out: Path, name: str) -> pd.DataFrame:
    frame = pd.read_parquet(out / name)
    return frame.sort_values(TABLES[name]).reset_index(drop=True)


def test_same_tables_on_local_and_standalone(spark, s3_server, standalone, tmp_path):
    """The cluster's tasks write their parts of the tables to the S3 server (``--out s3://``), the
    driver its own (``simulations``, the report): the same tables as local Spark's in a folder."""
    from kafka_rebalance.pipeline.lab import run_lab
    from kafka_rebalance.pipeline.sweep import load_sweep
    from tests.pipeline.test_logs_s3 import BUCKET, read_stored_table

    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(SWEEP)
    local_out = tmp_path / "local"
    run_lab(spark, load_sweep(sweep_file), str(local_out), progress=False)

    url, worker_logs = standalone
    s3_server.upload(BUCKET, {})
    command = [sys.executable, "-c", "from kafka_rebalance.cli import main; main()", "lab", str(sweep_file),
               "--master", url, "--out", f"s3://{BUCKET}/cluster-lab", "--tasks", "3"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable, **s3_server.env()))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"s3://{BUCKET}/cluster-lab/report.html" in done.stdout
    assert all("Asked to launch executor" in log.read_text(errors="replace") for log in worker_logs)
    stored = s3_server.keys(BUCKET, "cluster-lab/")
    assert "cluster-lab/report.html" in stored and not [key for key in stored if "/.staging-" in key]
    assert len([key for key in stored if key.startswith("cluster-lab/ownership/part-")]) == 3  # a part a task

    for name in TABLES:
        local = read_table(local_out, name)
        cluster = read_stored_table(s3_server, "cluster-lab", name).sort_values(TABLES[name]).reset_index(drop=True)
        assert len(local) > 0
        pd.testing.assert_frame_equal(local, cluster, check_like=False)


def test_logs_from_s3_on_workers_sharing_no_folder(s3_server, standalone, tmp_path):
    """``logs s3://... --out s3://...`` on the cluster: the tables the local engine makes of
    the same files, every one of them."""
    from kafka_rebalance.pipeline.logs import run_logs
    from tests.pipeline.test_logs import COMPARED, EVERY_COLUMN, _rows
    from tests.pipeline.test_logs_s3 import BUCKET, _by_name, read_stored_table

    objects = {f"cluster-logs/{path.name}": path.read_bytes() for path in COMPARED}
    s3_server.upload(BUCKET, objects)
    local_in = tmp_path / "in"
    local_in.mkdir()
    for path in COMPARED:
        (local_in / path.name).write_bytes(path.read_bytes())
    run_logs(None, [str(local_in)], str(tmp_path / "local"), engine="local", syslog=TEST_SYSLOG)

    url, worker_logs = standalone
    driver = tmp_path / "driver"
    (driver / "local").mkdir(parents=True)
    command = [sys.executable, "-c", "from kafka_rebalance.cli import main; main()", "logs",
               f"s3://{BUCKET}/cluster-logs/", "--master", url, "--out", f"s3://{BUCKET}/cluster-out", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=driver,
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_DIRS=str(driver / "local"),
                                   **s3_server.env()))
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"engine": "spark"' in done.stdout
    launched = [log.read_text(errors="replace").count("Asked to launch executor") for log in worker_logs]
    assert all(launched), launched  # an executor on every worker

    for table, skipped in EVERY_COLUMN.items():
        stored = _by_name(read_stored_table(s3_server, "cluster-out", table))
        local = _by_name(pd.read_parquet(tmp_path / "local" / table))
        columns = [c for c in local.columns if c not in skipped]
        assert list(stored.columns) == list(local.columns)
        assert _rows(stored, columns) == _rows(local, columns), table
    assert not [key for key in s3_server.keys(BUCKET, "cluster-out/") if "/.staging-" in key]
