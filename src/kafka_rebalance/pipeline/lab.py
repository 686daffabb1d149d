"""``lab``: every run of a sweep through the simulator as Spark tasks, into Parquet tables.

Runs are cut into coarse batches (a Spark task costs ~0.1 s of overhead; a simulation of a small
group a few milliseconds), each task simulates its batch and flattens the results into rows of
three tables (simulations, rebalances, ownership intervals), plus the lag over time of the runs
whose scenario has a load model. Everything after that is a
DataFrame transform: partition moves from ownership intervals, per-strategy summaries, figure
data. Reading the sweep and writing tables happen in ``run_lab`` only.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kafka_rebalance.model import RebalanceProtocol
from kafka_rebalance.pipeline.sweep import Run, Sweep

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from kafka_rebalance.pipeline.report.lab import LabAnswer
    from kafka_rebalance.sim import Scenario
    from kafka_rebalance.sim.result import RebalanceRecord, SimulationResult

SIMULATIONS = "simulations"
REBALANCES = "rebalances"
OWNERSHIP = "ownership"
MOVES = "moves"
LAG = "lag"

METRICS = ("rebalances", "partitions_moved", "stop_the_world_partition_ms", "max_partition_unowned_ms",
           "records_processed_twice", "records_lost")
# Parameters whose effective value is always a column (whether swept or not), with their types.
BASE_SIM_FIELDS: list[tuple[str, T.DataType]] = [
    ("run_id", T.StringType()),
    ("sweep", T.StringType()),
    ("scenario", T.StringType()),
    ("label", T.StringType()),
    ("strategy", T.StringType()),
    ("seed", T.LongType()),
    ("group_size", T.IntegerType()),
    ("total_partitions", T.IntegerType()),
    ("session_timeout_ms", T.LongType()),
    ("heartbeat_interval_ms", T.LongType()),
    ("max_poll_interval_ms", T.LongType()),
    ("max_poll_records", T.LongType()),
    ("produce_records_per_s", T.DoubleType()),
]
RESULT_SIM_FIELDS: list[tuple[str, T.DataType]] = [
    *((name, T.LongType()) for name in METRICS),
    ("min_partitions_moved", T.LongType()),
    ("final_balance", T.IntegerType()),
    ("final_members", T.IntegerType()),
    ("group_protocol", T.StringType()),  # of the last completed rebalance: classic / consumer
    ("rebalance_protocol", T.StringType()),  # EAGER / COOPERATIVE (classic); empty for a consumer group
    ("chosen_strategy", T.StringType()),
    ("coordinator_partition", T.IntegerType()),
    ("extra_metrics", T.MapType(T.StringType(), T.DoubleType())),
    ("showcase", T.BooleanType()),
    ("error", T.StringType()),
]
REBALANCE_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType()),
    T.StructField("scenario", T.StringType()),
    T.StructField("strategy", T.StringType()),
    T.StructField("seed", T.LongType()),
    T.StructField("generation", T.LongType()),
    T.StructField("start_ms", T.LongType()),
    T.StructField("end_ms", T.LongType()),
    T.StructField("group_protocol", T.StringType()),
    T.StructField("rebalance_protocol", T.StringType()),
    T.StructField("members", T.IntegerType()),
    T.StructField("partitions_moved", T.IntegerType()),
    T.StructField("min_partitions_moved", T.IntegerType()),
    T.StructField("revoked", T.IntegerType()),
    T.StructField("added", T.IntegerType()),
    T.StructField("chosen_strategy", T.StringType()),
    T.StructField("leader", T.StringType()),
    T.StructField("reason", T.StringType()),
    T.StructField("member_ids", T.ArrayType(T.StringType())),
])
# The load model's lag at each sample of a run (scenarios with ``load``): the highest lag of any
# consumer, and the group's total (records).
LAG_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType()),
    T.StructField("scenario", T.StringType()),
    T.StructField("strategy", T.StringType()),
    T.StructField("seed", T.LongType()),
    T.StructField("time_ms", T.LongType()),
    T.StructField("max_lag", T.LongType()),
    T.StructField("total_lag", T.LongType()),
])
OWNERSHIP_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType()),
    T.StructField("scenario", T.StringType()),
    T.StructField("strategy", T.StringType()),
    T.StructField("seed", T.LongType()),
    T.StructField("partition", T.StringType()),
    T.StructField("member", T.StringType()),
    T.StructField("start_ms", T.LongType()),
    T.StructField("end_ms", T.LongType()),
])


# --------------------------------------------------------------------------- schema of a sweep

def _param_type(values: Iterable[Any]) -> T.DataType:
    values = [v for v in values if v is not None]
    if values and all(isinstance(v, bool) for v in values):
        return T.BooleanType()
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return T.LongType()
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return T.DoubleType()
    return T.StringType()


def swept_columns(sweep: Sweep) -> list[tuple[str, T.DataType]]:
    """Swept parameters that are not already base columns, with a type fitting their values."""
    base = {name for name, _ in BASE_SIM_FIELDS}
    # A swept protocol is the run's strategy column (eager, cooperative-sticky, consumer-uniform, ...).
    return [(name, _param_type(run.params.get(name) for run in sweep.runs))
            for name in sweep.parameters if name not in base and name not in ("seed", "protocol")]


def simulation_schema(extra: Sequence[tuple[str, T.DataType]]) -> T.StructType:
    fields = [*BASE_SIM_FIELDS, *extra, *RESULT_SIM_FIELDS]
    return T.StructType([T.StructField(name, kind) for name, kind in fields])


def _convert(value: Any, kind: T.DataType) -> Any:
    if value is None:
        return None
    if isinstance(kind, T.StringType):
        return ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
    if isinstance(kind, T.DoubleType):
        return float(value)
    if isinstance(kind, T.LongType | T.IntegerType):
        return int(value)
    return value


# --------------------------------------------------------------------------- one simulation -> rows

def _value(protocol: RebalanceProtocol | None) -> str | None:
    return None if protocol is None else protocol.value


def strategy_label(run: Run, result: SimulationResult | None) -> str:
    """The strategy a run stands for: the swept one, else what the group's vote chose last, else
    the first consumer's list."""
    if "protocol" in run.params:
        return str(run.params["protocol"])
    if "strategy" in run.params:
        value = run.params["strategy"]
        return ",".join(value) if isinstance(value, list | tuple) else str(value)
    for rebalance in reversed(result.rebalances if result is not None else ()):
        if rebalance.strategy:
            return rebalance.strategy
    consumers = run.scenario.get("consumers") or [{}]
    return ",".join(consumers[0].get("strategies") or ["range", "cooperative-sticky"])


