"""Rebalance forensics on Kafka logs: broker and client lines of any layout -> rebalances, their
causes and the tables of ``logparse.schemas``; on Spark for big inputs, in-process for a paste.

The Spark engine never splits the whole log into lines: each task reads byte ranges of the
files (``logparse.scan``), finds the few fixed gate phrases (``catalogue.GATE_SUBSTRINGS``) and
decodes only the lines holding one, and the line after each (to join lines a terminal wrapped),
which ``logparse.parse`` reads. The events then never enter the JVM as rows
(``logparse.exchange``): a scan task writes its part of the ``events`` table and Arrow streams
per bucket of groups; a story task reads one bucket, sorts it and tells each group's story
(``logparse.story.tell``), writing its part of every story table. Spark runs both as one RDD
job (``parallelize`` -> ``mapPartitions`` scan -> ``partitionBy`` bucket -> ``mapPartitions``
story -> ``collect``), and only small JSON documents come back to the driver (per split: counts,
coverage, unrecognised shapes, coordinator moves; per group: the findings). Memory is bounded
by a batch of events in a scan task and a bucket of groups in a story task, not by the log.

Small inputs (a paste from stdin, a few files of an incident) skip Spark entirely: starting a
JVM costs more than reading them (``benchmarks/logs.py`` measures both). The two engines run
the same parser and story and write the same tables.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from kafka_rebalance.pipeline.logparse.findings import GroupFindings, findings_from_json
from kafka_rebalance.pipeline.logparse.inputs import STDIN
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.rows import CoverageRow
from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, StormRule

if TYPE_CHECKING:

    from kafka_rebalance.pipeline.advice import Advice
    from kafka_rebalance.pipeline.logparse.split_facts import SplitFacts
    from kafka_rebalance.pipeline.report.logs import LogsAnswer

__all__ = ["StormRule", "LogsRun", "run_logs", "logs_session", "choose_engine", "LOCAL_ENGINE_LIMIT_BYTES",
           "LOGS_CLASS_ARCHIVE", "LOGS_WORKER_DAEMON", "LOGS_SPARK_CONF"]

# Below this much input the in-process engine is faster than starting Spark.
LOCAL_ENGINE_LIMIT_BYTES = 64 * 1024 * 1024
SUMMARY_SAMPLE_LINES = 5


@dataclass
class LogsRun:
    """What ``run_logs`` produced, for the CLI to print."""

    out_dir: str
    summary: dict[str, Any]  # summary.json
    report: str
    answer: LogsAnswer


class LogFacts(TypedDict):
    """What either engine learnt beyond its tables, for the summary and the advice."""

    findings: list[GroupFindings]  # one per group (``findings.findings``)
    coverage: list[CoverageRow]  # per input file
    lines_read: int
    events: int
    groups: int
    samples: list[str]  # a few lines, shown when none was recognised
    unreadable: list[tuple[str, str]]  # (source, why)


def input_bytes(files: list[str]) -> int:
    """About the bytes of text to read (a .gz counted 8 times); a file whose size cannot be
    had counts as big."""
    from kafka_rebalance.model import InvalidInput
    from kafka_rebalance.pipeline.io import sizes_of

    named = [name for name in files if name != STDIN]
    try:
        sizes = sizes_of(named)
    except (OSError, InvalidInput):
        return LOCAL_ENGINE_LIMIT_BYTES * max(len(named), 1)
    return sum(size * (8 if name.endswith(".gz") else 1) for name, size in sizes.items())


def text_bytes(files: list[str], stdin_text: str | None = None) -> int:
    """The text the local engine will read: file sizes, a .gz file's uncompressed size (its last
    four bytes, modulo 4 GiB), the paste's length."""
    total = 0
    for name in files:
        if name == STDIN:
            total += len(stdin_text or "")
            continue
        try:
            if name.endswith(".gz"):
                with open(name, "rb") as fh:
                    fh.seek(-4, os.SEEK_END)
                    total += int.from_bytes(fh.read(4), "little")
            else:
                total += os.path.getsize(name)
        except OSError:
            continue
    return total


# The logs sessions' own class archive (``spark.class_archive_options``): their job loads the
# shuffle's classes, which the other commands' single-stage jobs do not.
LOGS_CLASS_ARCHIVE = "logs"
LOGS_WORKER_DAEMON = "kafka_rebalance.pipeline.logparse.worker_daemon"
# The shuffle moves Arrow streams already compressed (lz4): compressing them again, and
# checksumming them (only to diagnose a corrupt block), cost the JVM CPU for nothing.
LOGS_SPARK_CONF = {"spark.shuffle.compress": "false", "spark.shuffle.checksum.enabled": "false"}


