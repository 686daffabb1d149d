"""The edges of the pipeline: which files to read, and an output directory that is filled
atomically; either may be a local path or a URL of a store ``pyarrow.fs`` knows (``s3://``,
``gs://``, ``hdfs://``, ``file://``).

Every table and file of a run is first written under a hidden staging directory inside
``--out`` and moved into place only when the whole run has succeeded, so an interrupted run
never leaves a table that looks complete (Spark, pandas and pyarrow skip names starting with
``.``). An object store cannot rename a directory at once: there the run's entries are copied
into place one object at a time, ``summary.json`` removed first and written last, so a run is
complete when its ``summary.json`` is there.

A URL is resolved by ``pyarrow.fs.FileSystem.from_uri`` in the process that reads or writes it
(the driver, or each Spark task): credentials and endpoints come from that process's standard
environment and configuration (for S3: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``, ``AWS_ENDPOINT_URL``, ``~/.aws``, an instance role), never from a command-line
flag. Only the URL travels between processes.
"""

from __future__ import annotations

import gzip
import io
import os
import queue
import re
import shutil
import threading
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_rebalance.model import InvalidInput

# Names inside a directory of logs that are never logs: hidden files, Spark/Hadoop markers.
_SKIPPED_PREFIXES = (".", "_")
# Requests to a store that do not depend on each other (sizes, first bytes) run this many at once.
STORE_REQUESTS_IN_FLIGHT = 16
# A read from a store fetches this much at once: fewer, larger requests cost a store less (an
# S3 server that reads the whole object for a ranged GET, as moto does, far less), and the
# reader holds at most two such chunks and the one being fetched.
STORE_READ_BYTES = 32 * 1024 * 1024
_REQUEST_ID = re.compile(r"\s*\(Request ID: [^)]*\)")


def invalid(field: str, problem: str) -> InvalidInput:
    """Bad input (``model.InvalidInput``), imported only when there is some: Spark's Python
    workers import this module to read, and the model's package loads pydantic and pyarrow's
    compute functions."""
    from kafka_rebalance.model import InvalidInput

    return InvalidInput(field, problem)


def has_scheme(path: str) -> bool:
    """s3://, gs://, hdfs://, file:// ...: read and written through ``pyarrow.fs``."""
    return "://" in path


def resolve(location: str) -> tuple[Any, str]:
    """A local path or URL -> (``pyarrow.fs`` filesystem, path inside it). Bad input
    (``InvalidInput``) for a scheme pyarrow does not know."""
    import pyarrow.fs as pafs

    if not has_scheme(location):
        return pafs.LocalFileSystem(), os.path.abspath(location)
    try:
        filesystem, path = pafs.FileSystem.from_uri(location)
    except (ValueError, OSError, ImportError) as exc:  # pyarrow.lib.ArrowInvalid is a ValueError
        raise invalid(location, store_error(exc)) from None
    return filesystem, path


def store_error(exc: BaseException) -> str:
    """What a store said, on one line, without the request ids nobody can act on."""
    text = " ".join(str(exc).split())
    return _REQUEST_ID.sub("", text) or type(exc).__name__


def join(location: str, *names: str) -> str:
    """``location``/name/..., for a path or a URL."""
    if not has_scheme(location):
        return str(Path(location, *names))
    return "/".join([location.rstrip("/"), *(name.strip("/") for name in names)])


def _child_url(url: str, base_path: str, child_path: str) -> str:
    """The URL of ``child_path`` (a path inside the filesystem of ``url``, under ``base_path``,
    the path ``url`` resolved to)."""
    relative = child_path[len(base_path.rstrip("/")):].lstrip("/")
    return join(url, relative)


# ------------------------------------------------------------------------------ reading