def minimum_moves(partitions: set[str], members: Sequence[str], last_owner: dict[str, str]) -> int:
    """Kafka's minimum number of partitions that must change owner to reach a balanced
    assignment (counts differing by at most one) of ``partitions`` over ``members``, starting
    from ``last_owner``: every partition of a departed owner, plus every partition a survivor
    holds above its share (the larger shares going to those that already hold the most)."""
    if not members:
        return 0
    member_set = set(members)
    orphans = sum(1 for p in partitions if last_owner.get(p) is not None and last_owner[p] not in member_set)
    held = {m: 0 for m in members}
    for p in partitions:
        owner = last_owner.get(p)
        if owner in held:
            held[owner] += 1
    base, extra = divmod(len(partitions), len(members))
    excess = 0
    for rank, count in enumerate(sorted(held.values(), reverse=True)):
        excess += max(0, count - (base + 1 if rank < extra else base))
    return orphans + excess


def rebalance_rows(run: Run, rebalances: Sequence[RebalanceRecord], strategy: str,
                   subscriptions: dict[str, tuple[str, ...] | None]) -> tuple[list[tuple[object, ...]], int | None]:
    """Rows of the rebalances table, and the run's total minimum moves (None when the members'
    subscriptions differ, where Kafka's notion of balance depends on who may take what)."""
    rows: list[tuple[object, ...]] = []
    last_owner: dict[str, str] = {}
    previous_members: tuple[str, ...] | None = None
    previous_partitions: set[str] | None = None
    total_min = 0
    comparable = True
    for rebalance in rebalances:
        assignment = {m.member: m.partitions for m in rebalance.assignment}
        revoked = {m.member: m.partitions for m in rebalance.revoked}
        added = {m.member: m.partitions for m in rebalance.added}
        members = rebalance.members
        complete = rebalance.end_ms is not None
        partitions = {p for ps in assignment.values() for p in ps} | {p for ps in revoked.values() for p in ps}
        moved = 0
        min_moved: int | None = None
        if complete:
            for member, owned in assignment.items():
                moved += sum(1 for p in owned if last_owner.get(p) not in (None, member))
            same_group = members == previous_members and partitions == previous_partitions
            homogeneous = len({subscriptions.get(m) for m in members}) <= 1 and None not in {
                subscriptions.get(m) for m in members}
            if same_group:
                min_moved = 0
            elif homogeneous:
                min_moved = minimum_moves(partitions, members, last_owner)
            else:
                comparable = False
            if min_moved is not None:
                total_min += min_moved
            for member, owned in assignment.items():
                for p in owned:
                    last_owner[p] = member
            previous_members, previous_partitions = members, partitions
        rows.append((
            run.run_id, run.scenario_name, strategy, run.seed, rebalance.generation, rebalance.start_ms,
            rebalance.end_ms, rebalance.group_protocol.value, _value(rebalance.rebalance_protocol),
            len(members) if complete else None, moved if complete else None, min_moved,
            sum(len(v) for v in revoked.values()), sum(len(v) for v in added.values()),
            rebalance.strategy, rebalance.leader, rebalance.reason, list(members),
        ))
    return rows, (total_min if comparable else None)


