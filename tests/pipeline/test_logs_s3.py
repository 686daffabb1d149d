"""``logs`` with inputs and ``--out`` on a real S3-compatible server (moto's, started on
127.0.0.1 by ``conftest.s3_server``): each Spark task opens its own byte ranges from the store,
the tables land in the store, and they are the tables of the same files read locally. Bad
stores (missing bucket, denied key, unreachable endpoint) are one-line errors that leave
nothing in ``--out``."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import TEST_SYSLOG
from tests.pipeline.test_logs import COMPARED, DATA, EVERY_COLUMN, _rows

BUCKET = "incident"
CLI = "from kafka_rebalance.cli import main; main()"
# Compressed in the bucket (and in the local copy): .gz objects are read like .gz files.
GZIPPED = {"broker-3.9.log", "spring-boot-billing.log"}


def _objects() -> dict[str, bytes]:
    """The test logs as a prefix of a bucket, with what a listing must skip: a folder marker,
    hidden and underscore names, and a binary object."""
    files = {}
    for path in COMPARED:
        body = path.read_bytes()
        if path.name in GZIPPED:
            files[f"logs/{path.name}.gz"] = gzip.compress(body)
        else:
            files[f"logs/{'nested/' if path.name.startswith('client') else ''}{path.name}"] = body
    files["logs/empty-folder/"] = b""
    files["logs/.hidden.log"] = (DATA / "broker-3.9.log").read_bytes()
    files["logs/_SUCCESS"] = b""
    files["logs/core.bin"] = bytes(range(256)) * 64
    return files


@pytest.fixture(scope="module")
def stored(s3_server, tmp_path_factory):
    """The objects in the bucket, and the same files in a local folder."""
    objects = _objects()
    s3_server.upload(BUCKET, objects)
    local = tmp_path_factory.mktemp("same-files")
    for key, body in objects.items():
        if not key.endswith("/"):
            (local / key).parent.mkdir(parents=True, exist_ok=True)
            (local / key).write_bytes(body)
    return local / "logs"


def read_stored_table(s3_server, prefix: str, table: str) -> pd.DataFrame:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    env = s3_server.env()
    filesystem = pafs.S3FileSystem(access_key=env["AWS_ACCESS_KEY_ID"], secret_key=env["AWS_SECRET_ACCESS_KEY"],
                                   region=env["AWS_REGION"], endpoint_override=s3_server.endpoint)
    return pq.read_table(f"{BUCKET}/{prefix}/{table}", filesystem=filesystem).to_pandas()


def _by_name(frame: pd.DataFrame) -> pd.DataFrame:
    """``source`` as the file's name (an s3:// URL in one run, a local path in the other); so too
    ``cluster`` (an input read on its own is a cluster named after it) and ``input``."""
    frame = frame.copy()
    for column in ("source", "sources", "cluster", "input"):
        if column in frame.columns:
            frame[column] = frame[column].map(
                lambda v: None if v is None else [Path(s).name for s in v] if not isinstance(v, str) else Path(v).name)
    return frame


@contextmanager
def aws_variables(s3_server, spark) -> Iterator[pytest.MonkeyPatch]:
    """The standard variables, for the driver and for Spark's Python workers (which take theirs
    from the SparkContext's environment, as executors of a cluster from theirs)."""
    patch = pytest.MonkeyPatch()
    env = s3_server.env()
    for name, value in env.items():
        patch.setenv(name, value)
    before = dict(spark.sparkContext.environment)
    spark.sparkContext.environment.update(env)
    try:
        yield patch
    finally:
        patch.undo()
        spark.sparkContext.environment.clear()
        spark.sparkContext.environment.update(before)


@pytest.fixture(scope="module")
def from_s3_on_spark(s3_server, stored, spark, tmp_path_factory):
    """``logs s3://incident/logs/ --out s3://incident/out/spark`` on Spark, splits of a few
    thousand bytes (so tasks open byte ranges in the middle of objects), and the same files
    read locally."""
    from kafka_rebalance.pipeline import logs

    with aws_variables(s3_server, spark) as patch:
        patch.setattr(logs, "MIN_SPLIT_BYTES", 2000)
        patch.setattr(logs, "MAX_SPLIT_BYTES", 2000)
        remote = logs.run_logs(spark, [f"s3://{BUCKET}/logs/"], f"s3://{BUCKET}/out/spark", engine="spark",
                               progress=False, syslog=TEST_SYSLOG)
    local_out = tmp_path_factory.mktemp("local-out")
    local = logs.run_logs(None, [str(stored)], str(local_out), engine="local", syslog=TEST_SYSLOG)
    return remote, local, local_out


@pytest.mark.spark
@pytest.mark.parametrize("table", sorted(EVERY_COLUMN))
def test_spark_reads_s3_and_writes_the_local_tables_there(s3_server, from_s3_on_spark, table):
    remote, local, local_out = from_s3_on_spark
    stored_frame = _by_name(read_stored_table(s3_server, "out/spark", table))
    local_frame = _by_name(pd.read_parquet(local_out / table))
    assert list(stored_frame.columns) == list(local_frame.columns)
    columns = [c for c in local_frame.columns if c not in EVERY_COLUMN[table]]
    assert _rows(stored_frame, columns) == _rows(local_frame, columns)
    if table in ("rebalances", "member_events", "events", "causes"):
        assert len(local_frame) > 0


