"""What the Spark engine's tasks do, in plain Python: a scan task turns its byte ranges into its
part of the ``events`` table, the events each group's story needs (in buckets of groups) and
per-split facts; a story task tells the stories of one bucket and writes its part of every
story table. ``pipeline/logs.py`` only schedules them.

Handing every event to the JVM as rows (to write them, shuffle them by group, sort them and
hand them back) cost more than parsing them. So the events cross Spark's shuffle as a few
opaque rows: a scan task yields, per bucket of groups, Arrow IPC streams (lz4) of a few MB
(``EXCHANGE_DDL``), routed so that ``repartition`` gives each bucket its own story task
(``routes``); a story task reads its bucket's streams, sorts them with Arrow and tells each
group's story. The coordinator moves of every split go to every bucket, and what the driver
needs from a split (line counts, coverage, unrecognised shapes, the last group each client
named: ``split_facts.SplitFacts``, which the local engine keeps too) comes back through one
story task as a small JSON document, with the findings. Nothing passes through a filesystem the
tasks share: inputs are opened by each task from their store, the tables written into
``--out``'s (``pipeline.io``).

Memory: a scan task holds one batch of events and a few MB per bucket; a story task one
bucket's events (``bucket_count`` keeps a bucket to about ``BUCKET_INPUT_BYTES`` of log text).
"""

from __future__ import annotations

import gc
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack
from typing import Any, cast

import numpy as np

from kafka_rebalance.pipeline.logparse.findings import GroupFindings
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.readlog import SplitReader
from kafka_rebalance.pipeline.logparse.rows import Event
from kafka_rebalance.pipeline.logparse.scan import Split
from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES, arrow_schema, story_table_batch
from kafka_rebalance.pipeline.logparse.split_facts import SplitFacts, move_fields
from kafka_rebalance.pipeline.logparse.story import STORY_FIELDS, StormRule, StoryRows, story_tables, tell

ARROW_BATCH_ROWS = 10_000
STORY_BATCH_ROWS = 20_000
EVENT_SLICE_ROWS = 4096
BUCKET_INPUT_BYTES = 512 * 1024 * 1024
SORT_KEYS = [("cluster", "ascending"), ("group", "ascending"), ("source", "ascending"), ("seq", "ascending")]


