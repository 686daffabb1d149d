"""Rebalance forensics on Kafka logs: broker and client lines of any layout -> rebalances, their
causes and the tables of ``logparse.tables``; on Spark for big inputs, in-process for a paste.

The Spark job never splits the whole log into lines: each task reads byte ranges of the files
(``logparse.scan``), finds the few fixed gate phrases (``catalogue.GATE_SUBSTRINGS``) with byte
searches and decodes only the lines holding one, and the line after each (to join lines a
terminal wrapped), which ``logparse.parse`` reads. Events are then grouped by (cluster, group)
and each group's story (``logparse.story.tell``) is told in one streaming ``mapInArrow`` pass,
its rows leaving the workers as typed Arrow columns: memory is bounded by the largest group,
not by the log.

Small inputs (a paste from stdin, a few files of an incident) skip Spark entirely: starting a
JVM costs more than reading them (``benchmarks/logs.py`` measures both). The two engines run
the same parser and story and write the same tables.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, StormRule
from kafka_rebalance.pipeline.logparse.tables import STDIN

__all__ = ["StormRule", "LogsRun", "run_logs", "choose_engine", "LOCAL_ENGINE_LIMIT_BYTES",
           "LOGS_DRIVER_JVM_OPTIONS"]

# Below this much input the in-process engine is faster than starting Spark.
LOCAL_ENGINE_LIMIT_BYTES = 64 * 1024 * 1024
SUMMARY_SAMPLE_LINES = 5
# Lines are counted per file (one aggregate per file, in the same pass) for this many files.
PER_FILE_LINE_COUNTS = 64


@dataclass
class LogsRun:
    """What ``run_logs`` produced, for the CLI to print."""

    out_dir: str
    summary: dict
    report: str


def input_bytes(files: list[str]) -> int:
    total = 0
    for name in files:
        if name == STDIN:
            continue
        try:
            total += os.path.getsize(name) * (8 if name.endswith(".gz") else 1)
        except OSError:
            total += LOCAL_ENGINE_LIMIT_BYTES
    return total


# The driver JVM (all of Spark on a local master) for ``logs``: the client compiler only. The
# JVM's share of the job (a shuffle of the events, Arrow hand-overs, Parquet) is small; C2's
# compile threads cost more CPU than they win back (measured when the JVM still split the
# lines, on a 200 MB log: 22.6 -> 16.5 CPU-s for the first run in a session).
LOGS_DRIVER_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"

MIN_SPLIT_BYTES = 128 * 1024 * 1024
MAX_SPLIT_BYTES = 1024 * 1024 * 1024


def split_bytes(total_bytes: int, parallelism: int) -> int:
    """Input split size: one split per core when that is between 128 MB and 1 GB. Every split
    starts Python workers (pyarrow, the catalogue) and pays the Arrow hand-over once, so fewer,
    larger splits cost less CPU (measured: 24 -> 17.5 CPU-s per GB on local[2])."""
    return max(MIN_SPLIT_BYTES, min(MAX_SPLIT_BYTES, -(-total_bytes // max(parallelism, 1))))


def choose_engine(engine: str, files: list[str], master: str | None) -> str:
    """``auto``: the local engine for small inputs unless a Spark master was asked for."""
    if engine != "auto":
        return engine
    if master is not None:
        return "spark"
    return "local" if input_bytes(files) < LOCAL_ENGINE_LIMIT_BYTES else "spark"


# --------------------------------------------------------------------------- Spark

def scan_events(spark: Any, files: list[str], clusters: dict[str, str] | None = None,
                syslog_reference_ms: int | None = None) -> Any:
    """Files -> one row per line about groups: an event (``kind`` set) or an unrecognised line
    (``kind`` null, ``shape`` set), plus one row per split with its line count in ``lines``
    (every other column null). Each task reads its byte ranges with ``logparse.scan``: only
    the lines holding a gate phrase are split out and decoded, so the few percent of a broker
    log that is about groups is all that Python parses and all that Spark moves."""
    from kafka_rebalance.pipeline.logparse.layout import syslog_reference
    from kafka_rebalance.pipeline.logparse.parse import EVENT_COLUMNS, parse_numbered
    from kafka_rebalance.pipeline.logparse.scan import ScanCounts, Split, pack_splits, plan_splits, scan
    from kafka_rebalance.pipeline.logparse.tables import event_ddl

    labels = dict(clusters or {})
    sizes = {name: os.path.getsize(name) for name in files}
    total = sum(sizes.values())
    parallelism = spark.sparkContext.defaultParallelism
    size_per_split = split_bytes(total, parallelism)
    splits = plan_splits(list(sizes.items()), size_per_split)
    tasks = pack_splits(splits, sizes, max(parallelism, -(-total // size_per_split)))
    schema = _arrow_schema((*EVENT_COLUMNS, ("shape", "string"), ("lines", "long")))

    def scan_splits(batches):
        with syslog_reference(syslog_reference_ms):
            yield from _scan_splits(batches)

    def _scan_splits(batches):
        import pyarrow as pa

        for batch in batches:
            packed = zip(*(batch.column(n).to_pylist() for n in ("paths", "starts", "ends")), strict=True)
            for path, start, end in (split for task in packed for split in zip(*task, strict=True)):
                counts = ScanCounts()
                cluster = _cluster_for(path, labels)
                records: list[dict] = []
                for record in parse_numbered(scan(Split(path, start, end), counts), path, cluster):
                    records.append(record)
                    if len(records) >= ARROW_BATCH_ROWS:
                        yield pa.RecordBatch.from_pylist(records, schema=schema)
                        records = []
                records.append({"source": path, "cluster": cluster, "lines": counts.lines})
                yield pa.RecordBatch.from_pylist(records, schema=schema)

    # One row (a list of splits) per partition: parallelize keeps them apart, where a
    # round-robin repartition could put two splits in one task and leave a core idle.
    rows = [([s.path for s in task], [s.start for s in task], [s.end for s in task]) for task in tasks]
    plan = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)),
                                 "paths array<string>, starts array<bigint>, ends array<bigint>")
    return plan.mapInArrow(scan_splits, event_ddl() + ", `lines` bigint")


ARROW_BATCH_ROWS = 10_000
STORY_BATCH_ROWS = 20_000


def _arrow_schema(ddl_columns: tuple[tuple[str, str], ...]) -> Any:
    import pyarrow as pa

    types = {"long": pa.int64(), "boolean": pa.bool_(), "string": pa.string()}
    return pa.schema([(name, types[kind]) for name, kind in ddl_columns])


def story_rows(events: Any, coordinator_moves: dict[str, list[dict]], rule: StormRule) -> Any:
    """Events -> story rows (``tables.story_arrow_schema``: each row typed, ``table`` naming its
    table). Events are shuffled by (cluster, group) and sorted, so each Python worker sees each
    of its groups' events together, in one stream: one story per group, memory bounded by the
    largest group."""
    from pyspark.sql import functions as F

    from kafka_rebalance.pipeline.logparse.story import tell
    from kafka_rebalance.pipeline.logparse.tables import story_arrow_schema, story_batch, story_ddl

    def tell_stream(batches):
        import pyarrow as pa

        schema = story_arrow_schema()
        pending: dict[str, list[dict]] = {}
        findings: list[str] = []
        pending_rows = 0
        current_key, current = None, []

        def flush():
            nonlocal pending_rows
            for table, rows in pending.items():
                if rows:
                    yield story_batch(table, rows)
            if findings:
                count = len(findings)
                arrays = [pa.array(["findings"] * count, pa.string()), pa.array(findings, pa.string())]
                arrays += [pa.nulls(count, field.type) for field in schema][2:]
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            pending.clear()
            findings.clear()
            pending_rows = 0

        def told(key, records):
            nonlocal pending_rows
            for table, rows in tell(key[0], key[1], records, coordinator_moves.get(key[0]), rule).items():
                if table == "findings":
                    findings.extend(json.dumps(row, default=str) for row in rows)
                else:
                    pending.setdefault(table, []).extend(rows)
                pending_rows += len(rows)

        for batch in batches:
            for record in batch.to_pylist():
                key = (record["cluster"], record["group"])
                if key != current_key and current:
                    told(current_key, current)
                    current = []
                    if pending_rows >= STORY_BATCH_ROWS:
                        yield from flush()
                current_key = key
                current.append(record)
        if current:
            told(current_key, current)
        yield from flush()

    from pyspark.sql import Window

    # Client lines that do not name their group take the one the same client named last.
    named_last = Window.partitionBy("source", "client_id").orderBy("seq").rowsBetween(Window.unboundedPreceding, 0)
    filled = events.withColumn("group", F.when(
        F.col("group").isNull() & (F.col("side") == "client") & F.col("client_id").isNotNull(),
        F.last("group", ignorenulls=True).over(named_last)).otherwise(F.col("group")))
    grouped = filled.where(F.col("kind").isNotNull() & F.col("group").isNotNull())
    ordered = grouped.repartition("cluster", "group").sortWithinPartitions("cluster", "group", "source", "seq")
    return ordered.mapInArrow(tell_stream, story_ddl())


class Stopwatch:
    """Seconds spent per stage of a run (in summary.json, and in the benchmark's table)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + now - self._last, 3)
        self._last = now


def _run_spark(spark: Any, files: list[str], clusters: dict[str, str], rule: StormRule, out: Any,
               progress: bool | None, watch: Stopwatch, syslog_reference_ms: int) -> dict:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from kafka_rebalance.pipeline.logparse.tables import CLUSTER_KINDS
    from kafka_rebalance.pipeline.spark import spark_progress

    observation = Observation("lines")
    per_file = [] if len(files) == 1 else [
        F.sum(F.when(F.col("source") == name, F.col("lines"))).alias(f"lines_{i}")
        for i, name in enumerate(files[:PER_FILE_LINE_COUNTS])]
    scanned = scan_events(spark, files, clusters, syslog_reference_ms).observe(
        observation, F.sum("lines").alias("lines_read"), F.count("kind").alias("events"), *per_file)
    events_path = str(out.path("events"))
    with spark_progress(spark, "reading logs", enabled=progress):
        scanned.where(F.col("lines").isNull()).drop("lines").write.parquet(events_path)
    watch.lap("read and parse (Spark)")
    counts = observation.get
    lines_read = int(counts.get("lines_read") or 0)
    event_count = int(counts.get("events") or 0)
    parsed = spark.read.parquet(events_path)
    events = parsed.where(F.col("kind").isNotNull())
    moves: dict[str, list[dict]] = {}
    for row in events.where(F.col("kind").isin(*CLUSTER_KINDS)).select("cluster", "partition", "time_ms", "line",
                                                                     "source", "seq").collect():
        moves.setdefault(row["cluster"], []).append(row.asDict())
    with spark_progress(spark, "rebuilding rebalances", enabled=progress):
        # The story rows are few (one per rebalance, member event, cause): one Spark job writes
        # them all, typed, then the driver streams each table's rows into its own Parquet.
        rows_path = out.staging / "story-rows.tmp"
        story_rows(events, moves, rule).write.parquet(str(rows_path))
        findings = write_story_tables(out, rows_path)
        groups = len(findings)  # one per group told
        watch.lap("stories and tables (Spark)")
        unrecognised = parsed.where(F.col("kind").isNull()).groupBy("cluster", "source", "shape").agg(
            F.count(F.lit(1)).alias("count"), F.first("line").alias("sample")).orderBy(F.desc("count"))
        unrecognised.write.parquet(str(out.path("unrecognised")))
        coverage_rows = parsed.groupBy("source", "cluster").agg(
            F.sum((F.col("side") == "broker").cast("long")).alias("broker_lines"),
            F.sum((F.col("side") == "client").cast("long")).alias("client_lines"),
            F.sum(F.col("kind").isNull().cast("long")).alias("unrecognised_lines"),
            F.min("time_ms").alias("first_ms"), F.max("time_ms").alias("last_ms")).collect()
    watch.lap("counts and coverage (Spark)")
    seen = {r["source"]: r.asDict() for r in coverage_rows}
    coverage = []
    for index, name in enumerate(files):
        row = seen.get(name) or {
            "source": name, "cluster": _cluster_for(name, clusters), "broker_lines": 0, "client_lines": 0,
            "unrecognised_lines": 0, "first_ms": None, "last_ms": None}
        row = {k: (int(v) if isinstance(v, int | float) and v is not None else v) for k, v in row.items()}
        row["source"] = name
        counted = lines_read if len(files) == 1 else counts.get(f"lines_{index}")
        row["lines"] = int(counted) if counted is not None else None
        coverage.append(row)
    return {"findings": findings, "coverage": coverage, "lines_read": lines_read, "events": event_count,
            "groups": groups, "samples": []}


def write_story_tables(out: Any, rows_path: Path) -> list[dict]:
    """The story rows Spark wrote (``tables.story_arrow_schema``) -> one Parquet file per story
    table, streamed batch by batch with Arrow compute (memory stays bounded); returns the
    findings (one per group)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from kafka_rebalance.pipeline.logparse.tables import (
        STORY_KEY,
        STORY_PAYLOAD,
        STORY_TABLES,
        TABLES,
        arrow_schema,
        story_table_batch,
    )

    rows = ds.dataset(str(rows_path), format="parquet")
    for table in STORY_TABLES:
        directory = out.path(table)
        directory.mkdir(parents=True, exist_ok=True)
        fields = list(dict.fromkeys(story_field for _, _, story_field in TABLES[table]))
        with pq.ParquetWriter(directory / "part-00000.parquet", arrow_schema(table)) as writer:
            for batch in rows.to_batches(columns=fields, filter=ds.field(STORY_KEY) == table):
                if batch.num_rows:
                    writer.write_batch(story_table_batch(table, batch))
    findings = []
    for batch in rows.to_batches(columns=[STORY_PAYLOAD], filter=ds.field(STORY_KEY) == "findings"):
        findings.extend(json.loads(payload) for payload in batch.column(0).to_pylist())
    return findings


def _cluster_for(source: str, clusters: dict[str, str]) -> str:
    for prefix, name in clusters.items():
        if source.startswith(prefix):
            return name
    return "default"


# --------------------------------------------------------------------------- the run

def _inputs(paths: list[str], clusters: dict[str, str]) -> list[tuple[str, str]]:
    return [(p, _cluster_for(p if p == STDIN else str(Path(p).resolve()), clusters)) for p in paths]


def run_logs(spark: Any, paths: list[str], out_dir: str, *, storm_rule: StormRule = DEFAULT_STORM_RULE,
             progress: bool | None = None, engine: str = "auto", clusters: dict[str, str] | None = None,
             stdin_text: str | None = None, master: str | None = None, skipped: list[tuple[str, str]] | None = None,
             syslog_until_ms: int | None = None) -> LogsRun:
    """Read logs (files, directories, .gz, ``-`` for stdin), write every table, summary.json and
    report.html into ``out_dir``. ``spark`` may be None: it is built (from ``master``) only if
    the Spark engine is chosen. ``clusters`` maps a path prefix to a cluster name.
    ``syslog_until_ms``: year-less syslog times fall no later than this (default: now; see
    ``logparse.layout``)."""
    from kafka_rebalance.pipeline import advice, report
    from kafka_rebalance.pipeline.io import StagedOutput
    from kafka_rebalance.pipeline.logparse.layout import syslog_reference
    from kafka_rebalance.pipeline.logparse.tables import analyse_local, expand_inputs, write_frame

    files, found_skipped = expand_inputs(paths)
    skipped = list(skipped or []) + found_skipped
    resolved = {str(Path(prefix).resolve()) if prefix != STDIN else prefix: name
                for prefix, name in (clusters or {}).items()}
    chosen = choose_engine(engine, files, master)
    syslog_until_ms = syslog_until_ms if syslog_until_ms is not None else int(time.time() * 1000)
    watch = Stopwatch()
    with StagedOutput(out_dir) as out:
        if chosen == "local":
            with syslog_reference(syslog_until_ms):
                result = analyse_local(_inputs(files, resolved), storm_rule, stdin_text=stdin_text)
            watch.lap("read, parse and stories (local)")
            for table, df in result.frames.items():
                write_frame(df, out.path(table), table)
            watch.lap("tables (local)")
            facts = {"findings": result.findings, "coverage": result.coverage, "lines_read": result.lines_read,
                     "events": result.events, "groups": result.groups, "samples": result.samples}
            frames = result.frames
            skipped.extend(result.unreadable)
        else:
            spark_files = list(files)
            temporary = None
            if STDIN in spark_files:
                import sys

                # Spark reads files: the paste goes to one first (removed when the run ends).
                descriptor, temporary = tempfile.mkstemp(suffix=".log", prefix="kafka-rebalance-stdin-")
                with os.fdopen(descriptor, "w", encoding="utf-8") as fh:
                    fh.write(stdin_text if stdin_text is not None else sys.stdin.read())
                spark_files[spark_files.index(STDIN)] = temporary
            if spark is None:
                from kafka_rebalance.pipeline.spark import build_session

                spark = build_session(master, "kafka-rebalance logs", driver_jvm_options=LOGS_DRIVER_JVM_OPTIONS)
            try:
                facts = _run_spark(spark, [str(Path(f).resolve()) for f in spark_files],
                                   resolved, storm_rule, out, progress, watch, syslog_until_ms)
            finally:
                if temporary is not None:
                    os.unlink(temporary)
            frames = report.read_tables(out.staging)
        advice_items = advice.advise(facts["findings"], storm_rule)
        summary = _summary(facts, frames, files, chosen, advice_items, skipped)
        summary["syslog_until"] = datetime.fromtimestamp(syslog_until_ms / 1000, UTC).isoformat(timespec="seconds")
        figures = report.logs_figures(frames, facts["findings"])
        html = report.render_logs_report(summary, figures, advice_items, frames, facts["findings"])
        report.write_report(out, html, figures)
        watch.lap("advice and report")
        summary["seconds"] = watch.seconds
        out.write_text("summary.json", json.dumps(summary, indent=2, default=str) + "\n")
    return LogsRun(out_dir=str(out.final), summary=summary, report=str(out.final / "report.html"))


def _summary(facts: dict, frames: dict[str, Any], files: list[str], engine: str, advice_items: list,
             skipped: list[tuple[str, str]]) -> dict:
    rebalances = frames["rebalances"]
    member_events = frames["member_events"]
    unrecognised = frames["unrecognised"]
    lines_matched = int(facts["events"])
    return {
        "lines_read": int(facts["lines_read"]),
        "lines_matched": lines_matched,
        "lines_skipped": int(facts["lines_read"]) - lines_matched,
        "lines_unrecognised": int(unrecognised["count"].sum()) if len(unrecognised) else 0,
        "groups": int(facts["groups"]),
        "rebalances": int(len(rebalances)),
        "open_rebalances": int((rebalances["outcome"] == "open").sum()) if len(rebalances) else 0,
        "client_rebalances": int(len(frames["client_rebalances"])),
        "member_failures": int(member_events["kind"].isin(["failed", "fenced"]).sum()) if len(member_events) else 0,
        "storms": int(len(frames["storms"])),
        "files": len(files),
        "engine": engine,
        "coverage": facts["coverage"],
        "skipped_inputs": [{"path": p, "why": why} for p, why in skipped],
        "sample_lines": facts.get("samples", [])[:SUMMARY_SAMPLE_LINES] if lines_matched == 0 else [],
        "advice": [item.as_dict() for item in advice_items],
    }
