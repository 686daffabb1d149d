"""The output tables of ``kafka-rebalance logs``: their columns, and building them without
Spark (a paste, a small file) from the same per-group story the Spark job runs.

Every table has one schema here, used by both engines: Spark gets it as DDL, the local engine
as a pyarrow schema. ``member_events.source`` says how a member event was learnt: from its own
``line``, or from the ``reason`` of a rebalance that names the member; ``input`` is the file.
``rebalances.during`` lists what happened while a rebalance was open (members that failed,
left, joined or did not rejoin in time): never its cause, which is at or before its start. Time columns are carried as epoch milliseconds (``*_ms``) inside the
story and written as timestamps (``start``, ``end``, ``time``).
"""

from __future__ import annotations

import io
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_rebalance.pipeline.logparse.kinds import COORDINATOR_KINDS
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.parse import EVENT_COLUMNS, READ_ERRORS, parse_lines
from kafka_rebalance.pipeline.logparse.rows import Event, Row
from kafka_rebalance.pipeline.logparse.story import (
    DEFAULT_STORM_RULE,
    GroupFindings,
    StormRule,
    story_tables,
    tell,
)

STRING, LONG, DOUBLE, BOOL, TIME, STRINGS = "string", "long", "double", "boolean", "timestamp", "array<string>"

# table -> [(column, type, story field)]; a TIME column is made from the story's *_ms field.
TABLES: dict[str, list[tuple[str, str, str]]] = {
    "rebalances": [
        ("group", STRING, "group"), ("generation", LONG, "generation"), ("start", TIME, "start_ms"),
        ("end", TIME, "end_ms"), ("duration_ms", LONG, "duration_ms"), ("reason", STRING, "reason"),
        ("members", LONG, "members"), ("old_generation", LONG, "old_generation"), ("leader", STRING, "leader"),
        ("outcome", STRING, "outcome"), ("failed_members", STRINGS, "failed_members"),
        ("left_members", STRINGS, "left_members"), ("partition", LONG, "partition"), ("cluster", STRING, "cluster"),
        ("protocol", STRING, "protocol"), ("source", STRING, "source"), ("start_known", BOOL, "start_known"),
        ("joined_members", STRINGS, "joined_members"), ("assignor", STRING, "assignor"),
        ("assignor_ms", LONG, "assignor_ms"), ("cause", STRING, "cause"), ("cause_member", STRING, "cause_member"),
        ("drawn_until", TIME, "clip_ms"), ("during", STRINGS, "during"),
    ],
    "member_events": [
        ("group", STRING, "group"), ("member", STRING, "member"), ("time", TIME, "time_ms"), ("kind", STRING, "kind"),
        ("client", STRING, "client"), ("reason", STRING, "reason"), ("cluster", STRING, "cluster"),
        ("source", STRING, "source"), ("side", STRING, "side"), ("generation", LONG, "generation"),
        ("cause", STRING, "cause"), ("input", STRING, "input"),
    ],
    "storms": [
        ("group", STRING, "group"), ("start", TIME, "start_ms"), ("end", TIME, "end_ms"),
        ("rebalances", LONG, "rebalances"), ("duration_ms", LONG, "duration_ms"), ("failures", LONG, "failures"),
        ("leaves", LONG, "leaves"), ("top_client", STRING, "top_client"),
        ("top_client_failures", LONG, "top_client_failures"), ("kind", STRING, "kind"), ("cluster", STRING, "cluster"),
        ("restarts", LONG, "restarts"),
    ],
    "empty_periods": [
        ("group", STRING, "group"), ("generation", LONG, "generation"), ("start", TIME, "start_ms"),
        ("end", TIME, "end_ms"), ("duration_ms", LONG, "duration_ms"), ("cluster", STRING, "cluster"),
    ],
    "client_rebalances": [
        ("source", STRING, "source"), ("client_library", STRING, "client_library"), ("group", STRING, "group"),
        ("member", STRING, "member"), ("generation", LONG, "generation"), ("protocol", STRING, "protocol"),
        ("assigned", STRINGS, "assigned"), ("revoked", STRINGS, "revoked"), ("lost", STRINGS, "lost"),
        ("start", TIME, "start_ms"), ("end", TIME, "end_ms"), ("cluster", STRING, "cluster"),
        ("client", STRING, "client"), ("duration_ms", LONG, "duration_ms"), ("outcome", STRING, "outcome"),
        ("reason", STRING, "reason"),
    ],
    "causes": [
        ("cluster", STRING, "cluster"), ("group", STRING, "group"), ("generation", LONG, "generation"),
        ("start", TIME, "start_ms"), ("cause", STRING, "cause"), ("member", STRING, "member"),
        ("detail", STRING, "detail"), ("evidence", STRINGS, "evidence"), ("evidence_sources", STRINGS, "evidence_sources"),
    ],
    "unrecognised": [
        ("cluster", STRING, "cluster"), ("source", STRING, "source"), ("shape", STRING, "shape"),
        ("count", LONG, "count"), ("sample", STRING, "sample"),
    ],
}
STORY_TABLES = ("rebalances", "member_events", "storms", "empty_periods", "client_rebalances", "causes")


