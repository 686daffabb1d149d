"""The inputs of ``kafka-rebalance logs``: paths (files, directories, URLs, ``-`` for a paste)
expanded to the text logs to read, their lines, and the story scope (cluster) of each."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

STDIN = "-"
TEXT_SNIFF_BYTES = 8192

def read_text_lines(source: str, stdin_text: str | None = None) -> Iterator[str]:
    if source == STDIN:
        text = stdin_text if stdin_text is not None else sys.stdin.read()
        yield from io.StringIO(text)
        return
    from kafka_rebalance.pipeline.io import open_input

    # Lines end at "\n" only (a "\r\n" keeps its "\r"), as the Spark engine's byte scan and a
    # paste on stdin cut them: a lone "\r" inside a line (a terminal's carriage return) is no break.
    with open_input(source) as raw, io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n") as fh:
        yield from fh


def holds_text(source: str, stdin_text: str | None = None) -> bool:
    """Does ``source`` hold a line that is not blank? Read up to the first such line only: an
    empty file, ``/dev/null`` or an empty paste is nothing to analyse (``logs`` says so and
    writes nothing)."""
    return any(line.strip() for line in read_text_lines(source, stdin_text))


def expand_inputs(paths: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Paths as given (``-`` for stdin, files, directories searched recursively) -> the text
    files to read, and (path, why) for each file of a directory that was skipped. A path that
    does not exist, or nothing to read at all, is bad input (``InvalidInput``/``OSError``)."""
    from kafka_rebalance.model import InvalidInput
    from kafka_rebalance.pipeline.io import expand_log_paths, has_scheme, looks_like_text

    named = [p for p in paths if p != STDIN]
    files = expand_log_paths(named) if named else []
    given = {p if has_scheme(p) else str(Path(p)) for p in named}
    text = dict(zip(files, looks_like_text(files, TEXT_SNIFF_BYTES), strict=True))
    kept, skipped = [], []
    for name in files:
        if name in given:
            if not text[name] and (has_scheme(name) or Path(name).is_file()):
                raise InvalidInput(name, "not a text log (binary content)")
            kept.append(name)
        elif text[name]:
            kept.append(name)
        else:
            skipped.append((name, "not a text log (binary content)"))
    if STDIN in paths:
        kept.insert(0, STDIN)
    if not kept:
        raise InvalidInput("FILE", "no text logs to read" + (f" ({len(skipped)} binary file(s) skipped)" if skipped else ""))
    return kept, skipped


_COMPRESSED = re.compile(r"\.(?:gz|bz2|xz|zst)$")
# log4j's and logback's rolled names: server.log.1, server.log.2024-06-02, server.log.2024-06-02-14
_ROLLED = re.compile(r"(?:[._-]\d{4}-?\d{2}-?\d{2}(?:[._T-]?\d{1,2}){0,3}|\.\d{1,4})$")
_DATED_BEFORE_LOG = re.compile(r"[._-]\d{4}-?\d{2}-?\d{2}(?:[._T-]?\d{1,2}){0,3}(?=\.log$)")
STDIN_CLUSTER = "stdin"


def rotated_log(name: str) -> str:
    """The log a file was rotated from (``server.log.1``, ``server.log.2024-06-02.gz`` and
    ``app.2024-06-02.0.log`` -> ``server.log``, ``server.log``, ``app.log``); works on paths
    and URLs alike."""
    head, separator, base = name.rpartition("/")
    base = _COMPRESSED.sub("", base)
    while (stripped := _ROLLED.sub("", base)) not in (base, ""):
        base = stripped
    return head + separator + _DATED_BEFORE_LOG.sub("", base)


def input_clusters(files: list[str], labelled: dict[str, str] | None = None,
                   resolve: Callable[[str], str] | None = None) -> dict[str, str]:
    """The cluster (story scope) of every input. ``labelled`` maps a path prefix to a name
    (``--cluster NAME[=PATH]``): those inputs are one cluster and complete each other's story.
    An input nobody labelled is a cluster of its own, named after it, with the files rotated
    from the same log (its earlier days): so what is found in a file does not depend on what
    else was read with it. ``resolve`` turns an input into the form the prefixes are in."""
    clusters = {}
    for name in files:
        key = resolve(name) if resolve is not None and name != STDIN else name
        label = next((cluster for prefix, cluster in (labelled or {}).items() if key.startswith(prefix)), None)
        if label is None:
            label = STDIN_CLUSTER if name == STDIN else rotated_log(name)
        clusters[name] = label
    return clusters
