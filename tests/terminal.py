"""Run the command line as a user does: stderr (or stdout) on a pseudo-terminal, the other in a
pipe, and collect what each received."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from dataclasses import dataclass

JVM_NOISE = ("WARNING: Using incubator modules", "jdk.incubator.vector", "log4j", "WARN NativeCodeLoader",
             "Setting default log level")


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def run_on_terminal(args: list[str], env: dict[str, str] | None = None, timeout: float = 900,
                    columns: int = 100) -> Run:
    """``kafka-rebalance ARGS`` with stderr on a pseudo-terminal of ``columns`` columns and stdout
    in a pipe."""
    master, slave = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "kafka_rebalance.cli", *args], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=slave, env={**os.environ, **(env or {})})
    os.close(slave)
    received: list[bytes] = []
    out_chunks: list[bytes] = []
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), False)
    open_ends: list[int] = [master, process.stdout.fileno()]
    deadline = time.monotonic() + timeout
    while open_ends:
        if time.monotonic() > deadline:
            process.kill()
            raise TimeoutError(f"kafka-rebalance {' '.join(args)} took over {timeout} s")
        ready, _, _ = select.select(open_ends, [], [], 0.5)
        for end in ready:
            try:
                data = os.read(end, 65536)
            except OSError:  # the terminal's other side closed: the process is gone
                data = b""
            except BlockingIOError:
                continue
            if not data:
                open_ends.remove(end)
            (received if end == master else out_chunks).append(data)
        if not ready and process.poll() is not None:
            break
    os.close(master)
    return Run(process.wait(), b"".join(out_chunks).decode(errors="replace"),
               b"".join(received).decode(errors="replace"))
