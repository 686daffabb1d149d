"""What a command writes by default in the current folder is ignored by the repository."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from kafka_rebalance.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", ["lab", "logs", "soak"])
def test_default_output_folders_are_ignored(command: str) -> None:
    found = cli.get_command(click.Context(cli), command)
    assert found is not None
    options = {p.name: p for p in found.params if isinstance(p, click.Option)}
    default = options["out_dir"].default
    assert isinstance(default, str) and "/" not in default
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert f"/{default}/" in ignored
    assert "/lab-out/" in ignored  # make run's
