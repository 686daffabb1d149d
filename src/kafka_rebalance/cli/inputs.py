"""Reading a command's input file the way a user hands it over: checked up front, with every
problem reported as one line naming the user's path (never a temporary file, never a traceback).

A file may be plain or gzip-compressed (recognised by its magic bytes, whatever its name), is read
with a size cap (so ``/dev/zero`` or a mistaken multi-gigabyte file cannot exhaust memory), must be
UTF-8 text, and YAML documents are parsed with a guard against alias bombs and deep nesting.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import stat
import sys
import zlib
from pathlib import Path
from typing import Any, Protocol

import yaml

from kafka_rebalance.model import InvalidInput

STDIN = "-"
MAX_INPUT_BYTES = 512 * 1024 * 1024  # a snapshot with a million owned partitions is ~20 MB
MAX_YAML_NODES = 20_000_000  # nodes of the document once every alias is expanded
MAX_NESTING = 500
GZIP_MAGIC = b"\x1f\x8b"


def display_name(path: str) -> str:
    return "standard input" if path == STDIN else path


class _ByteStream(Protocol):
    """A file, stdin's buffer or a GzipFile: what ``_read_capped`` reads."""

    def read(self, size: int = -1, /) -> bytes: ...


def _read_capped(stream: _ByteStream, where: str) -> bytes:
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InvalidInput(where, f"larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB; not a file this command reads")
    return data