def spark_ddl(table: str, *, as_story: bool = False) -> str:
    """Spark DDL of a table; ``as_story`` gives the story's fields (times as ``*_ms`` longs)."""
    types = {TIME: "timestamp", STRINGS: "array<string>", LONG: "bigint"}
    parts = []
    for column, kind, story_field in TABLES[table]:
        if as_story:
            name, kind = (story_field, LONG) if kind == TIME else (story_field, kind)
        else:
            name = column
        parts.append(f"`{name}` {types.get(kind, kind)}")
    return ", ".join(parts)


def event_ddl() -> str:
    types = {"long": "bigint"}
    return ", ".join(f"`{name}` {types.get(kind, kind)}" for name, kind in EVENT_COLUMNS) + ", `shape` string"


def story_frames(rows: dict[str, list[Row]]) -> dict[str, Any]:
    """Story rows -> pandas frames with the tables' columns and types."""
    frames = {}
    for table in STORY_TABLES:
        frames[table] = frame(table, rows.get(table, []))
    return frames


def frame(table: str, rows: list[Row]) -> Any:
    import pandas as pd

    columns: dict[str, Any] = {}
    for column, kind, story_field in TABLES[table]:
        values = [row.get(story_field) for row in rows]
        if kind == TIME:
            columns[column] = pd.Series([_timestamp(v) for v in values], dtype="datetime64[ms]")
        elif kind == LONG:
            columns[column] = pd.Series(values, dtype="Int64")
        elif kind == DOUBLE:
            columns[column] = pd.Series(values, dtype="float64")
        elif kind == BOOL:
            columns[column] = pd.Series(values, dtype="boolean")
        elif kind == STRINGS:
            columns[column] = pd.Series([list(v or []) for v in values], dtype="object")
        else:
            columns[column] = pd.Series(values, dtype="object")
    return pd.DataFrame(columns)


def events_frame(records: list[Event]) -> Any:
    """The ``events`` table: every line read, parsed (``kind`` null for unrecognised lines)."""
    import pandas as pd

    dtypes = {"long": "Int64", "boolean": "boolean", "string": "object"}
    columns = {name: pd.Series([r.get(name) for r in records], dtype=dtypes[kind]) for name, kind in EVENT_COLUMNS}
    columns["shape"] = pd.Series([r.get("shape") for r in records], dtype="object")
    return pd.DataFrame(columns)


def _timestamp(epoch_ms: Any) -> Any:
    """Epoch milliseconds -> numpy datetime64[ms] (NaT when missing)."""
    import numpy as np

    if epoch_ms is None or epoch_ms != epoch_ms:
        return np.datetime64("NaT", "ms")
    return np.datetime64(int(epoch_ms), "ms")


def arrow_schema(table: str) -> Any:
    import pyarrow as pa

    if table == "events":
        return pa.schema([(name, _arrow_type(kind)) for name, kind in (*EVENT_COLUMNS, ("shape", STRING))])
    return pa.schema([(column, _arrow_type(kind)) for column, kind, _ in TABLES[table]])


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    return {STRING: pa.string(), LONG: pa.int64(), DOUBLE: pa.float64(), BOOL: pa.bool_(),
            TIME: pa.timestamp("ms"), STRINGS: pa.list_(pa.string())}[kind]


