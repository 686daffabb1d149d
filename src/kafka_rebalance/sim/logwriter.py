"""Write a simulation's coordinator log in Kafka's GroupCoordinator format (``--log``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kafka_rebalance.protocol.logformat import DEFAULT_EPOCH, format_record
from kafka_rebalance.sim.engine import SimulationRun


def log_lines(run: SimulationRun, style: str | None = None) -> list[str]:
    """The log lines of a run; ``style`` defaults to the scenario's ``config.log_style``."""
    style = style or run.scenario.config.log_style
    group = run.scenario.group
    lines = []
    for record, broker, partition in run.log_records:
        line = format_record(record, group=group, broker_id=broker, partition=partition, style=style, epoch=DEFAULT_EPOCH)
        if line is not None:
            lines.append(line)
    return lines


def write_log(run: SimulationRun, path: str | Path, style: str | None = None) -> None:
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
