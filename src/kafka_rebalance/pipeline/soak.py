"""``soak``: N random schedules through the simulator as Spark tasks, every invariant checked,
each failing schedule shrunk to a minimal one.

The job is one RDD stage, as ``lab``'s and ``logs``'s are: the schedule numbers are cut into
contiguous slices, one per task; each task draws its schedules from the master seed, simulates
them, checks the invariants, shrinks the failures (``schedule_row``), writes its part of the
``schedules`` table and of ``violations`` (one row per broken invariant, with the original and
the shrunk schedule as scenario YAML: ``violations_of``), and returns what the summary needs
(``SliceFacts``: its sums, its violations per invariant and its first failures). Parts follow
the slices' order, so each table reads in schedule order. ``run_soak`` does the rest of the
I/O: a staged output directory (earlier results survive a failed run) and ``summary.json``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
SCHEDULE_SCHEMA = pa.schema([
    pa.field("schedule_index", pa.int64(), nullable=False),
    pa.field("schedule_seed", pa.int64(), nullable=False),
    ("group_protocol", pa.string()),  # the protocol the group starts with
    ("migrating", pa.bool_()),
    ("rebalance_protocol", pa.string()),
    ("consumers", pa.int32()),
    ("static_consumers", pa.int32()),
    ("pattern_consumers", pa.int32()),
    ("slow_consumers", pa.int32()),
    *((column, pa.int32()) for column, _ in EVENT_COLUMNS),
    ("network_jitter_ms", pa.int32()),
    ("simulated_ms", pa.int64()),
    ("cpu_ms", pa.float64()),
    ("invariants", pa.list_(pa.string())),
    ("details", pa.list_(pa.string())),
    ("schedule_yaml", pa.string()),
    ("shrunk_yaml", pa.string()),
    ("shrunk_events", pa.int32()),
    ("shrink_tries", pa.int32()),
])
VIOLATION_SCHEMA = pa.schema([
    pa.field("schedule_index", pa.int64(), nullable=False),
    pa.field("schedule_seed", pa.int64(), nullable=False),
    ("group_protocol", pa.string()),
    ("rebalance_protocol", pa.string()),
    ("invariant", pa.string()),
    ("detail", pa.string()),
    ("schedule_yaml", pa.string()),
    ("shrunk_yaml", pa.string()),
    ("shrunk_events", pa.int32()),
    ("shrink_tries", pa.int32()),
])
# The summary's sums over the schedules (``max_cpu_ms`` the one maximum), besides the counts.
SUMMED = ("simulated_ms", "cpu_ms", "static_consumers", "pattern_consumers", "slow_consumers",
          *(column for column, _ in EVENT_COLUMNS))
# The first failures a summary keeps (in schedule order): what the terminal and report tell.
FIRST_FAILURE_COLUMNS = ("schedule_index", "invariant", "detail", "shrunk_events")


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


# --------------------------------------------------------------------------- what a task does

def violations_of(schedules: pa.Table) -> pa.Table:
    """One row per broken invariant of a schedule, with the schedule and its shrunk form, in
    order of schedule and invariant."""
    parents = pc.list_parent_indices(schedules["invariants"])
    failing = schedules.take(parents)
    violations = pa.Table.from_arrays([
        failing[name] if name not in ("invariant", "detail") else
        pc.list_flatten(schedules["invariants" if name == "invariant" else "details"])
        for name in VIOLATION_SCHEMA.names], schema=VIOLATION_SCHEMA)
    return violations.take(pc.sort_indices(violations, sort_keys=[("schedule_index", "ascending"),
                                                                  ("invariant", "ascending")]))


@dataclass
class SliceFacts:
    """What the summary needs of a slice of schedules (or of all of them, merged)."""

    schedules: int = 0
    failing_schedules: int = 0
    violations: int = 0
    cooperative_schedules: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SUMMED, 0))
    max_cpu_ms: float = 0.0
    by_invariant: Counter[str] = field(default_factory=Counter)
    first_failures: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, schedules: pa.Table, violations: pa.Table, told: int) -> SliceFacts:
        broken = pc.list_value_length(schedules["invariants"]).fill_null(0)
        return cls(
            schedules=schedules.num_rows,
            failing_schedules=int(pc.sum(pc.greater(broken, 0).cast(pa.int64())).as_py() or 0),
            violations=int(pc.sum(broken).as_py() or 0),
            cooperative_schedules=int(pc.sum(pc.equal(schedules["rebalance_protocol"],
                                                      RebalanceProtocol.COOPERATIVE.value).cast(pa.int64())).as_py()
                                      or 0),
            sums={name: pc.sum(schedules[name]).as_py() or 0 for name in SUMMED},
            max_cpu_ms=pc.max(schedules["cpu_ms"]).as_py() or 0.0,
            by_invariant=Counter(violations["invariant"].to_pylist()),
            first_failures=violations.select(list(FIRST_FAILURE_COLUMNS)).slice(0, told).to_pylist(),
        )

    def merge(self, other: SliceFacts, told: int) -> SliceFacts:
        return SliceFacts(
            schedules=self.schedules + other.schedules,
            failing_schedules=self.failing_schedules + other.failing_schedules,
            violations=self.violations + other.violations,
            cooperative_schedules=self.cooperative_schedules + other.cooperative_schedules,
            sums={name: self.sums[name] + other.sums[name] for name in SUMMED},
            max_cpu_ms=max(self.max_cpu_ms, other.max_cpu_ms),
            by_invariant=self.by_invariant + other.by_invariant,
            first_failures=sorted([*self.first_failures, *other.first_failures],
                                  key=lambda row: (row["schedule_index"], row["invariant"]))[:told],
        )

    def totals(self) -> dict[str, Any]:
        """The summary's figures, in the order ``summary.json`` lists them."""
        return {"schedules": self.schedules, "failing_schedules": self.failing_schedules,
                "violations": self.violations, "simulated_ms": self.sums["simulated_ms"],
                "cpu_ms": self.sums["cpu_ms"], "max_cpu_ms": self.max_cpu_ms,
                "cooperative_schedules": self.cooperative_schedules,
                **{name: self.sums[name] for name in SUMMED if name not in ("simulated_ms", "cpu_ms")}}