def story_table_batch(table: str, rows: list[Row]) -> Any:
    """One story table's rows (story fields, times as epoch ms) -> a batch of the table's own
    columns and types (``frame``'s conversions: times from epoch ms, missing lists as empty).
    The rows are read as one struct array: Arrow looks the fields up in each dict itself."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = TABLES[table]
    rows_type = pa.struct([(story_field, _arrow_type(kind)) for _, kind, story_field in columns])
    arrays = []
    for (_, kind, _), values in zip(columns, pa.array(rows, rows_type).flatten(), strict=True):
        if kind == STRINGS and values.null_count:
            values = pc.if_else(pc.is_null(values), pa.scalar([], values.type), values)
        arrays.append(values)
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(table))


def write_frame(df: Any, directory: str | Path, table: str) -> None:
    """One table as a directory (a path or URL) with one Parquet file (the layout Spark writes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kafka_rebalance.pipeline.io import join, write_file

    arrow = pa.Table.from_pandas(df, schema=arrow_schema(table), preserve_index=False)
    with write_file(join(str(directory), "part-00000.parquet")) as (filesystem, path):
        pq.write_table(arrow, path, filesystem=filesystem)


# ----------------------------------------------------------------------------- inputs

STDIN = "-"
TEXT_SNIFF_BYTES = 8192


def looks_like_text(path: str | Path) -> bool:
    """Not a binary file: no NUL bytes in the first few KB (after gunzip for .gz)."""
    from kafka_rebalance.pipeline.io import looks_like_text as sniff

    return sniff([str(path)], TEXT_SNIFF_BYTES)[0]


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


def fill_client_group(record: Event, last_group: dict[str, str]) -> None:
    """Some client lines do not name their group (librdkafka's JoinGroup response): they belong
    to the group the same client named last in the same file."""
    client = record.get("client_id")
    if record.get("side") != "client" or not client:
        return
    if record.get("group"):
        last_group[client] = record["group"]
    elif client in last_group:
        record["group"] = last_group[client]


@dataclass
class LocalResult:
    """Every table as a pandas frame, plus what the summary and the report need."""

    frames: dict[str, Any]
    findings: list[GroupFindings]
    coverage: list[Row]
    events: int
    groups: int
    lines_read: int
    samples: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def analyse_local(inputs: list[tuple[str, str]], rule: StormRule = DEFAULT_STORM_RULE, stdin_text: str | None = None,
                  on_read: Callable[[int], None] | None = None, *, syslog: SyslogReference) -> LocalResult:
    """``inputs``: (source, cluster) pairs in order -> all tables, in this process. ``on_read``
    is told the characters read, every few thousand lines (for a progress bar); ``syslog``
    places year-less times (``layout.SyslogReference``)."""
    events_by_group: dict[tuple[str, str], list[Event]] = defaultdict(list)
    moves: dict[str, list[Event]] = defaultdict(list)
    unrecognised: dict[tuple[str, str, str], Row] = {}
    coverage = []
    samples: list[str] = []
    unreadable: list[tuple[str, str]] = []
    parsed: list[Event] = []
    lines_read = 0
    event_count = 0
    for source, cluster in inputs:
        counter = _Counting(read_text_lines(source, stdin_text), on_read)
        kinds: Counter[str] = Counter()
        times = []
        try:
            records = list(parse_lines(counter, source, cluster, syslog=syslog))
        except READ_ERRORS as exc:  # a truncated or corrupt .gz
            records = []
            unreadable.append((source, f"unreadable: {exc}"))
        last_group: dict[str, str] = {}
        for record in records:
            fill_client_group(record, last_group)
            parsed.append(record)
            if record["kind"] is None:
                key = (cluster, source, record["shape"])
                entry = unrecognised.setdefault(key, {"cluster": cluster, "source": source, "shape": record["shape"],
                                                      "count": 0, "sample": record["line"]})
                entry["count"] += 1
                kinds["unrecognised"] += 1
                continue
            event_count += 1
            kinds[record["side"]] += 1
            if record.get("time_ms") is not None:
                times.append(record["time_ms"])
            if record["kind"] in COORDINATOR_KINDS:
                moves[cluster].append(record)
            if record.get("group"):
                events_by_group[(cluster, record["group"])].append(record)
        lines_read += counter.count
        samples.extend(s.rstrip("\n") for s in counter.head if s.strip())
        coverage.append({"source": source, "cluster": cluster, "lines": counter.count,
                         "broker_lines": kinds["broker"], "client_lines": kinds["client"],
                         "unrecognised_lines": kinds["unrecognised"],
                         "first_ms": min(times) if times else None, "last_ms": max(times) if times else None})
    rows: dict[str, list[Row]] = defaultdict(list)
    findings: list[GroupFindings] = []
    for (cluster, group), events in sorted(events_by_group.items()):
        told = tell(cluster, group, events, moves.get(cluster), rule)
        for table, table_rows in story_tables(told):
            rows[table].extend(table_rows)
        findings.extend(told["findings"])
    frames = story_frames(rows)
    frames["unrecognised"] = frame("unrecognised", sorted(unrecognised.values(), key=lambda r: -r["count"]))
    frames["events"] = events_frame(parsed)
    return LocalResult(frames, findings, coverage, event_count, len(events_by_group), lines_read,
                       samples[:5], unreadable)


class _Counting:
    """Counts the lines it passes on and keeps the first few."""

    REPORT_EVERY = 4096

    def __init__(self, lines: Iterator[str], on_read: Callable[[int], None] | None = None):
        self._lines = lines
        self._on_read = on_read
        self.count = 0
        self.head: list[str] = []

    def __iter__(self) -> Iterator[str]:
        if self._on_read is not None:
            yield from self._reporting(self._on_read)
            return
        for line in self._lines:
            self.count += 1
            if len(self.head) < 5:
                self.head.append(line)
            yield line

    def _reporting(self, on_read: Callable[[int], None]) -> Iterator[str]:
        unreported = 0
        for line in self._lines:
            self.count += 1
            unreported += len(line)
            if len(self.head) < 5:
                self.head.append(line)
            if not self.count % self.REPORT_EVERY:
                on_read(unreported)
                unreported = 0
            yield line
        on_read(unreported)
