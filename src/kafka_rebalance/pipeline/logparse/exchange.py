"""What the Spark engine's tasks do, in plain Python: a scan task turns its byte ranges into its
part of the ``events`` table, the events each group's story needs (in buckets of groups) and
per-split facts; a story task tells the stories of one bucket and writes its part of every
story table. ``pipeline/logs.py`` only schedules them.

Handing every event to the JVM as rows (to write them, shuffle them by group, sort them and
hand them back) cost more than parsing them. So the events never enter the JVM: a scan task
writes one Arrow IPC file (lz4) per bucket, a story task reads its bucket's files, sorts them
with Arrow and tells each group's story. What the driver needs from a split (line counts,
coverage, unrecognised shapes, coordinator moves, the last group each client named) comes back
as a small JSON document (``SplitFacts``), and from a story task only the findings.

Like the input files, the output and exchange directories must be one filesystem for every
task: any local master, or a cluster whose executors share it (NFS, a shared volume).
Memory: a scan task holds one batch of events; a story task one bucket's events
(``bucket_count`` keeps a bucket to about ``BUCKET_INPUT_BYTES`` of log text).
"""

from __future__ import annotations

import gc
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka_rebalance.pipeline.logparse.parse import parse_numbered
from kafka_rebalance.pipeline.logparse.rows import Event, Row
from kafka_rebalance.pipeline.logparse.scan import ScanCounts, Split, scan
from kafka_rebalance.pipeline.logparse.story import STORY_FIELDS, StormRule, tell
from kafka_rebalance.pipeline.logparse.tables import (
    CLUSTER_KINDS,
    STORY_TABLES,
    arrow_schema,
    fill_client_group,
    story_table_batch,
)

ARROW_BATCH_ROWS = 10_000
STORY_BATCH_ROWS = 20_000
EVENT_SLICE_ROWS = 4096
BUCKET_INPUT_BYTES = 512 * 1024 * 1024
# Fields of a coordinator move that the stories read (``story.GroupStory``).
MOVE_FIELDS = ("cluster", "partition", "time_ms", "line", "source", "seq")
SORT_KEYS = [("cluster", "ascending"), ("group", "ascending"), ("source", "ascending"), ("seq", "ascending")]