def logs_session(master: str | None, *, app_name: str = "kafka-rebalance logs", quiet: bool = True,
                 extra_conf: dict[str, str] | None = None) -> Any:
    """The SparkSession of a ``logs`` run on Spark, as the command and the benchmarks start it:
    the logs class archive, worker daemon and shuffle settings. ``extra_conf``: more settings
    (the benchmark's event log)."""
    from kafka_rebalance.pipeline.spark import build_session

    return build_session(master, app_name, quiet=quiet, class_archive=LOGS_CLASS_ARCHIVE,
                         worker_daemon=LOGS_WORKER_DAEMON, extra_conf={**LOGS_SPARK_CONF, **(extra_conf or {})})


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

def scan_and_tell(spark: Any, files: list[str], sizes: dict[str, int], sources: dict[str, str],
                  clusters: dict[str, str], syslog: SyslogReference, events_dir: str, buckets: int,
                  story_dirs: dict[str, str], rule: StormRule) -> Any:
    """Files -> an RDD of ``exchange.Told``: a finding per group and the ``SplitFacts`` of every
    split. One job: scan tasks read their byte ranges (from any store, themselves) and write
    their part of ``events`` into ``events_dir``; their events cross Spark's shuffle to one
    story task per bucket of groups, which writes its part of every story table into
    ``story_dirs`` (``logparse.exchange``); client lines naming no group whose client named one
    in a split before are filled in by the story tasks, in the same job (``exchange.read_split``).
    ``sources``: the name a file is shown as (the paste from stdin is read from a file but is ``-``).

    RDDs, not DataFrames: the JVM only moves opaque bytes between Python tasks, so nothing is
    planned by Catalyst nor converted to Arrow or rows in the JVM, which the first job of a
    session paid for in JVM CPU (class loading, interpreted and freshly compiled code)."""
    from kafka_rebalance.pipeline.logparse.exchange import Routed, Told, read_split, tell_received
    from kafka_rebalance.pipeline.logparse.scan import pack_splits, plan_splits

    total = sum(sizes.values())
    context = spark.sparkContext
    parallelism = context.defaultParallelism
    size_per_split = split_bytes(total, parallelism)
    splits = plan_splits([(name, sizes[name]) for name in files], size_per_split)
    index_of = {(s.path, s.start): i for i, s in enumerate(splits)}
    tasks = pack_splits(splits, sizes, max(parallelism, -(-total // size_per_split)))

    def scan_task(numbers: Iterable[int]) -> Iterator[Routed]:
        for task in numbers:
            for split in tasks[task]:
                index = index_of[(split.path, split.start)]
                source = sources.get(split.path, split.path)
                yield from read_split(split, index, _cluster_for(source, clusters), source, buckets, events_dir,
                                      syslog=syslog)

    def story_task(rows: Iterable[Routed]) -> Iterator[Told]:
        from pyspark import TaskContext

        task = TaskContext.get()
        name = f"{task.partitionId() if task is not None else 0:05d}"
        yield from tell_received(rows, rule, buckets, events_dir, story_dirs, name)

    # one task number per partition (so one per task: no core waits while another runs two)
    scanned = context.parallelize(range(len(tasks)), len(tasks)).mapPartitions(scan_task)
    # the key is the bucket: partition ``bucket`` of ``buckets`` gets it
    return scanned.partitionBy(buckets, _bucket_itself).mapPartitions(story_task)


def _bucket_itself(bucket: int) -> int:
    return bucket


class Stopwatch:
    """Seconds spent per stage of a run (in summary.json, and in the benchmark's table)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + now - self._last, 3)
        self._last = now


def _run_spark(spark: Any, files: list[str], sources: dict[str, str], clusters: dict[str, str], rule: StormRule,
               out: Any, progress: bool | None, watch: Stopwatch, syslog: SyslogReference) -> LogFacts:
    from kafka_rebalance.pipeline.io import list_files, sizes_of
    from kafka_rebalance.pipeline.logparse.exchange import bucket_count
    from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES, story_table, write_table
    from kafka_rebalance.pipeline.logparse.split_facts import SplitFacts, unrecognised_rows
    from kafka_rebalance.pipeline.spark import spark_progress

    events_dir = out.location("events")
    story_dirs = {table: out.location(table) for table in STORY_TABLES}
    sizes = sizes_of(files)
    buckets = bucket_count(sum(sizes.values()), spark.sparkContext.defaultParallelism)
    with spark_progress(spark, "reading logs", enabled=progress):
        told = scan_and_tell(spark, files, sizes, sources, clusters, syslog, events_dir, buckets, story_dirs, rule)
        rows = told.collect()
    facts = [SplitFacts.from_json(row[1]) for row in rows if row[1] is not None]
    watch.lap("read, parse and stories (Spark)")
    facts.sort(key=lambda f: f.index)  # splits are numbered in file order (``scan.plan_splits``)
    findings = sorted((findings_from_json(row[0]) for row in rows if row[0] is not None),
                      key=lambda f: (f["cluster"], f["group"]))
    for table, directory in story_dirs.items():
        if not list_files(directory):
            write_table(story_table(table, []), directory)
    display = [sources.get(name, name) for name in files]
    write_table(story_table("unrecognised", unrecognised_rows(facts, display)), out.location("unrecognised"))
    coverage = _coverage(facts, display, clusters)
    watch.lap("counts and coverage")
    unreadable = [(f.source, f.unreadable) for f in facts if f.unreadable]
    return {"findings": findings, "coverage": coverage, "lines_read": sum(f.lines for f in facts),
            "events": sum(f.events for f in facts), "groups": len(findings), "samples": [], "unreadable": unreadable}


def _coverage(facts: list[SplitFacts], files: list[str], clusters: dict[str, str]) -> list[CoverageRow]:
    by_source: dict[str, list[SplitFacts]] = {}
    for split in facts:
        by_source.setdefault(split.source, []).append(split)
    coverage: list[CoverageRow] = []
    for name in files:
        mine = by_source.get(name, [])
        firsts = [f.first_ms for f in mine if f.first_ms is not None]
        lasts = [f.last_ms for f in mine if f.last_ms is not None]
        coverage.append({"source": name, "cluster": _cluster_for(name, clusters),
                         "broker_lines": sum(f.broker_lines for f in mine),
                         "client_lines": sum(f.client_lines for f in mine),
                         "unrecognised_lines": sum(f.unrecognised_lines for f in mine),
                         "first_ms": min(firsts) if firsts else None, "last_ms": max(lasts) if lasts else None,
                         "lines": sum(f.lines for f in mine)})
    return coverage


def _cluster_for(source: str, clusters: dict[str, str]) -> str:
    if source in clusters:
        return clusters[source]
    for prefix, name in clusters.items():
        if source.startswith(prefix):
            return name
    return "default"


# --------------------------------------------------------------------------- the run

def _absolute(location: str) -> str:
    """A local path made absolute (what Spark's tasks open); ``-`` and URLs as given."""
    from kafka_rebalance.pipeline.io import has_scheme

    return location if location == STDIN or has_scheme(location) else str(Path(location).resolve())


def run_logs(spark: Any, paths: list[str], out_dir: str, *, storm_rule: StormRule = DEFAULT_STORM_RULE,
             progress: bool | None = None, engine: str = "auto", clusters: dict[str, str] | None = None,
             stdin_text: str | None = None, master: str | None = None, skipped: list[tuple[str, str]] | None = None,
             syslog: SyslogReference, quiet_spark: bool = True) -> LogsRun:
    """Read logs (files, directories, .gz, ``-`` for stdin), write every table, summary.json and
    report.html into ``out_dir``. ``spark`` may be None: it is built (from ``master``) only if
    the Spark engine is chosen, once ``out_dir`` is open. ``clusters`` maps a path prefix (or
    URL) to a cluster name.
    ``syslog``: year-less syslog times fall no later than its instant (the caller decides it
    once for the run: ``logs`` takes the run's start or ``--year``; see ``logparse.layout``)."""
    from kafka_rebalance.pipeline.arrow_memory import use_system_allocator
    from kafka_rebalance.pipeline.io import StagedOutput, join
    from kafka_rebalance.pipeline.logparse.inputs import expand_inputs, input_clusters
    from kafka_rebalance.pipeline.logparse.schemas import write_table

    use_system_allocator()  # the in-process engine's tables, the report's reading
    files, found_skipped = expand_inputs(paths)
    skipped = list(skipped or []) + found_skipped
    resolved = {_absolute(prefix): name for prefix, name in (clusters or {}).items()}
    labels = input_clusters(files, resolved, resolve=_absolute)
    chosen = choose_engine(engine, files, master)
    watch = Stopwatch()
    with StagedOutput(out_dir) as out:
        if chosen == "local":
            from kafka_rebalance.pipeline.logparse.local_engine import analyse_local
            from kafka_rebalance.pipeline.progress import bytes_progress

            with bytes_progress("reading logs", text_bytes(files, stdin_text), enabled=progress) as advance:
                result = analyse_local([(name, labels[name]) for name in files], storm_rule, stdin_text=stdin_text,
                                       on_read=advance, syslog=syslog)
            watch.lap("read, parse and stories (local)")
            for table, arrow in result.tables.items():
                write_table(arrow, out.location(table))
            watch.lap("tables (local)")
            facts: LogFacts = {"findings": result.findings, "coverage": result.coverage,
                               "lines_read": result.lines_read, "events": result.events, "groups": result.groups,
                               "samples": result.samples, "unreadable": result.unreadable}
            from kafka_rebalance.pipeline.report import logs as logs_report

            tables = logs_report.report_tables(result.tables)
            skipped.extend(result.unreadable)
        else:
            spark_files = [_absolute(name) for name in files]
            sources: dict[str, str] = {}
            if STDIN in spark_files:
                import sys

                # Spark's tasks read files: the paste goes into --out's staging area first, where
                # every task can read it (and which goes away with the run).
                pasted = out.scratch_location("stdin.log")
                out.write_at(pasted, stdin_text if stdin_text is not None else sys.stdin.read())
                spark_files[spark_files.index(STDIN)] = pasted
                sources[pasted] = STDIN
            if spark is None:
                spark = logs_session(master, quiet=quiet_spark)
            # each input's cluster by the name its rows carry (its absolute path, or '-')
            facts = _run_spark(spark, spark_files, sources, {_absolute(name): labels[name] for name in files},
                               storm_rule, out, progress, watch, syslog)
            from kafka_rebalance.pipeline.report import logs as logs_report

            tables = logs_report.read_tables(out.staging)
            skipped.extend(facts["unreadable"])
        from kafka_rebalance.pipeline import advice
        from kafka_rebalance.pipeline.report.page import write_report

        advice_items = advice.advise(facts["findings"], storm_rule)
        summary = _summary(facts, tables, files, chosen, advice_items, skipped)
        summary["syslog_until"] = datetime.fromtimestamp(syslog.until_ms / 1000, UTC).isoformat(timespec="seconds")
        answer = logs_report.logs_answer(summary, tables, facts["findings"], advice_items, tables_dir=out.final,
                                         report=join(out.final, "report.html"))
        figures = logs_report.logs_figures(tables, facts["findings"])
        html = logs_report.render_logs_report(answer, figures, advice_items, tables, facts["findings"])
        write_report(out, html, figures)
        watch.lap("advice and report")
        summary["seconds"] = watch.seconds
        out.write_text("summary.json", json.dumps(summary, indent=2, default=str) + "\n")
    return LogsRun(out_dir=out.final, summary=summary, report=join(out.final, "report.html"), answer=answer)


def _summary(facts: LogFacts, tables: dict[str, Any], files: list[str], engine: str, advice_items: list[Advice],
             skipped: list[tuple[str, str]]) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    def count(flags: Any) -> int:
        return int(pc.sum(flags).as_py() or 0)

    rebalances = tables["rebalances"]
    lines_matched = int(facts["events"])
    return {
        "lines_read": int(facts["lines_read"]),
        "lines_matched": lines_matched,
        "lines_skipped": int(facts["lines_read"]) - lines_matched,
        "lines_unrecognised": count(tables["unrecognised"]["count"]),
        "groups": int(facts["groups"]),
        "rebalances": rebalances.num_rows,
        "open_rebalances": count(pc.equal(rebalances["outcome"], "open")),
        "client_rebalances": tables["client_rebalances"].num_rows,
        "member_failures": count(pc.is_in(tables["member_events"]["kind"], value_set=pa.array(["failed", "fenced"]))),
        "storms": tables["storms"].num_rows,
        "files": len(files),
        "engine": engine,
        "coverage": facts["coverage"],
        "skipped_inputs": [{"path": p, "why": why} for p, why in skipped],
        "sample_lines": facts.get("samples", [])[:SUMMARY_SAMPLE_LINES] if lines_matched == 0 else [],
        "advice": [item.as_dict() for item in advice_items],
    }