def simulate_run(run: Run, sweep_name: str, swept: Sequence[tuple[str, T.DataType]]) -> Iterator[tuple[str, tuple[object, ...]]]:
    """Simulate one run; yield (table, row) pairs. A failing simulation is a row with ``error``."""
    from kafka_rebalance.sim import load_scenario, run_simulation
    from kafka_rebalance.sim.ownership_metrics import comparison_metrics, partitions_from

    scenario = load_scenario(run.scenario)
    config = scenario.config
    strategy = strategy_label(run, None)
    base = {
        "run_id": run.run_id, "sweep": sweep_name, "scenario": run.scenario_name, "label": run.label,
        "seed": run.seed, "group_size": len(scenario.consumers),
        "total_partitions": sum(scenario.topics.values()),
        "session_timeout_ms": config.session_timeout_ms, "heartbeat_interval_ms": config.heartbeat_interval_ms,
        "max_poll_interval_ms": config.max_poll_interval_ms, "max_poll_records": config.max_poll_records,
        "produce_records_per_s": float(sum(p.records_per_s for p in scenario.produce)),
        "showcase": run.showcase,
    }
    error: str | None
    try:
        result: SimulationResult | None = run_simulation(scenario, run.seed)
    except Exception as exc:  # noqa: BLE001 - one broken run must not sink the sweep; it is reported
        result = None
        error = f"{type(exc).__name__}: {exc}".splitlines()[0]
    else:
        error = None
    strategy = strategy_label(run, result)
    base["strategy"] = strategy
    values: dict[str, Any] = dict(base)
    for name, kind in swept:
        values[name] = _convert(run.params.get(name), kind)
    values["error"] = error
    if result is not None:
        subscriptions = {c.id: (tuple(sorted(c.subscribe)) if c.subscribe is not None else None)
                         for c in scenario.consumers}
        rows, total_min = rebalance_rows(run, result.rebalances, strategy, subscriptions)
        for row in rows:
            yield REBALANCES, row
        metrics = result.metrics.to_json()
        for name in METRICS:
            values[name] = metrics[name]
        # Measured the same way for every protocol, from the ownership intervals and rebalances.
        comparison = comparison_metrics(partitions_from(scenario), result, scenario.effective_end_ms)
        values["extra_metrics"] = {k: float(v) for k, v in comparison.items()}
        if result.load is not None:
            values["extra_metrics"].update(load_metrics(result, rows))
            yield from ((LAG, row) for row in lag_rows(run, strategy, result))
        values["min_partitions_moved"] = total_min
        completed = [r for r in result.rebalances if r.end_ms is not None]
        if completed:
            last = completed[-1]
            by_member = {m.member: len(m.partitions) for m in last.assignment}
            counts = [by_member.get(m, 0) for m in last.members]
            values["final_balance"] = (max(counts) - min(counts)) if counts else None
            values["final_members"] = len(counts)
            values["group_protocol"] = last.group_protocol.value
            values["rebalance_protocol"] = _value(last.rebalance_protocol)
            values["chosen_strategy"] = last.strategy
        values["coordinator_partition"] = result.coordinator_partition
        o = result.ownership
        for partition, member, start, end in zip(o.partition.tolist(), o.member.tolist(), o.start_ms.tolist(),
                                                 o.end_ms.tolist(), strict=True):
            yield OWNERSHIP, (run.run_id, run.scenario_name, strategy, run.seed, partition, member, start, end)
    schema = simulation_schema(swept)
    yield SIMULATIONS, tuple(_convert(values.get(f.name), f.dataType) if not isinstance(f.dataType, T.MapType)
                             else values.get(f.name) for f in schema.fields)


