"""What the Spark engine's tasks do, in plain Python: a scan task turns its byte ranges into its
part of the ``events`` table, the events each group's story needs (in buckets of groups) and
per-split facts; a story task tells the stories of one bucket and writes its part of every
story table. ``pipeline/logs.py`` only schedules them.

Handing every event to the JVM as rows (to write them, shuffle them by group, sort them and
hand them back) cost more than parsing them. So the events cross Spark's shuffle as a few
opaque rows keyed by their bucket (``Routed``, partitioned by the key itself): per bucket of
groups, Arrow IPC streams (lz4) of a few MB; a story task reads its bucket's streams, sorts
them with Arrow and tells each group's story. The coordinator moves of every split go to every
bucket, and so do the client lines whose group a split before names (``read_split``: the
story tasks fill them in, in the same job); what the driver needs from a split (line counts,
coverage, unrecognised shapes: ``split_facts.SplitFacts``, which the local engine keeps too)
comes back through one story task as a small JSON document, with the findings. Nothing passes
through a filesystem the tasks share: inputs are opened by each task from their store, the
tables written into ``--out``'s (``pipeline.io``).

Memory: a scan task holds one batch of events and about 10 MB per bucket (``PAYLOAD_BYTES``);
a story task one bucket's events (``bucket_count`` keeps a bucket to about
``BUCKET_INPUT_BYTES`` of log text).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, cast

import numpy as np

from kafka_rebalance.pipeline.logparse.findings import GroupFindings
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.readlog import SplitReader
from kafka_rebalance.pipeline.logparse.rows import Event
from kafka_rebalance.pipeline.logparse.scan import Split
from kafka_rebalance.pipeline.logparse.schemas import (
    STORY_TABLES,
    arrow_schema,
    dictionary_columns,
    write_part,
)
from kafka_rebalance.pipeline.logparse.split_facts import SplitFacts, move_fields
from kafka_rebalance.pipeline.logparse.story import StormRule, in_story_order, tell_table

ARROW_BATCH_ROWS = 10_000
STORY_BATCH_ROWS = 20_000
BUCKET_INPUT_BYTES = 512 * 1024 * 1024


def bucket_count(total_bytes: int, parallelism: int) -> int:
    """Buckets of groups for the story job: one per core, more when the input is large."""
    return max(parallelism, -(-total_bytes // BUCKET_INPUT_BYTES))


def bucket_of(cluster: str, group: str, buckets: int) -> int:
    """The same bucket in every process (Python's own ``hash`` of a str is salted per process)."""
    return zlib.crc32(f"{cluster}\x00{group}".encode()) % buckets


# What a scan task hands the story tasks through Spark's shuffle, keyed by bucket (``Routed``):
# (split, kind, payload, text); ``payload`` an Arrow IPC stream (lz4), ``text`` JSON or a name.
ExchangeRow = tuple[int, str, bytes | None, str | None]
Routed = tuple[int, ExchangeRow]
# What a story task returns to the driver: a group's finding or a split's facts, as JSON.
Told = tuple[str | None, str | None]
EVENTS, MOVES, FACTS, UNREADABLE = "events", "moves", "facts", "unreadable"
# Client lines naming no group that a split before may name (``read_split``), and what each split named.
ORPHANS, NAMED = "orphans", "named"
# A bucket's events leave a scan task once this much (Arrow IPC, lz4) has gathered for it. PySpark's
# ``partitionBy`` then holds rows until about ten per bucket have come (fewer once its chunks pass
# 10 MB per bucket): at 1 MB a scan task holds about 10 MB per bucket.
PAYLOAD_BYTES = 1024 * 1024


def to_every_bucket(buckets: int, row: ExchangeRow) -> Iterator[Routed]:
    for bucket in range(buckets):
        yield bucket, row


class BucketPayloads:
    """A scan task's events per bucket of groups, as Arrow IPC streams (lz4) that leave the
    task (as ``EVENTS`` rows) when one holds ``PAYLOAD_BYTES``, and at the end of the split."""

    def __init__(self, split_index: int, schema: Any):
        import pyarrow as pa

        self._split = split_index
        self._schema = schema
        self._options = pa.ipc.IpcWriteOptions(compression="lz4")
        self._open: dict[int, tuple[Any, Any]] = {}

    def add(self, bucket: int, batch: Any) -> Iterator[Routed]:
        import pyarrow as pa

        if bucket not in self._open:
            sink = pa.BufferOutputStream()
            self._open[bucket] = (sink, pa.ipc.new_stream(sink, self._schema, options=self._options))
        sink, writer = self._open[bucket]
        writer.write_batch(batch)
        if sink.tell() >= PAYLOAD_BYTES:
            yield self._close(bucket)

    def _close(self, bucket: int) -> Routed:
        sink, writer = self._open.pop(bucket)
        writer.close()
        return bucket, (self._split, EVENTS, sink.getvalue().to_pybytes(), None)

    def flush(self) -> Iterator[Routed]:
        for bucket in list(self._open):
            yield self._close(bucket)


def read_split(split: Split, index: int, cluster: str, source: str, buckets: int, events_dir: str, *,
               syslog: SyslogReference) -> Iterator[Routed]:
    """Parse one split: write its part of the ``events`` table into ``events_dir`` (a path or
    URL) and yield the exchange's rows, each to its bucket (``Routed``): its events per bucket of groups,
    its coordinator moves to every bucket, and its ``SplitFacts`` (to the bucket
    ``index % buckets``, which hands them to the driver). A split that turns out unreadable
    (a corrupt .gz) sends every bucket an ``UNREADABLE`` row: what it sent before is dropped.

    Client lines naming no group take the group their client named last, maybe in a split
    before (``split_facts.fill_client_group``), known only to another task: such lines, still
    without a group at the end of this split's own fill (``orphan_mask``), go to every bucket
    (``ORPHANS``), with the group each client named last here (``NAMED``); each story task
    fills them (``BucketDelivery.filled_orphans``) and writes the ``events`` rows of those it
    keeps. ``syslog``: where year-less times are placed (``layout.SyslogReference``)."""
    import pyarrow.parquet as pq

    from kafka_rebalance.pipeline.arrow_memory import use_system_allocator
    from kafka_rebalance.pipeline.io import join, write_file

    use_system_allocator()  # on a cluster, where PySpark's own daemon forked this worker
    schema = arrow_schema("events")
    reader = SplitReader(split, index, source, cluster, syslog=syslog)
    facts = reader.facts
    router = SplitRouter(index, cluster, schema, buckets)
    with write_file(join(events_dir, f"part-{index:05d}.parquet")) as (filesystem, path):
        with pq.ParquetWriter(path, schema, filesystem=filesystem, use_dictionary=dictionary_columns(schema)) as writer:
            try:
                for table in reader.tables():
                    for batch in table.to_batches(ARROW_BATCH_ROWS):
                        yield from router.route(batch, writer)
                yield from router.flush()
            except (OSError, EOFError, ValueError) as exc:  # a truncated or corrupt .gz
                # As the local engine does: nothing of an unreadable file is kept but its line count.
                facts = SplitFacts(index, source, cluster, split.start, unreadable=f"unreadable: {exc}")
                yield from to_every_bucket(buckets, (index, UNREADABLE, None, None))
        if facts.unreadable:
            pq.write_table(schema.empty_table(), path, filesystem=filesystem)
        else:
            yield from router.orphans(source, facts.named_last)
    facts.lines = reader.counts.lines
    if facts.moves:
        moves = json.dumps([move_fields(move) for move in facts.moves], default=str)
        yield from to_every_bucket(buckets, (index, MOVES, None, moves))
    yield index % buckets, (index, FACTS, None, facts.to_json())


def orphan_mask(batch: Any) -> Any:
    """The client lines of ``batch`` that name no group and were given none by their split's
    own fill (``split_facts.fill_client_group``: their client named no group before them in
    the split): a split before may have named it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    client = batch.column("client_id")
    group = batch.column("group")
    return pc.fill_null(pc.and_(
        pc.and_(pc.is_valid(batch.column("kind")), pc.equal(batch.column("side"), "client")),
        pc.and_(pc.not_equal(pc.fill_null(client, ""), ""), pc.equal(pc.fill_null(group, ""), ""))),
        pa.scalar(False))


class SplitRouter:
    """A scan task's events of one split to where they go: the split's part of ``events``, the
    story buckets of their groups (``BucketPayloads``), and the orphans (``orphan_mask``), kept
    for every bucket until the split ends."""

    def __init__(self, split_index: int, cluster: str, schema: Any, buckets: int):
        self._split = split_index
        self._cluster = cluster
        self._schema = schema
        self._buckets = buckets
        self._payloads = BucketPayloads(split_index, schema)
        self._bucket_of: dict[str, int] = {}
        self._orphans: list[Any] = []

    def route(self, batch: Any, writer: Any) -> Iterator[Routed]:
        """One batch of the split's events (``events``' schema), in file order."""
        import pyarrow as pa
        import pyarrow.compute as pc

        orphaned = orphan_mask(batch)
        if pc.any(orphaned).as_py():
            self._orphans.append(batch.filter(orphaned))
            batch = batch.filter(pc.invert(orphaned))
        writer.write_batch(batch)
        # Each distinct group once: its bucket, then every row's by its group's code.
        groups = pc.dictionary_encode(pc.if_else(batch.column("kind").is_valid(), batch.column("group"), None))
        names = groups.dictionary.to_pylist()
        buckets_of = np.array([self._bucket(name) if name else -1 for name in names] + [-1], np.int64)
        rows_bucket = buckets_of[groups.indices.fill_null(len(names)).to_numpy(zero_copy_only=False)]
        for bucket in np.unique(rows_bucket[rows_bucket >= 0]).tolist():
            yield from self._payloads.add(bucket, batch.take(pa.array(np.flatnonzero(rows_bucket == bucket), pa.int32())))

    def _bucket(self, group: str) -> int:
        bucket = self._bucket_of.get(group)
        if bucket is None:
            bucket = self._bucket_of[group] = bucket_of(self._cluster, group, self._buckets)
        return bucket

    def flush(self) -> Iterator[Routed]:
        yield from self._payloads.flush()

    def orphans(self, source: str, named_last: dict[str, str]) -> Iterator[Routed]:
        """To every bucket: the split's orphans (``ORPHANS``, its source as text) and the group
        each client named last in it (``NAMED``), for the orphans of the splits after it."""
        import pyarrow as pa

        if self._orphans:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, self._schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as writer:
                for batch in self._orphans:
                    writer.write_batch(batch)
            yield from to_every_bucket(self._buckets, (self._split, ORPHANS, sink.getvalue().to_pybytes(), source))
        if named_last:
            named = json.dumps({"source": source, "named_last": named_last})
            yield from to_every_bucket(self._buckets, (self._split, NAMED, None, named))


class BucketDelivery:
    """What a story task got from the exchange: its bucket's events, every split's coordinator
    moves, orphans (``read_split``) and the groups its clients named last, and the facts routed
    to it."""

    def __init__(self) -> None:
        self.payloads: list[tuple[int, Any]] = []  # (split, Arrow IPC stream)
        self.moves: dict[int, list[Event]] = {}
        self.unreadable: set[int] = set()
        self.facts: list[str] = []
        self.orphans: list[tuple[int, int, str, Any]] = []  # (split, bucket, source, Arrow IPC stream)
        self.named: dict[int, tuple[str, dict[str, str]]] = {}  # split -> (source, client -> group)

    def add(self, bucket: int, row: ExchangeRow) -> None:
        split, kind, payload, text = row
        if kind == EVENTS:
            self.payloads.append((split, payload))
        elif kind == MOVES:
            self.moves[split] = json.loads(cast("str", text))
        elif kind == FACTS:
            self.facts.append(cast("str", text))
        elif kind == UNREADABLE:
            self.unreadable.add(split)
        elif kind == ORPHANS:
            self.orphans.append((split, bucket, cast("str", text), payload))
        elif kind == NAMED:
            named = json.loads(cast("str", text))
            self.named[split] = (named["source"], named["named_last"])

    def filled_orphans(self, buckets: int) -> Any:
        """The orphans this task owns, each given the group its client named last in the splits
        before its own (same source, file order: splits are numbered so), as reading the file
        from its start would (``split_facts.fill_client_group``): the filled ones whose group
        falls in the bucket they came to, and those still without a group once
        (by the split's facts bucket, ``index % buckets``). None when there are none."""
        import pyarrow as pa

        kept = []
        for split, mine, source, payload in sorted(self.orphans, key=lambda orphans: orphans[0]):
            if split in self.unreadable:
                continue
            carried: dict[str, str] = {}
            for before in sorted(s for s in self.named if s < split and s not in self.unreadable):
                named_in, named_last = self.named[before]
                if named_in == source:
                    carried.update(named_last)
            table = pa.ipc.open_stream(payload).read_all()
            clusters = table.column("cluster").to_pylist()
            groups = [carried.get(client, group) for client, group in
                      zip(table.column("client_id").to_pylist(), table.column("group").to_pylist(), strict=True)]
            keep = [row for row, (cluster, group) in enumerate(zip(clusters, groups, strict=True))
                    if (bucket_of(cluster, group, buckets) == mine if group else split % buckets == mine)]
            if keep:
                table = table.set_column(table.schema.get_field_index("group"), "group", pa.array(groups, pa.string()))
                kept.append(table.take(pa.array(keep, pa.int32())))
        return pa.concat_tables(kept) if kept else None

    def events(self, orphans: Any = None) -> Any:
        """The bucket's events (and its filled ``orphans``) as one table sorted by (cluster,
        group, source, seq), or None."""
        import pyarrow as pa
        import pyarrow.compute as pc

        tables = [pa.ipc.open_stream(payload).read_all() for split, payload in self.payloads
                  if split not in self.unreadable]
        if orphans is not None:
            tables.append(orphans.filter(pc.fill_null(pc.not_equal(orphans.column("group"), ""), False)))
        tables = [table for table in tables if table.num_rows]
        return in_story_order(pa.concat_tables(tables)) if tables else None

    def moves_by_cluster(self) -> dict[str, list[Event]]:
        """Every split's coordinator moves, per cluster in file order (splits are numbered so)."""
        moves: dict[str, list[Event]] = {}
        for split in sorted(self.moves):
            if split not in self.unreadable:
                for move in self.moves[split]:
                    moves.setdefault(move["cluster"], []).append(move)
        return moves


def tell_received(rows: Iterable[Routed], rule: StormRule, buckets: int, events_dir: str,
                  story_dirs: dict[str, str], name: str) -> Iterator[Told]:
    """A story task: the exchange's rows for one bucket -> its part of every story table (in
    ``story_dirs``, paths or URLs), the ``events`` rows of the orphans it owns (in
    ``events_dir``, as ``part-story-<name>``) and what goes back to the driver (``Told``): the
    findings, then the facts."""
    from kafka_rebalance.pipeline.arrow_memory import use_system_allocator
    from kafka_rebalance.pipeline.io import join

    use_system_allocator()  # on a cluster, where PySpark's own daemon forked this worker
    received = BucketDelivery()
    for bucket, row in rows:
        received.add(bucket, row)
    orphans = received.filled_orphans(buckets)
    if orphans is not None:
        write_part(orphans, join(events_dir, f"part-story-{name}.parquet"))
    table = received.events(orphans)
    if table is not None:
        for finding in tell_into(table, received.moves_by_cluster(), rule, story_dirs, name):
            yield json.dumps(finding, default=str), None
    for facts in received.facts:
        yield None, facts


def tell_into(table: Any, moves: dict[str, list[Event]], rule: StormRule, story_dirs: dict[str, str], name: str
              ) -> list[GroupFindings]:
    """One sorted bucket's stories: its part of every story table it has rows of
    (``<table>/part-<name>.parquet``, a path or URL, written through ``pipeline.io.write_file``:
    a retried task writes the same names again), and its groups' findings."""
    from kafka_rebalance.pipeline.io import join

    told = tell_table(table, moves, rule)
    for story_table_name in STORY_TABLES:
        rows = told.tables[story_table_name]
        if rows.num_rows:
            write_part(rows, join(story_dirs[story_table_name], f"part-{name}.parquet"), STORY_BATCH_ROWS)
    return told.findings