def open_input(location: str, *, read_ahead: bool = False) -> IO[bytes]:
    """A binary, seekable file (``.gz`` decompressed). Local paths are opened by Python itself;
    a URL through its store, fetching ``STORE_READ_BYTES`` per request, and with ``read_ahead``
    fetching the next such chunk while the caller works on the last (``ReadAhead``)."""
    if not has_scheme(location):
        if location.endswith(".gz"):
            return gzip.open(location, "rb")  # type: ignore[return-value]
        return open(location, "rb")
    filesystem, path = resolve(location)
    if location.endswith(".gz"):
        stream = filesystem.open_input_stream(path, compression=None, buffer_size=STORE_READ_BYTES)
        return gzip.GzipFile(fileobj=ReadAhead(stream) if read_ahead else stream, mode="rb")  # type: ignore[return-value]
    opened = filesystem.open_input_file(path)
    return ReadAhead(opened) if read_ahead else opened  # type: ignore[return-value]


class ReadAhead(io.RawIOBase):
    """A store's file read ahead of its reader: one thread fetches the next ``chunk_bytes``
    while the reader works on the last (a request to a store waits on the network; pyarrow
    releases the GIL meanwhile). ``seek`` drops what was fetched."""

    def __init__(self, raw: Any, chunk_bytes: int = STORE_READ_BYTES):
        super().__init__()
        self._raw = raw
        self._chunk_bytes = chunk_bytes
        self._chunks: queue.Queue[Any] | None = None
        self._fetcher: threading.Thread | None = None
        self._stopping = threading.Event()
        self._chunk = memoryview(b"")  # the chunk being read, which starts at _chunk_start
        self._chunk_start = 0
        self._current = memoryview(b"")  # what is left of it
        self._ended = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence != io.SEEK_SET:
            raise io.UnsupportedOperation("ReadAhead seeks to absolute offsets only")
        if self._chunk_start <= offset <= self._chunk_start + len(self._chunk) and len(self._chunk):
            self._current = self._chunk[offset - self._chunk_start:]  # within what was fetched
            return offset
        self._stop()
        self._raw.seek(offset)
        self._chunk, self._chunk_start = memoryview(b""), offset
        self._current, self._ended = memoryview(b""), False
        return offset

    def _fetch(self, chunks: queue.Queue[Any]) -> None:
        try:
            while not self._stopping.is_set():
                chunk = self._raw.read_buffer(self._chunk_bytes) if hasattr(self._raw, "read_buffer") \
                    else self._raw.read(self._chunk_bytes)
                chunks.put(chunk)
                if not len(chunk):
                    return
        except BaseException as exc:  # handed to the reader, which raises it
            chunks.put(exc)

    def readinto(self, buffer: Any) -> int:
        with memoryview(buffer) as target:
            wanted = target.nbytes
            filled = 0
            while filled < wanted and not self._ended:
                if not len(self._current):
                    self._chunk_start += len(self._chunk)
                    self._chunk = self._current = self._next_chunk()
                    if not len(self._current):
                        self._ended = True
                        break
                count = min(wanted - filled, len(self._current))
                target[filled:filled + count] = self._current[:count]
                self._current = self._current[count:]
                filled += count
            return filled

    def _next_chunk(self) -> memoryview:
        if self._chunks is None:
            self._stopping.clear()
            self._chunks = queue.Queue(maxsize=1)
            self._fetcher = threading.Thread(target=self._fetch, args=(self._chunks,), daemon=True)
            self._fetcher.start()
        chunk = self._chunks.get()
        if isinstance(chunk, BaseException):
            raise chunk
        return memoryview(chunk).cast("B")

    def _stop(self) -> None:
        if self._chunks is None:
            return
        self._stopping.set()
        while self._fetcher is not None and self._fetcher.is_alive():
            with suppress(queue.Empty):
                self._chunks.get(timeout=0.05)  # unblock a fetcher waiting to put
        self._chunks, self._fetcher = None, None

    def close(self) -> None:
        if not self.closed:
            self._stop()
            self._raw.close()
        super().close()


def sizes_of(locations: Iterable[str]) -> dict[str, int]:
    """Bytes of each file (as stored: a ``.gz`` compressed). Requests to stores run together."""
    wanted = list(dict.fromkeys(locations))
    local = {name: os.path.getsize(name) for name in wanted if not has_scheme(name)}
    remote = [name for name in wanted if has_scheme(name)]

    def size(location: str) -> int:
        filesystem, path = resolve(location)
        info = _file_info(filesystem, path, location)
        if info.size is None:
            raise invalid(location, "not a file")
        return int(info.size)

    with ThreadPoolExecutor(STORE_REQUESTS_IN_FLIGHT) as pool:
        found = dict(zip(remote, pool.map(size, remote), strict=True))
    return {name: local[name] if name in local else found[name] for name in wanted}