def bucket_count(total_bytes: int, parallelism: int) -> int:
    """Buckets of groups for the story job: one per core, more when the input is large."""
    return max(parallelism, -(-total_bytes // BUCKET_INPUT_BYTES))


def bucket_of(cluster: str, group: str, buckets: int) -> int:
    """The same bucket in every process (Python's own ``hash`` of a str is salted per process)."""
    return zlib.crc32(f"{cluster}\x00{group}".encode()) % buckets


@dataclass
class SplitFacts:
    """What the driver needs from one split (JSON between the scan task and the driver)."""

    index: int
    source: str
    cluster: str
    start: int
    lines: int = 0
    events: int = 0
    broker_lines: int = 0
    client_lines: int = 0
    unrecognised_lines: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    # shape -> [count, seq of its first line, that line]: a JSON array, counted in place
    unrecognised: dict[str, list[Any]] = field(default_factory=dict)
    moves: list[Event] = field(default_factory=list)
    # client -> the group it named last in this split (for lines of the next split naming none)
    named_last: dict[str, str] = field(default_factory=dict)
    # client lines naming no group, before their client named one in this split
    unfilled: list[str] = field(default_factory=list)
    unreadable: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str)

    @classmethod
    def from_json(cls, text: str) -> SplitFacts:
        return cls(**json.loads(text))


class BucketFiles:
    """One Arrow IPC file (lz4) per bucket of groups for one split:
    ``<exchange>/bucket-<b>/split-<i>.arrow``, moved into place on ``close`` (a retried task
    writes the same names again)."""

    def __init__(self, exchange_dir: Path, split_index: int, schema: Any):
        import pyarrow as pa

        self._exchange_dir = exchange_dir
        self._name = f"split-{split_index:05d}"
        self._schema = schema
        self._options = pa.ipc.IpcWriteOptions(compression="lz4")
        self._writers: dict[int, Any] = {}

    def _staged(self, bucket: int) -> Path:
        return bucket_dir(self._exchange_dir, bucket) / f".{self._name}.{os.getpid()}.tmp"

    def add(self, bucket: int, batch: Any) -> None:
        import pyarrow as pa

        if bucket not in self._writers:
            bucket_dir(self._exchange_dir, bucket).mkdir(parents=True, exist_ok=True)
            self._writers[bucket] = pa.ipc.new_file(self._staged(bucket), self._schema, options=self._options)
        self._writers[bucket].write_batch(batch)

    def close(self) -> None:
        for bucket, writer in self._writers.items():
            writer.close()
            os.replace(self._staged(bucket), bucket_dir(self._exchange_dir, bucket) / f"{self._name}.arrow")

    def discard(self) -> None:
        for bucket, writer in self._writers.items():
            writer.close()
            self._staged(bucket).unlink()
        self._writers.clear()


def bucket_dir(exchange_dir: Path, bucket: int) -> Path:
    return exchange_dir / f"bucket-{bucket:05d}"


def read_split(split: Split, index: int, cluster: str, buckets: int, events_dir: Path, exchange_dir: Path,
               inherited: dict[str, str] | None = None) -> SplitFacts:
    """Parse one split: write its part of the ``events`` table into ``events_dir`` and the
    events the stories read into ``exchange_dir`` (``BucketFiles``); return the split's facts.
    ``inherited``: the group each client named last before this split (see ``fill_chains``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema("events")
    facts = SplitFacts(index, split.path, cluster, split.start)
    counts = ScanCounts()
    last_group = dict(inherited or {})
    pending: list[Event] = []
    routed: dict[int, list[int]] = {}
    bucket_cache: dict[str, int] = {}
    files = BucketFiles(exchange_dir, index, schema)
    events_dir.mkdir(parents=True, exist_ok=True)
    staged = events_dir / f".part-{index:05d}.{os.getpid()}.tmp"

    def flush(writer: Any) -> None:
        batch = pa.RecordBatch.from_pylist(pending, schema=schema)
        writer.write_batch(batch)
        for bucket, rows in routed.items():
            files.add(bucket, batch.take(pa.array(rows, pa.int32())))
        pending.clear()
        routed.clear()

    with pq.ParquetWriter(staged, schema) as writer:
        try:
            for record in parse_numbered(scan(split, counts), split.path, cluster):
                _count(record, facts, last_group)
                group = record.get("group")
                if record["kind"] is not None and group:
                    bucket = bucket_cache.get(group)
                    if bucket is None:
                        bucket = bucket_cache[group] = bucket_of(cluster, group, buckets)
                    routed.setdefault(bucket, []).append(len(pending))
                pending.append(record)
                if len(pending) >= ARROW_BATCH_ROWS:
                    flush(writer)
            if pending:
                flush(writer)
        except (OSError, EOFError, ValueError) as exc:  # a truncated or corrupt .gz
            # As the local engine does: nothing of an unreadable file is kept but its line count.
            facts = SplitFacts(index, split.path, cluster, split.start, unreadable=f"unreadable: {exc}")
            files.discard()
    if facts.unreadable:
        pq.write_table(schema.empty_table(), staged)
    os.replace(staged, events_dir / f"part-{index:05d}.parquet")
    files.close()
    facts.lines = counts.lines
    return facts


def _count(record: Event, facts: SplitFacts, last_group: dict[str, str]) -> None:
    """Fill a client line's group and add the record to the split's facts (as ``analyse_local``
    does per file)."""
    if record["kind"] is None:
        facts.unrecognised_lines += 1
        shape = facts.unrecognised.get(record["shape"])
        if shape is None:
            facts.unrecognised[record["shape"]] = [1, record["seq"], record["line"]]
        else:
            shape[0] += 1
        return
    client = record.get("client_id")
    if (record.get("side") == "client" and client and not record.get("group") and client not in last_group
            and client not in facts.unfilled):
        facts.unfilled.append(client)
    before = last_group.get(client) if client else None
    fill_client_group(record, last_group)
    if client and record.get("group") and last_group.get(client) != before:
        facts.named_last[client] = last_group[client]
    facts.events += 1
    if record["side"] == "broker":
        facts.broker_lines += 1
    elif record["side"] == "client":
        facts.client_lines += 1
    at = record.get("time_ms")
    if at is not None:
        facts.first_ms = at if facts.first_ms is None else min(facts.first_ms, at)
        facts.last_ms = at if facts.last_ms is None else max(facts.last_ms, at)
    if record["kind"] in CLUSTER_KINDS:
        facts.moves.append({name: record.get(name) for name in MOVE_FIELDS})


def fill_chains(facts: list[SplitFacts]) -> dict[int, dict[str, str]]:
    """Splits whose client lines name no group before their client names one, and the group
    that client named last in the splits before (same file): what ``read_split`` needs to fill
    them as reading the file from its start would. Empty when no split needs it."""
    needed: dict[int, dict[str, str]] = {}
    carried: dict[str, str] = {}
    previous: SplitFacts | None = None
    for split in sorted(facts, key=lambda f: (f.source, f.start)):
        if previous is None or previous.source != split.source:
            carried = {}
        wanted = {client: carried[client] for client in split.unfilled if client in carried}
        if wanted:
            needed[split.index] = dict(carried)
        carried = {**carried, **split.named_last}
        previous = split
    return needed


def read_bucket(exchange_dir: Path, bucket: int) -> Any:
    """A bucket's files (one per split) -> one table sorted by (cluster, group, source, seq)."""
    import pyarrow as pa

    tables = [pa.ipc.open_file(path).read_all() for path in sorted(bucket_dir(exchange_dir, bucket).glob("*.arrow"))]
    return pa.concat_tables(tables).sort_by(SORT_KEYS) if tables else None


def tell_bucket(table: Any, moves: dict[str, list[Event]], rule: StormRule
                ) -> Iterator[tuple[str, list[Row]]]:
    """One sorted bucket -> ``(table, rows)`` per group and story table (``story.tell``).

    Events become dicts a slice of whole groups at a time (about ``EVENT_SLICE_ROWS``): whole
    columns to Python at once (``to_pylist`` per group cost more than telling the stories),
    without holding a whole bucket of dicts (memory, and every full garbage collection would
    walk them).

    Python's cycle collector is paused meanwhile: the stories make no reference cycles (plain
    reference counting frees what they drop), but the rows kept for the story tables' batches
    made it walk the whole heap again and again (a fifth of the story's CPU time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield from _tell_slices(table, moves, rule)
    finally:
        if was_enabled:
            gc.enable()


def _tell_slices(table: Any, moves: dict[str, list[Event]], rule: StormRule) -> Iterator[tuple[str, list[Row]]]:
    count = table.num_rows
    clusters = table.column("cluster").to_pylist()
    groups = table.column("group").to_pylist()
    starts = [i for i in range(1, count) if groups[i] != groups[i - 1] or clusters[i] != clusters[i - 1]]
    starts = [0, *starts, count] if count else []
    first = 0
    while first < len(starts) - 1:
        last = first + 1
        while last < len(starts) - 1 and starts[last] - starts[first] < EVENT_SLICE_ROWS:
            last += 1
        offset = starts[first]
        events = _story_events(table.slice(offset, starts[last] - offset))
        for start, end in zip(starts[first:last], starts[first + 1:last + 1], strict=True):
            yield from tell(clusters[start], groups[start], events[start - offset:end - offset],
                            moves.get(clusters[start]), rule).items()
        first = last


def _story_events(part: Any) -> list[Event]:
    """A slice of events as dicts of the fields the stories read (``story.STORY_FIELDS``) and
    that have a value: the stories read a field with ``get`` unless they know it has one."""
    import pyarrow.compute as pc

    size = part.num_rows
    dense, sparse = [], []
    for name in part.column_names:
        if name in STORY_FIELDS:
            nulls = part.column(name).null_count
            if name == "kind" or 2 * nulls < size:
                dense.append(name)
            elif nulls < size:
                sparse.append(name)
    events = [dict(zip(dense, values, strict=True))
              for values in zip(*(part.column(name).to_pylist() for name in dense), strict=True)]
    for name in sparse:
        column = part.column(name)
        at = pc.indices_nonzero(pc.is_valid(column)).to_pylist()
        for index, value in zip(at, column.drop_null().to_pylist(), strict=True):
            events[index][name] = value
    return events


class StoryParts:
    """One part file per story table (``<table>/part-<name>.parquet``), written batch by batch
    and moved into place on ``close`` (a retried task writes the same names again)."""

    def __init__(self, directories: dict[str, Path], name: str):
        self._directories = directories
        self._name = name
        self._pending: dict[str, list[Row]] = {table: [] for table in STORY_TABLES}
        self._writers: dict[str, Any] = {}
        self.findings: list[Row] = []

    def add(self, table: str, rows: list[Row]) -> None:
        if table == "findings":
            self.findings.extend(rows)
            return
        pending = self._pending[table]
        pending.extend(rows)
        if len(pending) >= STORY_BATCH_ROWS:
            self._flush(table)

    def _staged(self, table: str) -> Path:
        return self._directories[table] / f".part-{self._name}.{os.getpid()}.tmp"

    def _flush(self, table: str) -> None:
        import pyarrow.parquet as pq

        rows = self._pending[table]
        if not rows:
            return
        if table not in self._writers:
            self._directories[table].mkdir(parents=True, exist_ok=True)
            self._writers[table] = pq.ParquetWriter(self._staged(table), arrow_schema(table))
        self._writers[table].write_batch(story_table_batch(table, rows))
        rows.clear()

    def close(self) -> None:
        for table in STORY_TABLES:
            self._flush(table)
        for table, writer in self._writers.items():
            writer.close()
            os.replace(self._staged(table), self._directories[table] / f"part-{self._name}.parquet")


def tell_into(table: Any, moves: dict[str, list[Event]], rule: StormRule, parts: StoryParts) -> None:
    """One sorted bucket's stories into ``parts``."""
    for name, rows in tell_bucket(table, moves, rule):
        parts.add(name, rows)
    parts.close()
