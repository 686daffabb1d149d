"""The standby worker daemon (``pipeline.standby``), with this test in the JVM's place: it starts
the logs job's daemon module as PySpark's ``PythonWorkerFactory`` does (``python -m <module>
pyspark.worker``, the port read from its standard output, a connection per worker, the worker's
pid read back, standard input closed or SIGTERM to stop it), and looks at which process forked
the worker."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafka_rebalance.pipeline.logs import LOGS_WORKER_DAEMON
from kafka_rebalance.pipeline.spark import CLASS_ARCHIVE_ENV, STANDBY_SWITCH_ENV, daemon_interpreter_settings
from kafka_rebalance.pipeline.standby import STANDBY_ENV, Standby, start_standby

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="hands over with pidfd_open (Linux)")

DEADLINE_SECONDS = 30


def _jvm_environment(standby_path: str | None, **changes: str) -> dict[str, str]:
    """What the JVM gives its daemon: this process's environment, PySpark's two interpreter
    settings and the workers' secret."""
    env = {**os.environ, **daemon_interpreter_settings(), "PYTHON_WORKER_FACTORY_SECRET": "s3cret", **changes}
    if standby_path is not None:
        env[STANDBY_ENV] = standby_path
    return env


@contextmanager
def _standby() -> Iterator[Standby]:
    standby = start_standby(LOGS_WORKER_DAEMON, daemon_interpreter_settings())
    assert standby is not None
    try:
        yield standby
    finally:
        standby.stop()


@contextmanager
def _daemon(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The daemon module started as the JVM starts it, and the port it answered with."""
    daemon = subprocess.Popen([sys.executable, "-m", LOGS_WORKER_DAEMON, "pyspark.worker"], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert daemon.stdout is not None
        yield daemon, struct.unpack(">i", daemon.stdout.read(4))[0]
    finally:
        daemon.kill()
        daemon.wait(DEADLINE_SECONDS)


def _worker_parent(port: int) -> int:
    """Ask the daemon for a worker; the pid of the process that forked it."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_SECONDS) as connection:
        worker_pid = struct.unpack(">i", connection.makefile("rb").read(4))[0]
        stat = Path(f"/proc/{worker_pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _ended(process_pid: int) -> bool:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{process_pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_the_standby_becomes_the_daemon_and_ends_when_the_jvm_closes_its_input():
    with _standby() as standby, _daemon(_jvm_environment(standby.socket_path)) as (daemon, port):
        assert _worker_parent(port) == standby.process.pid  # the warm process forks the workers
        assert not Path(standby.socket_path).exists()  # one daemon start only
        assert daemon.stdin is not None
        daemon.stdin.close()  # the JVM's way of saying stop
        assert daemon.wait(DEADLINE_SECONDS) == 0
        assert _ended(standby.process.pid)


# A process that loses the first SIGTERM as PySpark's daemon can: its handler puts the default
# action back, and the SystemExit it then raises is lost when it runs in an at-fork callback.
LOSES_THE_FIRST_SIGTERM = """
import signal, time
signal.signal(signal.SIGTERM, lambda *_: signal.signal(signal.SIGTERM, signal.SIG_DFL))
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""
# The daemon process the JVM started, once the standby has its place (``hand_over``).
WAITS_FOR_THE_STANDBY = """
import signal, sys
from kafka_rebalance.pipeline.standby import wait_for_end
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
print("ready", flush=True)
wait_for_end(int(sys.argv[1]))
"""


def test_a_sigterm_the_standby_lost_is_passed_on_again_until_it_ends():
    target = subprocess.Popen([sys.executable, "-c", LOSES_THE_FIRST_SIGTERM], stdout=subprocess.PIPE)
    waiter = None
    try:
        assert target.stdout is not None and target.stdout.readline() == b"ready\n"
        waiter = subprocess.Popen([sys.executable, "-c", WAITS_FOR_THE_STANDBY, str(target.pid)],
                                  stdout=subprocess.PIPE)
        assert waiter.stdout is not None and waiter.stdout.readline() == b"ready\n"
        waiter.send_signal(signal.SIGTERM)  # before its handler is set: held, then passed on
        assert waiter.wait(DEADLINE_SECONDS) == 0
        assert target.wait(DEADLINE_SECONDS) == -signal.SIGTERM
    finally:
        for process in (target, waiter):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def test_the_jvms_sigterm_reaches_the_standby():
    with _standby() as standby, _daemon(_jvm_environment(standby.socket_path)) as (daemon, port):
        assert _worker_parent(port) == standby.process.pid
        daemon.send_signal(signal.SIGTERM)  # Process.destroy(), as SparkEnv.stop does
        daemon.wait(DEADLINE_SECONDS)
        assert _ended(standby.process.pid)


def test_a_daemon_started_with_other_interpreter_settings_starts_as_usual_and_the_standby_ends_with_stop():
    seed = "1" if os.environ.get("PYTHONHASHSEED", "0") != "1" else "2"
    with _standby() as standby, _daemon(_jvm_environment(standby.socket_path, PYTHONHASHSEED=seed)) as (daemon, port):
        assert _worker_parent(port) == daemon.pid  # refused: the daemon forks its own workers
        assert standby.process.poll() is None and Path(standby.socket_path).exists()
    assert standby.process.poll() is not None
    assert not Path(standby.socket_path).parent.exists()


def test_without_a_standby_the_daemon_starts_as_usual():
    with _daemon(_jvm_environment(None)) as (daemon, port):
        assert _worker_parent(port) == daemon.pid


PROBE_SESSION = """
import os, sys
from kafka_rebalance.pipeline.logs import LOGS_WORKER_DAEMON
from kafka_rebalance.pipeline.spark import build_session

spark = build_session("local[2]", "standby-probe", worker_daemon=LOGS_WORKER_DAEMON)

def parent_command(_):
    yield open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")[:4]

print(sorted(set(tuple(part.decode() for part in command) for command in
                 spark.sparkContext.parallelize(range(2), 2).mapPartitions(parent_command).collect())))
spark.stop()
"""


@pytest.mark.spark
@pytest.mark.parametrize("switch", ["on", "off"])
def test_a_local_session_built_as_logs_builds_it_has_its_workers_forked_by_the_standby(tmp_path, switch):
    """The path through Spark itself: ``spark.executorEnv`` reaches the daemon the JVM starts.
    ``KAFKA_REBALANCE_STANDBY=off``: the daemon PySpark starts forks them."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), CLASS_ARCHIVE_ENV: "off",  # no archive to record
           STANDBY_SWITCH_ENV: switch}
    done = subprocess.run([sys.executable, "-c", PROBE_SESSION], capture_output=True, text=True, env=env,
                          timeout=180, check=True)
    (parent,) = eval(done.stdout.strip().splitlines()[-1])  # one parent for both workers
    if switch == "on":
        assert parent[1:4] == ("-m", "kafka_rebalance.pipeline.standby", LOGS_WORKER_DAEMON)
    else:
        assert parent[1:4] == ("-m", LOGS_WORKER_DAEMON, "pyspark.worker")
