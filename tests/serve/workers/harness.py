"""Client worker processes for the broker tests: each is one consumer (kafka-python, aiokafka,
confluent-kafka or KafkaJS) in its own process, speaking JSON lines on stdout (see
kafka_python_worker.py), stopped by its pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PYTHON_WORKERS = {
    "kafka-python": HERE / "kafka_python_worker.py",
    "aiokafka": HERE / "aiokafka_worker.py",
    "confluent-kafka": HERE / "confluent_worker.py",
}
KAFKAJS_DIR = ROOT / "tests" / "serve" / "kafkajs"


class Worker:
    """A consumer process and what it has reported."""

    def __init__(self, client: str, config: dict[str, object]):
        self.name = str(config["client_id"])
        self.config = config
        if client == "kafkajs":
            command = ["node", str(KAFKAJS_DIR / "worker.js"), json.dumps(config)]
        else:
            command = [sys.executable, str(PYTHON_WORKERS[client]), json.dumps(config)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env, start_new_session=True)
        self.assignment: list[int] = []
        self.history: list[tuple[float, int | None, list[int]]] = []  # (monotonic s, generation, partitions)
        self.records: list[tuple[int, int]] = []
        self.commits: dict[int, int] = {}
        self.revocations: list[list[int]] = []  # partitions revoked, per listener call
        self.generations: set[int] = set()  # every generation reported, by polls or by the listener
        self.closed = False
        self.ready = threading.Event()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if isinstance(event.get("g"), int):
                    self.generations.add(event["g"])
                if "a" in event:
                    self.assignment = sorted(event["a"])
                    self.history.append((time.monotonic(), event.get("g"), self.assignment))
                elif "r" in event:
                    self.records.extend(tuple(r) for r in event["r"])
                elif "revoked" in event:
                    self.revocations.append(sorted(event["revoked"]))
                elif "c" in event:
                    self.commits.update({int(p): o for p, o in event["c"].items()})
                elif "closed" in event:
                    self.closed = True
                elif "ready" in event:
                    self.ready.set()

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def close(self, timeout_s: float = 15) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write("close\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout_s)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def start(workers: list[Worker], timeout_s: float = 30) -> None:
    """Wait until every worker is built, then let them all join at once."""
    for w in workers:
        if not w.ready.wait(timeout_s):
            pytest.fail(f"consumer {w.name} did not start")
    for w in workers:
        w.go()


def wait_until(condition, timeout_s: float, step_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step_s)
    return bool(condition())


def assignments(workers: list[Worker]) -> dict[str, list[int]]:
    return {w.name: list(w.assignment) for w in workers}


def one_owner_each(workers: list[Worker], partitions: int, balanced: bool = True) -> bool:
    """Every partition owned by exactly one of ``workers``, and (if ``balanced``) their counts
    differ by at most one."""
    owned = assignments(workers)
    flat = sorted(p for parts in owned.values() for p in parts)
    sizes = [len(parts) for parts in owned.values()]
    return flat == list(range(partitions)) and (not balanced or max(sizes) - min(sizes) <= 1)


def settled(workers: list[Worker], partitions: int, quiet_s: float, timeout_s: float) -> dict[str, list[int]] | None:
    """The assignment once every partition has one owner, balanced, unchanged for ``quiet_s``."""
    deadline = time.monotonic() + timeout_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        snapshot = assignments(workers)
        if snapshot != last:
            last, since = snapshot, time.monotonic()
        if one_owner_each(workers, partitions) and time.monotonic() - since >= quiet_s:
            return snapshot
        time.sleep(0.05)
    return None


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``kafka-rebalance`` from this checkout's source in its own process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", "from kafka_rebalance.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)
