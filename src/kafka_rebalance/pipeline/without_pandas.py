"""The logs command's processes go without pandas: nothing the command runs needs it (its tables
are Arrow tables, its report is computed with pyarrow.compute and numpy), but pyarrow imports
it, when it can, the first time it builds or converts an array, only to ask whether what it was
given is one of pandas' (``pa.array``, ``pa.scalar``, ...). That import is 0.23 s of a paste's
1 s and 0.6 CPU-s of a Spark worker's start. Refused, pyarrow does without it.

Refusing it is what keeps it out: pyarrow's own calls that would import it are everywhere on
the paste path (reading the log into arrays, the story's tables), so avoiding them one by one
would hold only until the next such call. Where pandas is already imported refusing changes
nothing. In a process that goes on after the refusal ends, pyarrow keeps its answer that pandas
is missing for its "is this pandas'?" questions until something converts to pandas (which
imports it then): so the refusal is for processes that run the logs command and end (the
command line's ``logs``), and for the Spark worker daemons of ``logs``, ``lab`` and ``soak``,
whose tasks build Arrow tables only; not for a library's caller."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Iterator
from contextlib import contextmanager


class PandasRefused(importlib.abc.MetaPathFinder):
    """A finder (first on ``sys.meta_path``) under which ``import pandas`` fails as if pandas
    were not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"no {name} in the logs command's processes", name=name)


@contextmanager
def without_pandas() -> Iterator[None]:
    """pandas refused while the block runs (``PandasRefused``), unless it is imported already."""
    if "pandas" in sys.modules:
        yield
        return
    refusal = PandasRefused()
    sys.meta_path.insert(0, refusal)
    try:
        yield
    finally:
        sys.meta_path.remove(refusal)
