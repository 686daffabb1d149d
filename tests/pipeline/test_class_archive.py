"""The driver JVM's class archive (Class Data Sharing): recorded by a first session, adopted
once its writer is gone, then mapped by every later session; switched off by the environment;
removed once its installation is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from kafka_rebalance.pipeline import spark as spark_module
from kafka_rebalance.pipeline.spark import CLASS_ARCHIVE_ENV, class_archive_options, prune_archives


@pytest.fixture
def java_present(monkeypatch):
    if spark_module.shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no java")
    monkeypatch.delenv(CLASS_ARCHIVE_ENV, raising=False)


def _gone_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def test_a_first_session_records_the_archive_under_its_own_name(tmp_path, java_present):
    options = class_archive_options(tmp_path)
    assert f"-XX:ArchiveClassesAtExit={tmp_path}/spark-classes-" in options
    assert options.split()[0].endswith(f".{os.getpid()}.tmp")
    assert "-Xlog:cds=off" in options


def test_a_written_archive_is_adopted_once_its_writer_is_gone(tmp_path, java_present):
    recorded = class_archive_options(tmp_path).split()[0].split("=", 1)[1]
    stem = os.path.basename(recorded).split(".")[0]
    finished = tmp_path / f"{stem}.{_gone_pid()}.tmp"
    finished.write_bytes(b"archive")
    running = tmp_path / f"{stem}.{os.getpid()}.tmp"  # this process: still writing
    running.write_bytes(b"half")
    settled = time.time() - spark_module.ARCHIVE_SETTLE_SECONDS - 5
    for path in (finished, running):
        os.utime(path, (settled, settled))
    options = class_archive_options(tmp_path)
    assert options.split()[0] == f"-XX:SharedArchiveFile={tmp_path / (stem + '.jsa')}"
    assert (tmp_path / f"{stem}.jsa").read_bytes() == b"archive"
    assert running.exists() and not finished.exists()


def test_one_session_records_at_a_time(tmp_path, java_present):
    """While one session records (or its archive settles), others start without recording:
    every recording is ~150 MB written as its JVM exits."""
    stem = os.path.basename(class_archive_options(tmp_path).split()[0].split("=", 1)[1]).split(".")[0]
    (tmp_path / f"{stem}.{_gone_pid()}.tmp").write_bytes(b"just written")
    assert class_archive_options(tmp_path) == ""


def test_the_environment_switches_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv(CLASS_ARCHIVE_ENV, "off")
    assert class_archive_options(tmp_path) == ""
    assert not list(tmp_path.iterdir())


def test_each_installation_and_profile_has_its_own_archive(tmp_path, java_present, monkeypatch):
    """The JVM refuses an archive recorded with another class path: a second virtualenv (another
    PySpark folder) must record its own, not find one it cannot use; ``logs`` sessions keep theirs."""
    def archive(profile: str = "") -> str:
        return os.path.basename(class_archive_options(tmp_path, profile).split()[0].split("=", 1)[1]).split(".")[0]

    here, for_logs = archive(), archive("logs")
    assert for_logs == f"{here}-logs"
    monkeypatch.setattr(pyspark, "__file__", str(tmp_path / "other-venv" / "pyspark" / "__init__.py"))
    assert archive() != here


def test_the_archives_of_an_installation_that_is_gone_are_removed(tmp_path, java_present):
    """A deleted virtualenv (a test suite's fresh clone) leaves archives no session can use: the
    next session anywhere removes them, and keeps those of installations still there."""
    here = os.path.basename(class_archive_options(tmp_path).split()[0].split("=", 1)[1]).split(".")[0]
    assert (tmp_path / f"{here}.source").read_text().strip() == str(Path(pyspark.__file__).resolve().parent)
    gone = "spark-classes-0123456789ab"
    (tmp_path / f"{gone}.source").write_text(str(tmp_path / "deleted-venv" / "pyspark") + "\n")
    left = [tmp_path / name for name in (f"{gone}.jsa", f"{gone}-logs.jsa", f"{gone}.{_gone_pid()}.tmp",
                                         f"{gone}-logs.{_gone_pid()}.tmp")]
    for path in left:
        path.write_bytes(b"archive")
    kept = tmp_path / f"{here}.jsa"
    kept.write_bytes(b"archive")
    removed = prune_archives(tmp_path)
    assert sorted(removed) == sorted([*left, tmp_path / f"{gone}.source"])
    assert kept.exists() and (tmp_path / f"{here}.source").exists()
    (tmp_path / f"{gone}.source").write_text(str(tmp_path / "deleted-venv" / "pyspark") + "\n")
    left[0].write_bytes(b"archive")
    class_archive_options(tmp_path)  # every session prunes as it starts
    assert not left[0].exists() and kept.exists()


def test_archives_naming_no_installation_are_removed_once_a_week_old(tmp_path):
    """Recorded before archives named their installation: kept while recent or being written."""
    old, recent, writing = (tmp_path / name for name in (
        "spark-classes-aaaaaaaaaaaa.jsa", "spark-classes-bbbbbbbbbbbb-logs.jsa", f"spark-classes-cccccccccccc.{os.getpid()}.tmp"))
    for path in (old, recent, writing):
        path.write_bytes(b"archive")
    week = time.time() - spark_module.UNNAMED_ARCHIVE_DAYS * 86400 - 60
    for path in (old, writing):
        os.utime(path, (week, week))
    assert prune_archives(tmp_path) == [old]
    assert recent.exists() and writing.exists()