def bucket_count(total_bytes: int, parallelism: int) -> int:
    """Buckets of groups for the story job: one per core, more when the input is large."""
    return max(parallelism, -(-total_bytes // BUCKET_INPUT_BYTES))


def bucket_of(cluster: str, group: str, buckets: int) -> int:
    """The same bucket in every process (Python's own ``hash`` of a str is salted per process)."""
    return zlib.crc32(f"{cluster}\x00{group}".encode()) % buckets


# The rows a scan task hands the story tasks, through Spark's shuffle (``route``: see ``routes``).
EXCHANGE_DDL = "`route` int, `split` int, `kind` string, `payload` binary, `text` string"
# What a story task returns to the driver: one finding per group, and the facts of the splits
# routed to it.
TOLD_DDL = "`finding` string, `facts` string"
EVENTS, MOVES, FACTS, UNREADABLE = "events", "moves", "facts", "unreadable"
# A bucket's events leave a scan task once this much (Arrow IPC, lz4) has gathered for it.
PAYLOAD_BYTES = 4 * 1024 * 1024
# Spark's hash partitioning: Murmur3 (x86, 32 bit) of the key with this seed, modulo the partitions.
SPARK_HASH_SEED = 42


def _spark_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash(int)`` (``Murmur3_x86_32.hashInt``), as a signed 32-bit int."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k1 = (value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
    k1 = rotl(k1, 15) * 0x1B873593 & 0xFFFFFFFF
    h1 = seed ^ k1
    h1 = (rotl(h1, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def routes(buckets: int) -> list[int]:
    """For each bucket, an int key that ``repartition(buckets, key)`` sends to partition
    ``bucket``: one story task per bucket (the bucket numbers themselves may hash two buckets
    to one task and leave a core idle). Were Spark's hash ever to differ, the stories would be
    the same, only less evenly spread."""
    found: dict[int, int] = {}
    key = 0
    while len(found) < buckets:
        found.setdefault(_spark_hash_int(key) % buckets, key)
        key += 1
    return [found[bucket] for bucket in range(buckets)]


class BucketPayloads:
    """A scan task's events per bucket of groups, as Arrow IPC streams (lz4) that leave the
    task (as ``EVENTS`` rows) when one holds ``PAYLOAD_BYTES``, and at the end of the split."""

    def __init__(self, split_index: int, schema: Any, routes: list[int]):
        import pyarrow as pa

        self._split = split_index
        self._schema = schema
        self._routes = routes
        self._options = pa.ipc.IpcWriteOptions(compression="lz4")
        self._open: dict[int, tuple[Any, Any]] = {}

    def add(self, bucket: int, batch: Any) -> Iterator[Any]:
        import pyarrow as pa

        if bucket not in self._open:
            sink = pa.BufferOutputStream()
            self._open[bucket] = (sink, pa.ipc.new_stream(sink, self._schema, options=self._options))
        sink, writer = self._open[bucket]
        writer.write_batch(batch)
        if sink.tell() >= PAYLOAD_BYTES:
            yield self._close(bucket)

    def _close(self, bucket: int) -> Any:
        sink, writer = self._open.pop(bucket)
        writer.close()
        return exchange_batch([self._routes[bucket]], self._split, EVENTS, payload=sink.getvalue())

    def flush(self) -> Iterator[Any]:
        for bucket in list(self._open):
            yield self._close(bucket)


def exchange_batch(routes: list[int], split: int, kind: str, *, payload: Any = None,
                   texts: list[str] | None = None) -> Any:
    """Rows of the exchange (``EXCHANGE_DDL``), one per route; ``payload`` (an Arrow buffer, not
    copied) only with a single route."""
    import pyarrow as pa

    count = len(routes)
    if payload is None:
        payloads = pa.nulls(count, pa.binary())
    else:
        offsets = pa.array([0, payload.size], pa.int32()).buffers()[1]
        payloads = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, payload])
    return pa.RecordBatch.from_arrays(
        [pa.array(routes, pa.int32()), pa.array([split] * count, pa.int32()), pa.array([kind] * count, pa.string()),
         payloads, pa.array(texts if texts is not None else [None] * count, pa.string())],
        names=["route", "split", "kind", "payload", "text"])


def read_split(split: Split, index: int, cluster: str, source: str, routes: list[int], events_dir: str,
               inherited: dict[str, str] | None = None, *, syslog: SyslogReference) -> Iterator[Any]:
    """Parse one split: write its part of the ``events`` table into ``events_dir`` (a path or
    URL) and yield the exchange's rows (``EXCHANGE_DDL``): its events per bucket of groups,
    its coordinator moves to every bucket, and its ``SplitFacts`` (to the bucket
    ``index % buckets``, which hands them to the driver). A split that turns out unreadable
    (a corrupt .gz) sends every bucket an ``UNREADABLE`` row: what it sent before is dropped.
    ``inherited``: the group each client named last before this split (see ``fill_chains``);
    ``syslog``: where year-less times are placed (``layout.SyslogReference``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kafka_rebalance.pipeline.io import join, write_file

    buckets = len(routes)
    schema = arrow_schema("events")
    reader = SplitReader(split, index, source, cluster, syslog=syslog, inherited=inherited)
    facts = reader.facts
    bucket_cache: dict[str, int] = {}
    payloads = BucketPayloads(index, schema, routes)

    def routed(batch: Any) -> Iterator[Any]:
        import pyarrow.compute as pc

        groups = pc.dictionary_encode(pc.if_else(batch.column("kind").is_valid(), batch.column("group"), None))
        names = groups.dictionary.to_pylist()
        buckets_of = np.array([bucket_cache.setdefault(name, bucket_of(cluster, name, buckets)) if name else -1
                               for name in names] + [-1], np.int64)
        codes = groups.indices.fill_null(len(names)).to_numpy()
        rows_bucket = buckets_of[codes]
        for bucket in np.unique(rows_bucket[rows_bucket >= 0]).tolist():
            yield from payloads.add(bucket, batch.take(pa.array(np.flatnonzero(rows_bucket == bucket), pa.int32())))

    with write_file(join(events_dir, f"part-{index:05d}.parquet")) as (filesystem, path):
        with pq.ParquetWriter(path, schema, filesystem=filesystem) as writer:
            try:
                for table in reader.tables():
                    for batch in table.to_batches(ARROW_BATCH_ROWS):
                        writer.write_batch(batch)
                        yield from routed(batch)
                yield from payloads.flush()
            except (OSError, EOFError, ValueError) as exc:  # a truncated or corrupt .gz
                # As the local engine does: nothing of an unreadable file is kept but its line count.
                facts = SplitFacts(index, source, cluster, split.start, unreadable=f"unreadable: {exc}")
                yield exchange_batch(routes, index, UNREADABLE)
        if facts.unreadable:
            pq.write_table(schema.empty_table(), path, filesystem=filesystem)
    facts.lines = reader.counts.lines
    if facts.moves:
        yield exchange_batch(routes, index, MOVES, texts=[json.dumps([move_fields(move) for move in facts.moves], default=str)] * buckets)
    yield exchange_batch([routes[index % buckets]], index, FACTS, texts=[facts.to_json()])


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


class BucketDelivery:
    """What a story task got from the exchange: its bucket's events, every split's coordinator
    moves, and the facts routed to it."""

    def __init__(self) -> None:
        self.payloads: list[tuple[int, Any]] = []  # (split, Arrow buffer)
        self.moves: dict[int, list[Event]] = {}
        self.unreadable: set[int] = set()
        self.facts: list[str] = []

    def add(self, batch: Any) -> None:
        payloads = batch.column("payload")
        rows = zip(batch.column("split").to_pylist(), batch.column("kind").to_pylist(),
                   batch.column("text").to_pylist(), strict=True)
        for row, (split, kind, text) in enumerate(rows):
            if kind == EVENTS:
                self.payloads.append((split, payloads[row].as_buffer()))  # not copied
            elif kind == MOVES:
                self.moves[split] = json.loads(text)
            elif kind == FACTS:
                self.facts.append(text)
            elif kind == UNREADABLE:
                self.unreadable.add(split)

    def events(self) -> Any:
        """The bucket's events as one table sorted by (cluster, group, source, seq), or None."""
        import pyarrow as pa

        tables = [pa.ipc.open_stream(payload).read_all() for split, payload in self.payloads
                  if split not in self.unreadable]
        return pa.concat_tables(tables).sort_by(SORT_KEYS) if tables else None

    def moves_by_cluster(self) -> dict[str, list[Event]]:
        """Every split's coordinator moves, per cluster in file order (splits are numbered so)."""
        moves: dict[str, list[Event]] = {}
        for split in sorted(self.moves):
            if split not in self.unreadable:
                for move in self.moves[split]:
                    moves.setdefault(move["cluster"], []).append(move)
        return moves


def tell_received(batches: Iterable[Any], rule: StormRule, story_dirs: dict[str, str], name: str) -> Iterator[Any]:
    """A story task: the exchange's rows for one bucket -> its part of every story table (in
    ``story_dirs``, paths or URLs) and ``TOLD_DDL`` rows: the findings, then the facts."""
    import pyarrow as pa

    received = BucketDelivery()
    for batch in batches:
        received.add(batch)
    table = received.events()
    if table is not None:
        parts = StoryParts(story_dirs, name)
        tell_into(table, received.moves_by_cluster(), rule, parts)
        if parts.findings:
            findings = [json.dumps(f, default=str) for f in parts.findings]
            yield pa.RecordBatch.from_pydict({"finding": findings, "facts": [None] * len(findings)},
                                             schema=pa.schema([("finding", pa.string()), ("facts", pa.string())]))
    if received.facts:
        yield pa.RecordBatch.from_pydict({"finding": [None] * len(received.facts), "facts": received.facts},
                                         schema=pa.schema([("finding", pa.string()), ("facts", pa.string())]))


def tell_bucket(table: Any, moves: dict[str, list[Event]], rule: StormRule) -> Iterator[StoryRows]:
    """One sorted bucket -> the story of each group in it (``story.tell``), in order.

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


def _tell_slices(table: Any, moves: dict[str, list[Event]], rule: StormRule) -> Iterator[StoryRows]:
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
            yield tell(clusters[start], groups[start], events[start - offset:end - offset],
                       moves.get(clusters[start]), rule)
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
    events: list[dict[str, Any]] = [dict(zip(dense, values, strict=True))
                                     for values in zip(*(part.column(name).to_pylist() for name in dense), strict=True)]
    for name in sparse:
        column = part.column(name)
        at = pc.indices_nonzero(pc.is_valid(column)).to_pylist()
        for index, value in zip(at, column.drop_null().to_pylist(), strict=True):
            events[index][name] = value
    # The typed edge: the columns of ``events`` (``schemas.arrow_schema``) are ``rows.Event``'s fields.
    return cast("list[Event]", events)


class StoryParts:
    """One part file per story table (``<table>/part-<name>.parquet``, a path or URL), written
    batch by batch (``pipeline.io.write_file``: a retried task writes the same names again)."""

    def __init__(self, directories: dict[str, str], name: str):
        self._directories = directories
        self._name = name
        self._pending: dict[str, list[Mapping[str, Any]]] = {table: [] for table in STORY_TABLES}
        self._writers: dict[str, Any] = {}
        # Each writer closes before its file is moved into place (last in, first out).
        self._files = ExitStack()
        self.findings: list[GroupFindings] = []

    def add(self, told: StoryRows) -> None:
        for table, rows in story_tables(told):
            pending = self._pending[table]
            pending.extend(rows)
            if len(pending) >= STORY_BATCH_ROWS:
                self._flush(table)
        self.findings.extend(told["findings"])

    def _flush(self, table: str) -> None:
        import pyarrow.parquet as pq

        from kafka_rebalance.pipeline.io import join, write_file

        rows = self._pending[table]
        if not rows:
            return
        if table not in self._writers:
            filesystem, path = self._files.enter_context(
                write_file(join(self._directories[table], f"part-{self._name}.parquet")))
            self._writers[table] = self._files.enter_context(
                pq.ParquetWriter(path, arrow_schema(table), filesystem=filesystem))
        self._writers[table].write_batch(story_table_batch(table, rows))
        rows.clear()

    def close(self) -> None:
        for table in STORY_TABLES:
            self._flush(table)
        self._files.close()


def tell_into(table: Any, moves: dict[str, list[Event]], rule: StormRule, parts: StoryParts) -> None:
    """One sorted bucket's stories into ``parts``."""
    for told in tell_bucket(table, moves, rule):
        parts.add(told)
    parts.close()
