"""The edges of the pipeline: which files to read, and an output directory that is filled
atomically.

Every table and file of a run is first written under a hidden staging directory inside
``--out`` and moved into place only when the whole run has succeeded, so an interrupted run
never leaves a table that looks complete (Spark and pandas skip names starting with ``.``).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from kafka_rebalance.model import InvalidInput

# Names inside a directory of logs that are never logs: hidden files, Spark/Hadoop markers.
_SKIPPED_PREFIXES = (".", "_")


def has_scheme(path: str) -> bool:
    """hdfs://, s3a://, file:// ...: handed to Spark as given."""
    return "://" in path


def expand_log_paths(paths: Iterable[str]) -> list[str]:
    """Files to read for the given log paths: files as given (plain, rotated or .gz),
    directories searched recursively. A missing path or a directory without files is bad input.
    """
    files: list[str] = []
    for given in paths:
        if has_scheme(given):
            files.append(given)
            continue
        path = Path(given)
        if not path.exists():
            raise FileNotFoundError(2, "no such file", given)
        if path.is_dir():
            found = sorted(
                str(p) for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(_SKIPPED_PREFIXES) for part in p.relative_to(path).parts)
            )
            if not found:
                raise InvalidInput(given, "directory contains no log files")
            files.extend(found)
        else:
            files.append(str(path))
    if not files:
        raise InvalidInput("FILE", "no log files given")
    return files


class StagedOutput:
    """An output directory whose entries appear only on ``commit``.

    ``path(name)`` gives where to write an entry during the run; ``commit`` replaces each
    entry of the final directory by its staged version (a rename, so readers see either the
    old or the new entry), then removes the staging directory. ``discard`` removes it.
    """

    def __init__(self, out_dir: str | os.PathLike[str]):
        self.final = Path(out_dir)
        if self.final.exists() and not self.final.is_dir():
            raise InvalidInput("--out", f"{self.final} exists and is not a directory")
        self.final.mkdir(parents=True, exist_ok=True)
        self.staging = self.final / f".staging-{uuid.uuid4().hex[:12]}"
        self.staging.mkdir()
        self._names: list[str] = []

    def path(self, name: str) -> Path:
        if name not in self._names:
            self._names.append(name)
        target = self.staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_text(self, name: str, text: str) -> Path:
        target = self.path(name)
        target.write_text(text, encoding="utf-8")
        return target

    def commit(self) -> None:
        for name in self._names:
            staged = self.staging / name
            if not staged.exists():
                continue
            final = self.final / name
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.is_dir() and not final.is_symlink():
                # A directory cannot be replaced by rename: move the old one aside first, so
                # the new table is in place before the old one is deleted.
                retired = self.staging / f".retired-{name.replace('/', '_')}"
                final.rename(retired)
            os.replace(staged, final)
        shutil.rmtree(self.staging, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> StagedOutput:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()