def _file_info(filesystem: Any, path: str, location: str) -> Any:
    import pyarrow.fs as pafs

    try:
        info = filesystem.get_file_info(path)
    except OSError as exc:
        raise invalid(location, store_error(exc)) from None
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(2, "no such file", location)
    return info


def read_head(location: str, size: int) -> bytes:
    """The first ``size`` bytes (after gunzip for ``.gz``)."""
    with open_input(location) as fh:
        return fh.read(size)


def expand_log_paths(paths: Iterable[str]) -> list[str]:
    """Files to read for the given log paths: files as given (plain, rotated or .gz),
    directories (or prefixes of a store) searched recursively. A missing path or a directory
    without files is bad input.
    """
    files: list[str] = []
    for given in paths:
        if has_scheme(given):
            files.extend(_expand_url(given))
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
                raise invalid(given, "directory contains no log files")
            files.extend(found)
        else:
            files.append(str(path))
    if not files:
        raise invalid("FILE", "no log files given")
    return files


def _expand_url(url: str) -> list[str]:
    """A URL naming a file -> itself; naming a directory or prefix -> the files under it,
    as directories are searched."""
    import pyarrow.fs as pafs

    filesystem, path = resolve(url)
    try:
        info = filesystem.get_file_info(path)
        missing = info.type == pafs.FileType.NotFound and _missing_bucket(filesystem, path)
        if info.type == pafs.FileType.File:
            return [url]
        if info.type != pafs.FileType.NotFound:
            listed = filesystem.get_file_info(pafs.FileSelector(path, recursive=True))
    except OSError as exc:
        raise invalid(url, store_error(exc)) from None
    if info.type == pafs.FileType.NotFound:
        if missing:
            raise invalid(url, f"no such bucket {missing!r}")
        raise FileNotFoundError(2, "no such file", url)
    base = path.rstrip("/")
    found = sorted(_child_url(url, path, entry.path) for entry in listed
                   if entry.type == pafs.FileType.File
                   and not any(part.startswith(_SKIPPED_PREFIXES) for part in entry.path[len(base):].split("/") if part))
    if not found:
        raise invalid(url, "directory contains no log files")
    return found


def _missing_bucket(filesystem: Any, path: str) -> str:
    """For a path an object store does not have: its bucket, if that is what is missing."""
    import pyarrow.fs as pafs

    if type(filesystem).__name__ in OBJECT_STORES and "/" in path.strip("/"):
        bucket = path.strip("/").split("/", 1)[0]
        if filesystem.get_file_info(bucket).type == pafs.FileType.NotFound:
            return bucket
    return ""


def looks_like_text(locations: list[str], sniff_bytes: int) -> list[bool]:
    """For each file: no NUL bytes in its first ``sniff_bytes`` (after gunzip for .gz). A local
    file that cannot be read is not text; a store that will not answer is bad input (a denied
    key is not a binary file). Files in a store are sniffed together."""
    import zlib

    def text(location: str) -> bool:
        try:
            return b"\x00" not in read_head(location, sniff_bytes)
        except (EOFError, gzip.BadGzipFile, zlib.error):
            return False
        except OSError as exc:
            if has_scheme(location):
                raise invalid(location, store_error(exc)) from None
            return False

    if not any(has_scheme(name) for name in locations):
        return [text(name) for name in locations]
    with ThreadPoolExecutor(STORE_REQUESTS_IN_FLIGHT) as pool:
        return list(pool.map(text, locations))


# ------------------------------------------------------------------------------ writing

OBJECT_STORES = ("S3FileSystem", "GcsFileSystem")


def make_parent(filesystem: Any, path: str) -> None:
    """Create the folder ``path`` is to be written in: a filesystem needs it (HDFS, ``file://``);
    an object store does not, and would keep an empty marker object for it."""
    if type(filesystem).__name__ not in OBJECT_STORES:
        filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)

