"""Every process of ours that builds the logs tables takes Arrow's buffers from the C library's
allocator (``pipeline.arrow_memory``: on pyarrow's default, mimalloc, a story task spent a third
of its CPU more), unless the user chose an allocator. Each case runs in a fresh interpreter:
the choice is per process, and this one's may have been made by an earlier test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LOG = Path(__file__).resolve().parents[1] / "data" / "logs" / "broker-3.9.log"
BACKEND = "import pyarrow; print(pyarrow.default_memory_pool().backend_name)"


def _backend_after(code: str, **env: str) -> str:
    """The allocator pyarrow's default pool uses once ``code`` has run in a fresh interpreter."""
    clean = {key: value for key, value in os.environ.items() if key != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run([sys.executable, "-c", f"{code}\n{BACKEND}"], capture_output=True, text=True,
                          env={**clean, **env}, check=True, timeout=120)
    return done.stdout.strip().splitlines()[-1]


def test_pyarrows_own_default_is_not_the_c_librarys():
    """What the rest of this file changes: without it, a process allocates from mimalloc."""
    assert _backend_after("pass") != "system"


def test_the_choice_is_made_once_and_keeps_a_users_own():
    code = "from kafka_rebalance.pipeline.arrow_memory import use_system_allocator; use_system_allocator()"
    assert _backend_after(code) == "system"
    assert _backend_after(code, ARROW_DEFAULT_MEMORY_POOL="jemalloc") == "jemalloc"


def test_the_worker_daemon_forks_its_workers_with_it():
    """``serve`` (every command's daemon on a local master) chooses before PySpark's loop forks."""
    code = ("import pyspark.daemon, pyarrow\n"
            "pyspark.daemon.manager = lambda: print(pyarrow.default_memory_pool().backend_name)\n"
            "from kafka_rebalance.pipeline.worker_daemon import serve; serve()")
    assert _backend_after(code) == "system"


@pytest.mark.parametrize("task", ["scan", "story"])
def test_a_logs_task_chooses_it_where_pyspark_forked_the_worker(tmp_path, task):
    """On a cluster PySpark's own daemon forks the workers: each task makes the choice itself."""
    scan_task = (f"list(exchange.read_split(scan.Split({str(LOG)!r}), 0, 'default', 'broker.log', 1, "
                 f"{str(tmp_path / 'events')!r}, syslog=SyslogReference(0)))")
    story_task = (f"list(exchange.tell_received([], DEFAULT_STORM_RULE, 1, {str(tmp_path / 'events')!r}, "
                  f"{{t: {str(tmp_path)!r} + '/' + t for t in STORY_TABLES}}, '00000'))")
    code = ("from kafka_rebalance.pipeline.logparse import exchange, scan\n"
            "from kafka_rebalance.pipeline.logparse.layout import SyslogReference\n"
            "from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES\n"
            "from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE\n"
            f"{scan_task if task == 'scan' else story_task}")
    assert _backend_after(code) == "system"


def test_the_logs_command_chooses_it_for_the_in_process_engine_and_the_report(tmp_path):
    code = ("from kafka_rebalance.pipeline.logs import run_logs\n"
            "from kafka_rebalance.pipeline.logparse.layout import SyslogReference\n"
            f"run_logs(None, [{str(LOG)!r}], {str(tmp_path / 'out')!r}, engine='local', syslog=SyslogReference(0))")
    assert _backend_after(code) == "system"
