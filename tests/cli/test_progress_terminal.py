"""Progress on a terminal: a bar on stderr with done/total and the time left, only when stderr is a
terminal, never with --quiet, never in a pipe; the answer on stdout stays plain in a pipe."""

from __future__ import annotations

from pathlib import Path

from tests.terminal import run_on_terminal

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"


def test_logs_in_process_shows_bytes_read_on_a_terminal(tmp_path):
    run = run_on_terminal(["logs", str(DATA), "--out", str(tmp_path / "out")])
    assert run.code == 0, run.stderr
    assert "reading logs" in run.stderr and "ETA" in run.stderr
    size = sum(p.stat().st_size for p in DATA.iterdir()) / 1000
    assert f"{size:.1f}/{size:.1f} kB" in run.stderr  # the bar ends full: every byte counted
    assert "Group broker-3.9.log/billing: 2 rebalances" in run.stdout and "\x1b[" not in run.stdout


def test_quiet_and_a_pipe_show_no_bar(tmp_path):
    quiet = run_on_terminal(["logs", str(DATA), "--out", str(tmp_path / "out"), "--quiet"])
    assert quiet.code == 0 and "reading logs" not in quiet.stderr and quiet.stderr.strip() == ""
    import subprocess
    import sys

    piped = subprocess.run([sys.executable, "-m", "kafka_rebalance.cli", "logs", str(DATA), "--out",
                            str(tmp_path / "out")], capture_output=True, text=True, check=True)
    assert piped.stderr == "" and "Group broker-3.9.log/billing" in piped.stdout