@contextmanager
def write_file(location: str) -> Iterator[tuple[Any, str]]:
    """(filesystem, path) to write one file whole (``pq.ParquetWriter(path, filesystem=...)``).
    A local file is written under a hidden name and renamed into place; an object of a store
    appears only when its upload completes, so it is written under its own name (a retried
    Spark task writes the same name again)."""
    filesystem, path = resolve(location)
    if has_scheme(location):
        make_parent(filesystem, path)
        yield filesystem, path
        return
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    staged = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        yield filesystem, staged
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise
    os.replace(staged, path)


def write_parquet(table: Any, location: str, **options: Any) -> None:
    """``table`` as one Parquet file at ``location`` (a path or URL, through ``write_file``);
    ``options`` go to ``pyarrow.parquet.write_table``."""
    import pyarrow.parquet as pq

    with write_file(location) as (filesystem, path):
        pq.write_table(table, path, filesystem=filesystem, **options)


def list_files(location: str) -> list[str]:
    """The files under a directory (paths inside its filesystem); none if it does not exist."""
    import pyarrow.fs as pafs

    filesystem, path = resolve(location)
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    return [entry.path for entry in filesystem.get_file_info(selector) if entry.type == pafs.FileType.File]


def read_parquet_parts(location: str, columns: list[str] | None = None) -> Any:
    """A table written as a directory of Parquet files (Spark's layout, or one file), the files in
    name order and those named ``_*`` or ``.*`` skipped, as pyarrow's dataset reads it. File by
    file: ``pyarrow.parquet.read_table`` goes through ``pyarrow.dataset``, whose first import
    takes 0.02 s, and 0.25 s where it finds pandas to import."""
    import posixpath

    import pyarrow as pa
    import pyarrow.parquet as pq

    filesystem, _ = resolve(location)
    parts = sorted(path for path in list_files(location) if not posixpath.basename(path).startswith(("_", ".")))
    if not parts:
        raise FileNotFoundError(f"no Parquet files under {location}")
    tables = []
    for part in parts:
        with filesystem.open_input_file(part) as handle:
            tables.append(pq.ParquetFile(handle).read(columns=columns))
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def delete_tree(location: str) -> None:
    """Remove a directory and everything under it (nothing if it is not there)."""
    import pyarrow.fs as pafs

    filesystem, path = resolve(location)
    if filesystem.get_file_info(path).type != pafs.FileType.NotFound:
        filesystem.delete_dir(path)