def _check_path(path: str) -> None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InvalidInput(path, "no such file") from None
    except NotADirectoryError:
        raise InvalidInput(path, "no such file (a parent is not a directory)") from None
    except PermissionError:
        raise InvalidInput(path, "permission denied") from None
    except OSError as exc:
        raise InvalidInput(path, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise InvalidInput(path, "is a directory, expected a file")
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
        raise InvalidInput(path, "is not a regular file")


def read_bytes(path: str) -> bytes:
    """The bytes of ``path`` (``-``: standard input), gunzipped when they are gzip data."""
    where = display_name(path)
    if path == STDIN:
        stdin = sys.stdin
        if stdin is None:
            raise InvalidInput(where, "not available")
        if stdin.isatty():
            raise InvalidInput(where, "is a terminal; pipe a file in or give its path")
        buffer = getattr(stdin, "buffer", None)
        if buffer is None:  # a text stream (tests replace sys.stdin with StringIO)
            text = stdin.read(MAX_INPUT_BYTES + 1)
            data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
            if len(data) > MAX_INPUT_BYTES:
                raise InvalidInput(where, f"larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")
        else:
            data = _read_capped(buffer, where)
    else:
        _check_path(path)
        try:
            with open(path, "rb") as handle:
                data = _read_capped(handle, where)
        except PermissionError:
            raise InvalidInput(where, "permission denied") from None
        except IsADirectoryError:
            raise InvalidInput(where, "is a directory, expected a file") from None
        except OSError as exc:
            raise InvalidInput(where, f"cannot read: {exc.strerror or exc}") from None
    if data.startswith(GZIP_MAGIC):
        data = _gunzip(data, where)
    return data


def _gunzip(data: bytes, where: str) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            return _read_capped(stream, f"{where} (uncompressed)")
    except (OSError, EOFError, zlib.error) as exc:
        problem = "truncated" if isinstance(exc, EOFError) else str(exc) or type(exc).__name__
        raise InvalidInput(where, f"corrupt gzip data ({problem})") from None


def read_text(path: str) -> str:
    """UTF-8 text of ``path`` (see ``read_bytes``); binary data is bad input."""
    data = read_bytes(path)
    where = display_name(path)
    if b"\x00" in data[:65536]:
        raise InvalidInput(where, "binary data, expected a UTF-8 text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(where, f"not UTF-8 text (invalid byte at offset {exc.start})") from None


def load_document(path: str, what: str, *, json_only: bool = False) -> Any:
    """Parse ``path`` as YAML (JSON is YAML) or, with ``json_only``, as JSON. ``what`` names the
    expected content in messages ("a scenario", "a group snapshot")."""
    where = display_name(path)
    text = read_text(path)
    if not text.strip():
        raise InvalidInput(where, f"empty file, expected {what}")
    document = parse_json(text, where) if json_only else parse_yaml(text, where)
    if not isinstance(document, dict):
        kind = {list: "a list", str: "a string", type(None): "nothing"}.get(type(document), "a single value")
        raise InvalidInput(where, f"expected {what} (a mapping of fields), got {kind}")
    return document


def parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(where, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InvalidInput(where, "JSON nested too deeply") from None


class _GuardedLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents whose alias expansion or nesting is out of bounds
    (a "billion laughs" document is a few hundred bytes that expands to billions of nodes)."""

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None:
            _check_node_graph(node)
        return node


def _check_node_graph(root: yaml.Node) -> None:
    sizes: dict[int, int] = {}
    # Iterative post-order walk: sizes of shared (aliased) nodes are computed once and reused,
    # so the check is linear in the text while measuring the expanded size.
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 0, False)]
    on_path: set[int] = set()
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > MAX_YAML_NODES:
                raise _YamlRefused(f"expands to more than {MAX_YAML_NODES:,} nodes (an alias bomb?)")
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _YamlRefused("an alias refers to itself (recursive document)")
        if depth > MAX_NESTING:
            raise _YamlRefused(f"nested more than {MAX_NESTING} levels deep")
        on_path.add(key)
        stack.append((node, depth, True))
        for child in _children(node):
            if id(child) in on_path:
                raise _YamlRefused("an alias refers to itself (recursive document)")
            if id(child) not in sizes:
                stack.append((child, depth + 1, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


class _YamlRefused(Exception):
    pass


def parse_yaml(text: str, where: str) -> Any:
    try:
        return yaml.load(text, Loader=_GuardedLoader)  # noqa: S506 - a SafeLoader subclass
    except _YamlRefused as exc:
        raise InvalidInput(where, f"YAML refused: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0] or type(exc).__name__
        raise InvalidInput(where, f"invalid YAML{at}: {problem}") from None
    except RecursionError:
        raise InvalidInput(where, "YAML nested too deeply") from None
    except (ValueError, OverflowError, TypeError) as exc:
        # PyYAML's constructors raise these for scalars such as a timestamp out of range.
        raise InvalidInput(where, f"invalid YAML value: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def with_source(exc: InvalidInput, path: str) -> InvalidInput:
    """``exc`` with the file it came from in front of its field, unless it already names it."""
    where = display_name(path)
    if exc.field == where or exc.field.startswith(f"{where} ") or exc.field.startswith(f"{where}:"):
        return exc
    return InvalidInput(f"{where}: {exc.field}" if exc.field else where, exc.problem)



def check_output_file(path: str, option: str) -> None:
    """An output file must be a file name in an existing directory (checked before any work)."""
    target = Path(path)
    if target.is_dir():
        raise InvalidInput(f"{option} {path}", "is a directory, expected a file name")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise InvalidInput(f"{option} {path}", f"no such directory {parent}")


def check_output_dir(path: str, option: str = "--out") -> None:
    """An output directory must be a directory, or not exist yet under a path that could hold
    it (checked before any work, so a failed run never starts)."""
    target = Path(path)
    if "://" in path:
        return  # a Hadoop URL (hdfs://, s3a://): Spark checks it
    if target.exists() and not target.is_dir():
        raise InvalidInput(f"{option} {path}", "exists and is not a directory")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InvalidInput(f"{option} {path}", f"{parent} is not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise InvalidInput(f"{option} {path}", f"{parent} is not writable")
            break


_MASTER = re.compile(
    r"^(local(\[(\*|[1-9]\d{0,4})(,[1-9]\d{0,3})?\])?"
    r"|local-cluster\[[1-9]\d{0,3},[1-9]\d{0,3},[1-9]\d{0,7}\]"
    r"|spark://[^\s/]+(:\d{1,5})?(,[^\s/]+(:\d{1,5})?)*"
    r"|yarn|k8s://\S+|mesos://\S+)$")


def check_master(master: str | None) -> None:
    """A Spark master URL Spark accepts (checked before a JVM starts, whose error would be a
    Java stack trace)."""
    if master is not None and not _MASTER.match(master):
        raise InvalidInput(f"--master {master}", "not a Spark master URL (local, local[N], local[*], "
                                                 "spark://HOST:PORT, yarn, k8s://URL)")
