"""Write a simulation's coordinator log in Kafka's GroupCoordinator format (``--log``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kafka_rebalance.protocol.logformat import formatter
from kafka_rebalance.protocol.logline import DEFAULT_EPOCH
from kafka_rebalance.sim.result import SimulationResult


def log_lines(run: SimulationResult, style: str | None = None) -> list[str]:
    """The log lines of a run; ``style`` defaults to the scenario's ``config.log_style``."""
    render = formatter(style or run.scenario.config.log_style)
    lines = []
    for logged in run.log_records:
        line = render.format(logged.record, broker_id=logged.broker_id, partition=logged.partition, epoch=DEFAULT_EPOCH)
        if line is not None:
            lines.append(line)
    return lines


def write_log(run: SimulationResult, path: str | Path, style: str | None = None) -> None:
    """Write the log atomically: a temporary file in the same directory, then a rename, so a
    failure never leaves a partial file behind."""
    target = Path(path)
    text = "".join(line + "\n" for line in log_lines(run, style))
    directory = target.parent if str(target.parent) else Path(".")
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