def check_slice(task: int, indices: range, master_seed: int, shrink_budget: int, group_protocol: GroupProtocol,
                migrating: bool, locations: dict[str, str], told: int) -> SliceFacts:
    """One Spark task: schedules ``indices`` drawn, run, checked and shrunk; the task's part of
    ``schedules`` and ``violations`` written under ``locations``; what the summary needs returned."""
    from kafka_rebalance.pipeline.io import join, write_parquet

    schedules = pa.Table.from_pylist([schedule_row(i, master_seed, shrink_budget, group_protocol, migrating)
                                      for i in indices], schema=SCHEDULE_SCHEMA)
    violations = violations_of(schedules)
    for name, table in ((SCHEDULES, schedules), (VIOLATIONS, violations)):
        write_parquet(table, join(locations[name], f"part-{task:05d}.parquet"))
    return SliceFacts.of(schedules, violations, told)


def slices(first: int, schedules: int, tasks: int) -> list[range]:
    """Schedule numbers first..first+schedules-1 cut into ``tasks`` contiguous slices (the unit of
    work of a task). A soak can be run in slices (``first``): schedule i is the same in every slice."""
    tasks = max(1, min(tasks, schedules))
    bounds = [first + schedules * k // tasks for k in range(tasks + 1)]
    return [range(start, stop) for start, stop in zip(bounds, bounds[1:], strict=False) if stop > start]


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
    parts = slices(first, schedules, task_count)
    with StagedOutput(out_dir) as out:
        locations = {name: out.location(name) for name in (SCHEDULES, VIOLATIONS)}
        job = spark.sparkContext.parallelize(list(enumerate(parts)), len(parts)).map(
            lambda part: check_slice(part[0], part[1], seed, shrink_budget, group_protocol, migrating, locations,
                                     FAILURES_TOLD))
        with spark_progress(spark, f"soaking {schedules:,} schedules", enabled=progress):
            facts = SliceFacts()
            for part in job.collect():
                facts = facts.merge(part, FAILURES_TOLD)
        by_invariant = dict(sorted(facts.by_invariant.items()))
        wall_s = time.monotonic() - started
        summary: dict[str, Any] = {
            **facts.totals(),
            "group_protocol": group_protocol.value, "migrating": migrating, "seed": seed, "first_schedule": first,
            "tasks": len(parts), "master": spark.sparkContext.master,
            "violations_by_invariant": by_invariant, "wall_s": round(wall_s, 1),
        }
        out.write_text(SUMMARY, json.dumps(summary, indent=2) + "\n")
        answer = soak_answer(summary, facts.first_failures, tables=str(out.final))
    return SoakRun(out_dir=str(out.final), schedules=int(summary["schedules"]),
                   failing=int(summary["failing_schedules"]), violations=int(summary["violations"]),
                   by_invariant=by_invariant, wall_s=wall_s, summary=summary, answer=answer)
