"""``kafka-rebalance serve``: the bootstrap line first, a clean stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("kio")
pytestmark = pytest.mark.broker

SRC = Path(__file__).resolve().parents[2] / "src"


def test_prints_the_bootstrap_line_then_stops_on_sigterm():
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-m", "kafka_rebalance.cli", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        host, _, port = line.removeprefix("bootstrap ").strip().rpartition(":")
        assert line.startswith("bootstrap ") and host == "127.0.0.1" and int(port) > 0
        with socket.create_connection((host, int(port)), timeout=5):
            pass
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)
    assert proc.returncode == 0
    assert out == "" and err == ""


def test_a_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        done = subprocess.run([sys.executable, "-m", "kafka_rebalance.cli", "serve", "--port", str(port)],
                              capture_output=True, text=True, env=env, timeout=20)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("kafka-rebalance: --listen 127.0.0.1 --port") and done.stderr.count("\n") == 1