def load_metrics(result: SimulationResult, rebalance_table: Sequence[tuple[object, ...]]) -> dict[str, float]:
    """A run's load figures for ``extra_metrics`` (``result.load`` set): ``max_lag_records``,
    ``max_total_lag_records``, ``p99_delay_ms``, the longest and median drain after a rebalance
    (``drain_max_ms``, ``drain_p50_ms``, over the rebalances that drained), how many did not drain
    by the end (``undrained_rebalances``), the most partitions one rebalance moved
    (``max_moved_per_rebalance``, from the rebalances table), the group's lag at the end
    (``end_lag_records``), the mean produce rate (``produce_records_per_s``) and how long the
    group was behind (``behind_ms``: samples whose total lag exceeded one second of that rate)."""
    load = result.load
    assert load is not None
    drained = sorted(d for d in load.drain_ms if d is not None)
    moved = [int(row[10]) for row in rebalance_table if isinstance(row[10], int)]
    totals = group_lag(result)
    end_s = max(1, int(load.time_ms[-1])) / 1000 if load.time_ms.size else 1.0
    rate = load.records_produced / end_s
    sample_ms = float(load.time_ms[1] - load.time_ms[0]) if load.time_ms.size > 1 else 0.0
    return {
        "end_lag_records": float(totals[-1]) if totals.size else 0.0,
        "produce_records_per_s": rate,
        "behind_ms": float((totals > rate).sum()) * sample_ms,
        "max_lag_records": float(load.max_lag), "max_total_lag_records": float(load.max_total_lag),
        "p99_delay_ms": float(load.p99_delay_ms),
        "drain_max_ms": float(drained[-1]) if drained else 0.0,
        "drain_p50_ms": float(drained[len(drained) // 2]) if drained else 0.0,
        "undrained_rebalances": float(sum(1 for d in load.drain_ms if d is None)),
        "max_moved_per_rebalance": float(max(moved, default=0)),
    }


def group_lag(result: SimulationResult) -> NDArray[np.int64]:
    """The group's total lag at each sample of the load model (owned and unowned partitions)."""
    load = result.load
    assert load is not None
    return load.member_lag.sum(axis=1) + load.unowned_lag if load.member_lag.size else load.unowned_lag


def lag_rows(run: Run, strategy: str, result: SimulationResult) -> Iterator[tuple[object, ...]]:
    load = result.load
    assert load is not None
    totals = group_lag(result)
    for time_ms, worst, total in zip(load.time_ms.tolist(), load.max_lag_series.tolist(), totals.tolist(),
                                     strict=True):
        yield (run.run_id, run.scenario_name, strategy, run.seed, time_ms, worst, total)


def simulate_batch(runs: Iterable[Run], sweep_name: str,
                   swept: Sequence[tuple[str, T.DataType]]) -> Iterator[tuple[str, tuple[object, ...]]]:
    for run in runs:
        yield from simulate_run(run, sweep_name, swept)


def batches(runs: Sequence[Run], tasks: int, costs: Sequence[float] | None = None) -> list[list[Run]]:
    """Deal ``runs`` into at most ``tasks`` batches of about equal cost: the costliest first,
    each to the batch with the least so far; a batch keeps the sweep's order. Without
    ``costs``, every run costs the same. (Cut in order instead, a sweep's long scenarios came
    together in the last batches, and one core worked alone at the end.)"""
    tasks = max(1, min(tasks, len(runs)))
    weights = list(costs) if costs is not None else [1.0] * len(runs)
    loads = [(0.0, b) for b in range(tasks)]
    members: list[list[int]] = [[] for _ in range(tasks)]
    for i in sorted(range(len(runs)), key=lambda i: -weights[i]):
        load, b = heapq.heappop(loads)
        members[b].append(i)
        heapq.heappush(loads, (load + weights[i], b))
    return [[runs[i] for i in sorted(batch)] for batch in members if batch]


def simulation_cost(scenario: Scenario) -> float:
    """What a run costs the simulator, about: its consumers, partitions and simulated time (the
    built-in sweep's CPU times follow it with a correlation of 0.98)."""
    return float(len(scenario.consumers) * max(1, sum(scenario.topics.values())) * scenario.effective_end_ms)


# --------------------------------------------------------------------------- transforms

def moves_from_ownership(ownership: DataFrame, rebalances: DataFrame) -> DataFrame:
    """Ownership intervals -> one row per partition move (owner A's interval followed by owner
    B's, A != B): ``run_id, scenario, strategy, seed, partition, from_member, to_member,
    released_ms, acquired_ms, unowned_ms`` and the ``generation`` of the latest rebalance that
    started at or before the new owner got it."""
    ordered = Window.partitionBy("run_id", "partition").orderBy("start_ms", "member")
    paired = ownership.select(
        "run_id", "scenario", "strategy", "seed", "partition",
        F.lag("member").over(ordered).alias("from_member"),
        F.col("member").alias("to_member"),
        F.lag("end_ms").over(ordered).alias("released_ms"),
        F.col("start_ms").alias("acquired_ms"),
    )
    moves = paired.where(F.col("from_member").isNotNull() & (F.col("from_member") != F.col("to_member")))
    moves = moves.withColumn("unowned_ms", F.greatest(F.col("acquired_ms") - F.col("released_ms"), F.lit(0)))
    starts = rebalances.select("run_id", F.col("generation"), F.col("start_ms").alias("rebalance_start_ms"))
    located = (
        moves.join(starts, "run_id", "left")
        .where(F.col("rebalance_start_ms").isNull() | (F.col("rebalance_start_ms") <= F.col("acquired_ms")))
        .groupBy("run_id", "scenario", "strategy", "seed", "partition", "from_member", "to_member", "released_ms",
                 "acquired_ms", "unowned_ms")
        .agg(F.max_by("generation", "rebalance_start_ms").alias("generation"))
    )
    return located


def strategy_summary(simulations: DataFrame) -> DataFrame:
    """Per scenario and strategy, over seeds and other parameters: runs and mean/max metrics."""
    ok = simulations.where(F.col("error").isNull())
    return ok.groupBy("scenario", "strategy").agg(
        F.count(F.lit(1)).alias("runs"),
        F.avg("partitions_moved").alias("partitions_moved"),
        F.avg("min_partitions_moved").alias("min_partitions_moved"),
        F.avg("stop_the_world_partition_ms").alias("stop_the_world_partition_ms"),
        F.max("stop_the_world_partition_ms").alias("max_stop_the_world_partition_ms"),
        F.avg("final_balance").alias("final_balance"),
        F.max("final_balance").alias("max_final_balance"),
        F.avg("rebalances").alias("rebalances"),
        F.avg("max_partition_unowned_ms").alias("max_partition_unowned_ms"),
        F.avg("records_processed_twice").alias("records_processed_twice"),
        F.sum("records_lost").alias("records_lost"),
    ).orderBy("scenario", "strategy")


# --------------------------------------------------------------------------- the job

@dataclass
class LabRun:
    out_dir: str
    report: str
    runs: int
    failed: int
    summary: Any  # pandas DataFrame of strategy_summary
    answer: LabAnswer


def default_tasks(spark: SparkSession, runs: int) -> int:
    # A few tasks per core: enough to balance uneven batches and to move the progress bar,
    # few enough that per-task overhead stays small against the simulations.
    return max(1, min(runs, spark.sparkContext.defaultParallelism * 4))


def run_lab(spark: SparkSession, sweep: Sweep, out_dir: str, *, tasks: int | None = None,
            progress: bool | None = None) -> LabRun:
    from kafka_rebalance.pipeline.io import StagedOutput, join
    from kafka_rebalance.pipeline.report import lab as report
    from kafka_rebalance.pipeline.report.page import write_report
    from kafka_rebalance.pipeline.spark import spark_progress
    from kafka_rebalance.sim import load_scenario

    # invalid scenarios fail here, as bad input, before any task starts
    costs = [simulation_cost(load_scenario(run.scenario)) for run in sweep.runs]
    swept = swept_columns(sweep)
    sweep_name = sweep.name
    chunks = batches(sweep.runs, tasks or default_tasks(spark, len(sweep.runs)), costs)
    context = spark.sparkContext
    rows = context.parallelize(chunks, len(chunks)).flatMap(
        lambda batch: simulate_batch(batch, sweep_name, swept)).persist(StorageLevel.MEMORY_AND_DISK)

    def table(name: str, schema: T.StructType) -> DataFrame:
        return spark.createDataFrame(rows.filter(lambda r: r[0] == name).map(lambda r: r[1]), schema)

    with StagedOutput(out_dir) as out:
        simulations = table(SIMULATIONS, simulation_schema(swept)).orderBy("run_id")
        with spark_progress(spark, f"simulating {len(sweep.runs)} runs", enabled=progress):
            simulations.write.parquet(str(out.path(SIMULATIONS)))
        simulations = spark.read.parquet(str(out.path(SIMULATIONS)))
        rebalances = table(REBALANCES, REBALANCE_SCHEMA).orderBy("run_id", "start_ms", "generation")
        rebalances.write.parquet(str(out.path(REBALANCES)))
        rebalances = spark.read.parquet(str(out.path(REBALANCES)))
        ownership = table(OWNERSHIP, OWNERSHIP_SCHEMA).orderBy("run_id", "partition", "start_ms")
        ownership.write.parquet(str(out.path(OWNERSHIP)))
        ownership = spark.read.parquet(str(out.path(OWNERSHIP)))
        moves = moves_from_ownership(ownership, rebalances).orderBy("run_id", "partition", "acquired_ms")
        moves.write.parquet(str(out.path(MOVES)))
        lag = table(LAG, LAG_SCHEMA).orderBy("run_id", "time_ms")
        lag.write.parquet(str(out.path(LAG)))
        lag_frame = spark.read.parquet(str(out.path(LAG))).toPandas()
        rows.unpersist()

        summary = strategy_summary(simulations).toPandas()
        sims = simulations.toPandas()
        showcase = report.pick_showcase(sims)
        showcase_ownership = ownership.where(F.col("run_id").isin(showcase)).toPandas() if showcase else None
        showcase_rebalances = rebalances.where(F.col("run_id").isin(showcase)).toPandas() if showcase else None
        figures = report.lab_figures(sims, summary, showcase_ownership, showcase_rebalances)
        lag_figure = report.lag_figure(sims, lag_frame)
        answer = report.lab_answer(sweep.name, sims, tables=out.final, report=join(out.final, "report.html"))
        page = report.render_lab_report(answer, sims, summary, figures, lag_figure)
        write_report(out, page, [*figures, *([lag_figure] if lag_figure is not None else [])])
        out.write_text("lab.json", json.dumps({
            "sweep": sweep.name, "runs": len(sweep.runs), "tasks": len(chunks),
            "parameters": sweep.parameters, "failed": int(sims["error"].notna().sum()),
        }, indent=2) + "\n")
    return LabRun(out_dir=out.final, report=join(out.final, "report.html"), runs=len(sweep.runs),
                  failed=int(sims["error"].notna().sum()), summary=summary, answer=answer)
