"""``soak``: N random schedules through the simulator as Spark tasks, every invariant checked,
each failing schedule shrunk to a minimal one.

The job is two DataFrame transforms between two edges: ``schedule_indices`` (a range of schedule
numbers, cut into tasks) -> ``check_schedules`` (each task draws its schedules from the master seed,
simulates them, checks the invariants, shrinks the failures) -> the ``schedules`` table, and
``violations_of`` (one row per broken invariant, with the original and the shrunk schedule as
scenario YAML) -> the ``violations`` table. ``run_soak`` does the I/O: a staged output directory
(earlier results survive a failed run), Parquet tables and ``summary.json``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol

if TYPE_CHECKING:
    from kafka_rebalance.pipeline.report.soak import SoakAnswer

SCHEDULES = "schedules"
VIOLATIONS = "violations"
SUMMARY = "summary.json"
DEFAULT_SHRINK_BUDGET = 300

# Per schedule: what it contained (so a summary shows the mix was exercised) and what it broke.
EVENT_COLUMNS = (
    ("joins", "join"), ("leaves", "leave"), ("crashes", "crash"), ("pauses", "pause"), ("stalls", "stall"),
    ("restarts", "restart"), ("topic_creations", "create_topic"), ("partition_increases", "add_partitions"),
    ("failovers", "coordinator_failover"), ("upgrades", "upgrade"), ("downgrades", "downgrade"),
)
SCHEDULE_SCHEMA = T.StructType([
    T.StructField("schedule_index", T.LongType(), False),
    T.StructField("schedule_seed", T.LongType(), False),
    T.StructField("group_protocol", T.StringType()),  # the protocol the group starts with
    T.StructField("migrating", T.BooleanType()),
    T.StructField("rebalance_protocol", T.StringType()),
    T.StructField("consumers", T.IntegerType()),
    T.StructField("static_consumers", T.IntegerType()),
    T.StructField("pattern_consumers", T.IntegerType()),
    T.StructField("slow_consumers", T.IntegerType()),
    *(T.StructField(column, T.IntegerType()) for column, _ in EVENT_COLUMNS),
    T.StructField("network_jitter_ms", T.IntegerType()),
    T.StructField("simulated_ms", T.LongType()),
    T.StructField("cpu_ms", T.DoubleType()),
    T.StructField("invariants", T.ArrayType(T.StringType())),
    T.StructField("details", T.ArrayType(T.StringType())),
    T.StructField("schedule_yaml", T.StringType()),
    T.StructField("shrunk_yaml", T.StringType()),
    T.StructField("shrunk_events", T.IntegerType()),
    T.StructField("shrink_tries", T.IntegerType()),
])


def schedule_row(index: int, master_seed: int, shrink_budget: int,
                 group_protocol: GroupProtocol = GroupProtocol.CLASSIC, migrating: bool = False) -> dict[str, Any]:
    """Draw schedule ``index``, run it, check it; shrink it if it fails."""
    from kafka_rebalance.sim.invariants import check_schedule
    from kafka_rebalance.sim.schedules import (
        random_schedule,
        schedule_rebalance_protocol,
        schedule_seed,
        schedule_yaml,
    )
    from kafka_rebalance.sim.shrink import same_failure, shrink

    seed = schedule_seed(master_seed, index)
    schedule = random_schedule(seed, group_protocol, migrating=migrating)
    started = time.process_time()
    violations = check_schedule(schedule)
    cpu_ms = (time.process_time() - started) * 1000
    consumers = schedule["consumers"]
    row: dict[str, Any] = {
        "schedule_index": index, "schedule_seed": seed,
        "group_protocol": group_protocol.value, "migrating": migrating,
        "rebalance_protocol": None if (rebalance := schedule_rebalance_protocol(schedule)) is None else rebalance.value,
        "consumers": len(consumers),
        "static_consumers": sum(1 for c in consumers if c.get("group_instance_id")),
        "pattern_consumers": sum(1 for c in consumers if c.get("pattern")),
        "slow_consumers": sum(1 for c in consumers if c.get("processing_ms_per_record")),
        **{column: sum(1 for e in schedule["events"] if action in e) for column, action in EVENT_COLUMNS},
        "network_jitter_ms": schedule["config"].get("network_jitter_ms", 0),
        "simulated_ms": schedule["end_ms"], "cpu_ms": cpu_ms,
        "invariants": [v.invariant for v in violations], "details": [v.detail for v in violations],
        "schedule_yaml": None, "shrunk_yaml": None, "shrunk_events": None, "shrink_tries": None,
    }
    if violations:
        small, tries = shrink(schedule, same_failure(violations), budget=shrink_budget)
        row.update(schedule_yaml=schedule_yaml(schedule), shrunk_yaml=schedule_yaml(small),
                   shrunk_events=len(small["events"]), shrink_tries=tries)
    return row


# --------------------------------------------------------------------------- transforms

def schedule_indices(spark: SparkSession, schedules: int, tasks: int, first: int = 0) -> DataFrame:
    """Schedule numbers first..first+schedules-1 in ``tasks`` partitions (the unit of work of a
    task). A soak can be run in slices (``first``): schedule i is the same in every slice."""
    return spark.range(first, first + schedules, 1, numPartitions=max(1, min(tasks, schedules))).withColumnRenamed(
        "id", "schedule_index")


def check_schedules(indices: DataFrame, master_seed: int, shrink_budget: int = DEFAULT_SHRINK_BUDGET,
                    group_protocol: GroupProtocol = GroupProtocol.CLASSIC, migrating: bool = False) -> DataFrame:
    """One row per schedule (``SCHEDULE_SCHEMA``): run and checked inside the tasks."""

    def run_batches(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            rows = [schedule_row(int(i), master_seed, shrink_budget, group_protocol, migrating)
                    for i in batch["schedule_index"]]
            yield pd.DataFrame(rows, columns=SCHEDULE_SCHEMA.fieldNames())

    return indices.mapInPandas(run_batches, schema=SCHEDULE_SCHEMA)


def violations_of(schedules: DataFrame) -> DataFrame:
    """One row per broken invariant of a schedule, with the schedule and its shrunk form."""
    failing = schedules.where(F.size("invariants") > 0)
    return failing.select(
        "schedule_index", "schedule_seed", "group_protocol", "rebalance_protocol",
        F.posexplode(F.arrays_zip("invariants", "details")).alias("position", "violation"),
        "schedule_yaml", "shrunk_yaml", "shrunk_events", "shrink_tries",
    ).select(
        "schedule_index", "schedule_seed", "group_protocol", "rebalance_protocol",
        F.col("violation.invariants").alias("invariant"), F.col("violation.details").alias("detail"),
        "schedule_yaml", "shrunk_yaml", "shrunk_events", "shrink_tries",
    )


def summary_of(schedules: DataFrame) -> DataFrame:
    """One row: schedules, failing schedules, simulated time, CPU time, and what the mix held."""
    return schedules.agg(
        F.count(F.lit(1)).alias("schedules"),
        F.sum((F.size("invariants") > 0).cast("long")).alias("failing_schedules"),
        F.sum(F.size("invariants")).alias("violations"),
        F.sum("simulated_ms").alias("simulated_ms"),
        F.sum("cpu_ms").alias("cpu_ms"),
        F.max("cpu_ms").alias("max_cpu_ms"),
        F.sum((F.col("rebalance_protocol") == RebalanceProtocol.COOPERATIVE.value).cast("long")).alias(
            "cooperative_schedules"),
        F.sum("static_consumers").alias("static_consumers"),
        F.sum("pattern_consumers").alias("pattern_consumers"),
        F.sum("slow_consumers").alias("slow_consumers"),
        *(F.sum(column).alias(column) for column, _ in EVENT_COLUMNS),
    )


def violations_by_invariant(violations: DataFrame) -> DataFrame:
    return violations.groupBy("invariant").agg(F.count(F.lit(1)).alias("schedules")).orderBy("invariant")


# --------------------------------------------------------------------------- the job

@dataclass
class SoakRun:
    out_dir: str
    schedules: int
    failing: int
    violations: int
    by_invariant: dict[str, int]
    wall_s: float
    summary: dict[str, Any]
    answer: SoakAnswer


def default_tasks(spark: SparkSession, schedules: int) -> int:
    # Enough tasks to keep every core busy and move the progress bar; ~1000 schedules a task
    # keeps the per-task overhead (~0.1 s) under 1% of the work.
    return max(1, min(schedules, max(spark.sparkContext.defaultParallelism * 4, schedules // 1000)))


def run_soak(spark: SparkSession, schedules: int, out_dir: str, *, seed: int = 0, first: int = 0,
             tasks: int | None = None, shrink_budget: int = DEFAULT_SHRINK_BUDGET, progress: bool | None = None,
             group_protocol: GroupProtocol = GroupProtocol.CLASSIC, migrating: bool = False) -> SoakRun:
    from kafka_rebalance.pipeline.io import StagedOutput
    from kafka_rebalance.pipeline.report.soak import FAILURES_TOLD, soak_answer
    from kafka_rebalance.pipeline.spark import spark_progress

    started = time.monotonic()
    task_count = tasks or default_tasks(spark, schedules)
    with StagedOutput(out_dir) as out:
        checked = check_schedules(schedule_indices(spark, schedules, task_count, first), seed, shrink_budget,
                                  group_protocol, migrating)
        with spark_progress(spark, f"soaking {schedules:,} schedules", enabled=progress):
            checked.write.parquet(str(out.path(SCHEDULES)))
        written = spark.read.parquet(str(out.path(SCHEDULES)))
        violations = violations_of(written).orderBy("schedule_index", "invariant")
        violations.coalesce(1).write.parquet(str(out.path(VIOLATIONS)))
        totals_row = summary_of(written).first()
        assert totals_row is not None  # an aggregate over the whole table has exactly one row
        totals = totals_row.asDict()
        by_invariant = {row["invariant"]: row["schedules"]
                        for row in violations_by_invariant(spark.read.parquet(str(out.path(VIOLATIONS)))).collect()}
        wall_s = time.monotonic() - started
        summary: dict[str, Any] = {
            **{key: (value if value is not None else 0) for key, value in totals.items()},
            "group_protocol": group_protocol.value, "migrating": migrating, "seed": seed, "first_schedule": first, "tasks": task_count, "master": spark.sparkContext.master,
            "violations_by_invariant": by_invariant, "wall_s": round(wall_s, 1),
        }
        out.write_text(SUMMARY, json.dumps(summary, indent=2) + "\n")
        first_failures = [row.asDict() for row in spark.read.parquet(str(out.path(VIOLATIONS)))
                          .select("schedule_index", "invariant", "detail", "shrunk_events")
                          .orderBy("schedule_index", "invariant").limit(FAILURES_TOLD).collect()]
        answer = soak_answer(summary, first_failures, tables=str(out.final))
    return SoakRun(out_dir=str(out.final), schedules=int(summary["schedules"]),
                   failing=int(summary["failing_schedules"]), violations=int(summary["violations"]),
                   by_invariant=by_invariant, wall_s=wall_s, summary=summary, answer=answer)
