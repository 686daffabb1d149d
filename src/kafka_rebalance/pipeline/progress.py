"""Progress bars on stderr for long work: done/total, elapsed time and an estimate of the time
left. Only when stderr is a terminal (never in a pipe, a file or CI logs), and only one line that
is redrawn in place and removed at the end: nothing is printed per task or per file."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress

# Redraws per second: enough to look alive, few enough to cost nothing.
REFRESH_PER_SECOND = 4


def wanted(enabled: bool | None) -> bool:
    """``enabled`` as asked (``--quiet`` gives False), else whether stderr is a terminal."""
    return sys.stderr.isatty() if enabled is None else enabled


def progress_bar(unit: str) -> Progress:
    """A transient bar on stderr: description, bar, done/total ``unit``, elapsed, time left."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[ProgressColumn] = [TextColumn("[bold]{task.description}"), BarColumn()]
    if unit == "bytes":
        columns.append(DownloadColumn())
    else:
        columns += [MofNCompleteColumn(), TextColumn(unit)]
    columns += [TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=Console(file=sys.stderr), transient=True,
                    refresh_per_second=REFRESH_PER_SECOND)


@contextmanager
def bytes_progress(description: str, total: int, *, enabled: bool | None = None) -> Iterator[Callable[[int], None]]:
    """A bar of bytes read out of ``total``; the block is given a function that adds bytes read."""
    if not wanted(enabled) or total <= 0:
        yield lambda _read: None
        return
    progress = progress_bar("bytes")
    task = progress.add_task(description, total=total)

    def advance(read: int) -> None:
        progress.update(task, advance=read)

    with progress:
        yield advance
        progress.update(task, completed=total)