class StagedOutput:
    """An output directory (a path or a URL) whose entries appear only on ``commit``.

    ``location(name)`` gives where to write an entry during the run (``path(name)`` the same
    as a ``Path``, for local directories only); ``commit`` replaces each entry of the final
    directory by its staged version, then removes the staging directory. ``discard`` removes
    it. Locally an entry is replaced by a rename, so readers see either the old or the new one.
    On a store, where entries are copied one by one, ``marker`` (the command's own summary) is
    removed first and copied last: the run is complete once it is there.
    """

    def __init__(self, out_dir: str | os.PathLike[str], marker: str = "summary.json"):
        self.marker = marker
        self.url = os.fspath(out_dir)
        self.remote = has_scheme(self.url)
        self.final = self.url if self.remote else str(Path(self.url))
        self.staging_name = f".staging-{uuid.uuid4().hex[:12]}"
        self._names: list[str] = []
        if self.remote:
            self._filesystem, self._final_path = resolve(self.url)
            self._open_remote()
        else:
            final = Path(self.final)
            if final.exists() and not final.is_dir():
                raise invalid("--out", f"{final} exists and is not a directory")
            final.mkdir(parents=True, exist_ok=True)
            (final / self.staging_name).mkdir()

    @property
    def staging(self) -> str:
        return join(self.final, self.staging_name)

    def _open_remote(self) -> None:
        """Check the store up front (bucket, permission to write) with a marker of the staging
        directory, so a run that cannot write fails before it reads anything."""
        import pyarrow.fs as pafs

        try:
            info = self._filesystem.get_file_info(self._final_path)
            if info.type == pafs.FileType.File:
                raise invalid("--out", f"{self.url} exists and is not a directory")
            marker_path = f"{self._final_path.rstrip('/')}/{self.staging_name}/.started"
            make_parent(self._filesystem, marker_path)
            with self._filesystem.open_output_stream(marker_path) as marker:
                marker.write(b"")
        except OSError as exc:
            self._explain(exc)

    def _explain(self, exc: OSError) -> None:
        message = store_error(exc)
        if "NO_SUCH_BUCKET" in message:
            bucket = self._final_path.strip("/").split("/", 1)[0]
            message = f"no such bucket {bucket!r}"
        raise invalid("--out", f"{self.url}: {message}") from None

    def location(self, name: str) -> str:
        """Where to write entry ``name`` (a table directory or a file) during the run."""
        if name not in self._names:
            self._names.append(name)
        return join(self.staging, name)

    def scratch_location(self, name: str) -> str:
        """Where to put a file the run needs but does not keep (gone with the staging directory)."""
        return join(self.staging, ".scratch", name)

    def write_at(self, location: str, text: str) -> None:
        filesystem, path = resolve(location)
        make_parent(filesystem, path)
        with filesystem.open_output_stream(path) as fh:
            fh.write(text.encode("utf-8"))

    def path(self, name: str) -> Path:
        if self.remote:
            raise invalid("--out", f"{self.url}: this command writes only to a local directory")
        target = Path(self.location(name))
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_text(self, name: str, text: str) -> str:
        if not self.remote:
            local = self.path(name)
            local.write_text(text, encoding="utf-8")
            return str(local)
        target = self.location(name)
        self.write_at(target, text)
        return target

    def commit(self) -> None:
        if self.remote:
            self._commit_remote()
            return
        final_dir, staging = Path(self.final), Path(self.staging)
        for name in self._names:
            staged = staging / name
            if not staged.exists():
                continue
            final = final_dir / name
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.is_dir() and not final.is_symlink():
                # A directory cannot be replaced by rename: move the old one aside first, so
                # the new table is in place before the old one is deleted.
                retired = staging / f".retired-{name.replace('/', '_')}"
                final.rename(retired)
            os.replace(staged, final)
        shutil.rmtree(staging, ignore_errors=True)

    def _commit_remote(self) -> None:
        """Copy each staged entry over its final one (objects cannot be renamed); the old
        ``marker`` goes first and the new one comes last."""
        import pyarrow.fs as pafs

        filesystem, final, staging = self._filesystem, self._final_path.rstrip("/"), f"{self._final_path.rstrip('/')}/{self.staging_name}"
        try:
            if filesystem.get_file_info(f"{final}/{self.marker}").type == pafs.FileType.File:
                filesystem.delete_file(f"{final}/{self.marker}")
            names = sorted(self._names, key=lambda n: n == self.marker)
            for name in names:
                staged = filesystem.get_file_info(f"{staging}/{name}")
                if staged.type == pafs.FileType.NotFound:
                    continue
                target = f"{final}/{name}"
                if filesystem.get_file_info(target).type == pafs.FileType.Directory:
                    filesystem.delete_dir(target)
                elif filesystem.get_file_info(target).type == pafs.FileType.File:
                    filesystem.delete_file(target)
                if staged.type == pafs.FileType.File:
                    make_parent(filesystem, target)
                    filesystem.copy_file(staged.path, target)
                    continue
                selector = pafs.FileSelector(staged.path, recursive=True)
                copies = [(entry.path, target + entry.path[len(staged.path):])
                          for entry in filesystem.get_file_info(selector) if entry.type == pafs.FileType.File]
                for _, copy in copies:
                    make_parent(filesystem, copy)
                with ThreadPoolExecutor(STORE_REQUESTS_IN_FLIGHT) as pool:
                    list(pool.map(lambda pair: filesystem.copy_file(*pair), copies))
        except OSError as exc:
            self.discard()
            raise invalid("--out", f"{self.url}: {store_error(exc)}") from None
        self.discard()

    def discard(self) -> None:
        if not self.remote:
            shutil.rmtree(self.staging, ignore_errors=True)
            return
        with suppress(OSError):  # the store is gone (the error that brought us here says so)
            self._filesystem.delete_dir(f"{self._final_path.rstrip('/')}/{self.staging_name}")

    def __enter__(self) -> StagedOutput:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()