@pytest.mark.spark
def test_s3_run_summary_listing_and_no_staging_left(s3_server, from_s3_on_spark):
    remote, local, _ = from_s3_on_spark
    for key in ("lines_read", "lines_matched", "groups", "rebalances", "open_rebalances", "client_rebalances",
                "member_failures", "storms", "lines_unrecognised", "files"):
        assert remote.summary[key] == local.summary[key], key
    # The listing skipped what a folder's search skips, the binary object with a reason.
    assert [Path(s["path"]).name for s in remote.summary["skipped_inputs"]] == ["core.bin"]
    assert remote.summary["skipped_inputs"][0]["path"] == f"s3://{BUCKET}/logs/core.bin"
    assert {c["source"] for c in remote.summary["coverage"]} >= {f"s3://{BUCKET}/logs/broker-3.9.log.gz"}
    written = s3_server.keys(BUCKET, "out/spark/")
    assert "out/spark/summary.json" in written and "out/spark/report.html" in written
    assert not [key for key in written if "/.staging-" in key]
    assert remote.out_dir == f"s3://{BUCKET}/out/spark" and remote.report.endswith("/report.html")


@pytest.mark.spark
def test_a_paste_on_spark_goes_through_the_store_and_is_named_stdin(s3_server, spark, tmp_path):
    """The paste is put in --out's staging area, where every task can read it, and is ``-``."""
    from kafka_rebalance.pipeline.logs import run_logs

    paste = (DATA / "broker-3.9.log").read_text()
    with aws_variables(s3_server, spark):
        remote = run_logs(spark, ["-"], f"s3://{BUCKET}/out/paste", engine="spark", progress=False, stdin_text=paste, syslog=TEST_SYSLOG)
    local = run_logs(None, ["-"], str(tmp_path / "local"), engine="local", stdin_text=paste, syslog=TEST_SYSLOG)
    assert [c["source"] for c in remote.summary["coverage"]] == ["-"]
    for key in ("lines_read", "lines_matched", "groups", "rebalances", "member_failures"):
        assert remote.summary[key] == local.summary[key] > 0, key
    assert set(read_stored_table(s3_server, "out/paste", "events")["source"]) == {"-"}
    assert len(read_stored_table(s3_server, "out/paste", "rebalances")) == remote.summary["rebalances"]
    assert not [key for key in s3_server.keys(BUCKET, "out/paste/") if ".staging-" in key or "stdin" in key]


def run_cli(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI, "logs", *args], capture_output=True, text=True, timeout=300,
                          input=stdin, env={**os.environ, **env})


def test_local_engine_reads_and_writes_s3_too(s3_server, stored, tmp_path):
    done = run_cli(f"s3://{BUCKET}/logs/broker-3.9.log.gz", "--out", f"s3://{BUCKET}/out/local", "--json",
                   env=s3_server.env())
    assert done.returncode == 0, done.stderr
    assert '"engine": "local"' in done.stdout
    local = run_cli(str(stored / "broker-3.9.log.gz"), "--out", str(tmp_path / "out"), "--json", env={})
    remote_rebalances = read_stored_table(s3_server, "out/local", "rebalances")
    local_rebalances = pd.read_parquet(tmp_path / "out" / "rebalances")
    assert len(remote_rebalances) == len(local_rebalances) > 0
    assert local.returncode == 0
    assert "out/local/summary.json" in s3_server.keys(BUCKET, "out/local/")


@pytest.mark.parametrize(("inputs", "out", "key", "endpoint", "says"), [
    ("s3://no-such-bucket/logs/", "local", "admin", None, "no such bucket 'no-such-bucket'"),
    ("s3://incident/logs/", "s3://no-such-bucket/out", "admin", None, "--out: s3://no-such-bucket/out: no such bucket"),
    ("s3://incident/logs/", "local", "nobody", None, "ACCESS_DENIED"),
    ("s3://incident/logs/", "local", "lister", None, "ACCESS_DENIED"),
    ("local", "s3://incident/out/denied", "nobody", None, "ACCESS_DENIED"),
    ("s3://incident/logs/", "s3://incident/out/unreachable", "admin", "closed", "Could not connect"),
    ("s3://incident/no-such-prefix/", "local", "admin", None, "no such file"),
])
def test_bad_stores_are_one_line_errors_and_leave_nothing(s3_server, stored, tmp_path, inputs, out, key, endpoint,
                                                          says):
    from s3server import free_port

    local_out = tmp_path / "out"
    out_arg = str(local_out) if out == "local" else out
    input_arg = str(stored / "broker-3.9.log.gz") if inputs == "local" else inputs
    env = s3_server.env(key, f"http://127.0.0.1:{free_port()}" if endpoint == "closed" else None)
    done = run_cli(input_arg, "--out", out_arg, "--engine", "spark", env=env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert says in done.stderr, done.stderr
    assert not (local_out.exists() and any(local_out.iterdir()))
    assert s3_server.keys(BUCKET, "out/denied") == [] and s3_server.keys(BUCKET, "out/unreachable") == []


def test_soak_writes_its_tables_and_summary_to_a_store(s3_server, spark):
    """``soak --out s3://...``: each task writes its part of the tables to the store, the driver
    the summary, as on a disk; nothing of the staging area is left."""
    from kafka_rebalance.pipeline import soak

    s3_server.upload(BUCKET, {})
    with aws_variables(s3_server, spark):
        result = soak.run_soak(spark, 6, f"s3://{BUCKET}/soak", seed=4, tasks=2, progress=False)
    schedules = read_stored_table(s3_server, "soak", soak.SCHEDULES)
    assert schedules["schedule_index"].tolist() == list(range(6)) and result.schedules == 6
    assert len(read_stored_table(s3_server, "soak", soak.VIOLATIONS)) == result.violations
    keys = s3_server.keys(BUCKET, "soak/")
    assert "soak/summary.json" in keys and not [key for key in keys if "/.staging-" in key]
