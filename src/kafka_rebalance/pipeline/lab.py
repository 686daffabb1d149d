"""``lab``: every run of a sweep through the simulator as Spark tasks, into Parquet tables.

Runs are dealt into coarse batches (a Spark task costs ~0.1 s of overhead; a simulation of a small
group a few milliseconds). The job is one RDD stage, as ``logs``'s is: each task simulates its
batch, turns each run's results into Arrow tables (its rebalances, ownership intervals, the
partition moves those intervals make, and the load model's lag over time), writes its part of
each of those tables into the staged output itself, and returns its runs' rows of the
``simulations`` table (one row per run) to the driver, which writes that table and the report.
No row enters the JVM and no SQL plan is made: with a DataFrame per table (four Spark jobs each)
a small sweep's first run in a session spent ~19 s in Spark for ~0.5 s of simulating.
Everything a task does is plain Python over Arrow and numpy (``simulate_batch``); the driver
reads the tables back only for the report. Reading the sweep and writing the tables happen in
``run_lab`` and the task's part writer only.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_rebalance.model import RebalanceProtocol
from kafka_rebalance.pipeline.sweep import Run, Sweep

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray
    from pyspark.sql import SparkSession

    from kafka_rebalance.pipeline.report.lab import LabAnswer
    from kafka_rebalance.sim import Scenario
    from kafka_rebalance.sim.result import RebalanceRecord, SimulationResult

SIMULATIONS = "simulations"
REBALANCES = "rebalances"
OWNERSHIP = "ownership"
MOVES = "moves"
LAG = "lag"
# The run's facts, written last: on a store, the tables are complete once it is there.
LAB_SUMMARY = "lab.json"
# The tables each task writes a part of (one Parquet file per task); the driver writes SIMULATIONS.
PART_TABLES = (REBALANCES, OWNERSHIP, MOVES, LAG)
# Rows a task's part writer gathers before writing them as one row group.
ROW_GROUP_ROWS = 256 * 1024

METRICS = ("rebalances", "partitions_moved", "stop_the_world_partition_ms", "max_partition_unowned_ms",
           "records_processed_twice", "records_lost")
# Parameters whose effective value is always a column (whether swept or not), with their types.
BASE_SIM_FIELDS: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()),
    ("sweep", pa.string()),
    ("scenario", pa.string()),
    ("label", pa.string()),
    ("strategy", pa.string()),
    ("seed", pa.int64()),
    ("group_size", pa.int32()),
    ("total_partitions", pa.int32()),
    ("session_timeout_ms", pa.int64()),
    ("heartbeat_interval_ms", pa.int64()),
    ("max_poll_interval_ms", pa.int64()),
    ("max_poll_records", pa.int64()),
    ("produce_records_per_s", pa.float64()),
]
EXTRA_METRICS_TYPE = pa.map_(pa.string(), pa.float64())
RESULT_SIM_FIELDS: list[tuple[str, pa.DataType]] = [
    *((name, pa.int64()) for name in METRICS),
    ("min_partitions_moved", pa.int64()),
    ("final_balance", pa.int32()),
    ("final_members", pa.int32()),
    ("group_protocol", pa.string()),  # of the last completed rebalance: classic / consumer
    ("rebalance_protocol", pa.string()),  # EAGER / COOPERATIVE (classic); empty for a consumer group
    ("chosen_strategy", pa.string()),
    ("coordinator_partition", pa.int32()),
    ("extra_metrics", EXTRA_METRICS_TYPE),
    ("showcase", pa.bool_()),
    ("error", pa.string()),
]
# Every table but simulations starts with the run's keys.
RUN_KEY_FIELDS: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()), ("scenario", pa.string()), ("strategy", pa.string()), ("seed", pa.int64())]
REBALANCE_SCHEMA = pa.schema([
    *RUN_KEY_FIELDS,
    ("generation", pa.int64()),
    ("start_ms", pa.int64()),
    ("end_ms", pa.int64()),
    ("group_protocol", pa.string()),
    ("rebalance_protocol", pa.string()),
    ("members", pa.int32()),
    ("partitions_moved", pa.int32()),
    ("min_partitions_moved", pa.int32()),
    ("revoked", pa.int32()),
    ("added", pa.int32()),
    ("chosen_strategy", pa.string()),
    ("leader", pa.string()),
    ("reason", pa.string()),
    ("member_ids", pa.list_(pa.string())),
])
# The load model's lag at each sample of a run (scenarios with ``load``): the highest lag of any
# consumer, and the group's total (records).
LAG_SCHEMA = pa.schema([*RUN_KEY_FIELDS, ("time_ms", pa.int64()), ("max_lag", pa.int64()), ("total_lag", pa.int64())])
OWNERSHIP_SCHEMA = pa.schema([*RUN_KEY_FIELDS, ("partition", pa.string()), ("member", pa.string()),
                              ("start_ms", pa.int64()), ("end_ms", pa.int64())])
MOVES_SCHEMA = pa.schema([
    *RUN_KEY_FIELDS,
    ("partition", pa.string()),
    ("from_member", pa.string()),
    ("to_member", pa.string()),
    ("released_ms", pa.int64()),
    ("acquired_ms", pa.int64()),
    ("unowned_ms", pa.int64()),
    ("generation", pa.int64()),
])
# Each table's order: a task's part is sorted by it (its runs in run_id order), simulations whole.
SORT_KEYS = {
    SIMULATIONS: ("run_id",),
    REBALANCES: ("run_id", "start_ms", "generation"),
    OWNERSHIP: ("run_id", "partition", "start_ms"),
    MOVES: ("run_id", "partition", "acquired_ms"),
    LAG: ("run_id", "time_ms"),
}
PART_SCHEMAS = {REBALANCES: REBALANCE_SCHEMA, OWNERSHIP: OWNERSHIP_SCHEMA, MOVES: MOVES_SCHEMA, LAG: LAG_SCHEMA}


# --------------------------------------------------------------------------- schema of a sweep

def _param_type(values: Iterable[Any]) -> pa.DataType:
    values = [v for v in values if v is not None]
    if values and all(isinstance(v, bool) for v in values):
        return pa.bool_()
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pa.int64()
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return pa.float64()
    return pa.string()


def swept_columns(sweep: Sweep) -> list[tuple[str, pa.DataType]]:
    """Swept parameters that are not already base columns, with a type fitting their values."""
    base = {name for name, _ in BASE_SIM_FIELDS}
    # A swept protocol is the run's strategy column (eager, cooperative-sticky, consumer-uniform, ...).
    return [(name, _param_type(run.params.get(name) for run in sweep.runs))
            for name in sweep.parameters if name not in base and name not in ("seed", "protocol")]


def simulation_schema(extra: Sequence[tuple[str, pa.DataType]]) -> pa.Schema:
    return pa.schema([*BASE_SIM_FIELDS, *extra, *RESULT_SIM_FIELDS])


def _convert(value: Any, kind: pa.DataType) -> Any:
    """A value as a column of ``kind`` holds it (a list as text, an int as a float...); a map or
    a flag as it is."""
    if value is None:
        return None
    if pa.types.is_string(kind):
        return ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
    if pa.types.is_floating(kind):
        return float(value)
    if pa.types.is_integer(kind):
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


@dataclass(frozen=True)
class RunTables:
    """One run's rows: its ``simulations`` row (a dict by column) and its part of every other table."""

    simulation: dict[str, Any]
    rebalances: pa.Table
    ownership: pa.Table
    moves: pa.Table
    lag: pa.Table

    def part(self, name: str) -> pa.Table:
        return {REBALANCES: self.rebalances, OWNERSHIP: self.ownership, MOVES: self.moves, LAG: self.lag}[name]


def rows_table(rows: Sequence[tuple[object, ...]], schema: pa.Schema) -> pa.Table:
    columns: Iterable[Sequence[object]] = zip(*rows, strict=True) if rows else [()] * len(schema)
    return pa.Table.from_arrays([pa.array(column, type=field.type) for column, field in zip(columns, schema,
                                                                                           strict=True)], schema=schema)


def _keyed(run: Run, strategy: str, rows: int, columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """A table of ``rows`` rows of one run: its keys repeated, then ``columns`` (arrays)."""
    keys = {"run_id": run.run_id, "scenario": run.scenario_name, "strategy": strategy, "seed": run.seed}
    arrays = [pa.repeat(pa.scalar(keys[name], type=schema.field(name).type), rows) for name, _ in RUN_KEY_FIELDS]
    arrays += [pa.array(columns[field.name], type=field.type) for field in list(schema)[len(RUN_KEY_FIELDS):]]
    return pa.Table.from_arrays(arrays, schema=schema)


def in_order(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """``table`` sorted by ``keys``, ascending, a null before any value (as Spark's ascending
    order puts it; pyarrow's own default puts it last)."""
    columns: dict[str, Any] = {}
    for key in keys:
        if table[key].null_count:
            columns[f"{key} is set"] = pc.is_valid(table[key])  # False (a null) sorts first
        columns[key] = table[key]
    return table.take(pc.sort_indices(pa.table(columns), sort_keys=[(name, "ascending") for name in columns]))


def moves_of_run(run: Run, strategy: str, ownership: pa.Table, rebalances: pa.Table) -> pa.Table:
    """One run's ownership intervals -> one row per partition move (owner A's interval followed
    by owner B's, A != B, in order of start and member): ``from_member``, ``to_member``,
    ``released_ms`` (A's end), ``acquired_ms`` (B's start), ``unowned_ms`` (the gap, at least 0)
    and the ``generation`` of the latest rebalance that started at or before B got it (of those
    starting at the same moment, the last in the rebalances' order; null when none had)."""
    partition = ownership["partition"].to_numpy(zero_copy_only=False)
    member = ownership["member"].to_numpy(zero_copy_only=False)
    start = ownership["start_ms"].to_numpy()
    end = ownership["end_ms"].to_numpy()
    order = np.lexsort((member, start, partition))
    partition, member, start, end = partition[order], member[order], start[order], end[order]
    moved = np.flatnonzero((partition[1:] == partition[:-1]) & (member[1:] != member[:-1]))
    acquired = start[moved + 1]
    released = end[moved]
    began = rebalances["start_ms"].to_numpy()  # the rebalances in their order: by start, then generation
    latest = np.searchsorted(began, acquired, side="right") - 1
    generation = pc.take(rebalances["generation"], pa.array(np.maximum(latest, 0))) if len(began) else \
        pa.nulls(len(moved), pa.int64())
    generation = pc.if_else(pa.array(latest >= 0), generation, pa.scalar(None, pa.int64()))
    return _keyed(run, strategy, len(moved), {
        "partition": partition[moved + 1], "from_member": member[moved], "to_member": member[moved + 1],
        "released_ms": released, "acquired_ms": acquired, "unowned_ms": np.maximum(acquired - released, 0),
        "generation": generation}, MOVES_SCHEMA)


def simulate_run(run: Run, sweep_name: str, swept: Sequence[tuple[str, pa.DataType]]) -> RunTables:
    """Simulate one run into its rows of every table. A failing simulation is a ``simulations``
    row with ``error`` (and no other rows)."""
    from kafka_rebalance.sim import load_scenario, run_simulation
    from kafka_rebalance.sim.ownership_metrics import comparison_metrics, partitions_from

    scenario = load_scenario(run.scenario)
    config = scenario.config
    values: dict[str, Any] = {
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
    values["strategy"] = strategy
    for name, kind in swept:
        values[name] = _convert(run.params.get(name), kind)
    values["error"] = error
    parts = {name: PART_SCHEMAS[name].empty_table() for name in PART_TABLES}
    if result is not None:
        subscriptions = {c.id: (tuple(sorted(c.subscribe)) if c.subscribe is not None else None)
                         for c in scenario.consumers}
        rows, total_min = rebalance_rows(run, result.rebalances, strategy, subscriptions)
        parts[REBALANCES] = in_order(rows_table(rows, REBALANCE_SCHEMA), SORT_KEYS[REBALANCES][1:])
        metrics = result.metrics.to_json()
        for name in METRICS:
            values[name] = metrics[name]
        # Measured the same way for every protocol, from the ownership intervals and rebalances.
        comparison = comparison_metrics(partitions_from(scenario), result, scenario.effective_end_ms)
        values["extra_metrics"] = {k: float(v) for k, v in comparison.items()}
        if result.load is not None:
            values["extra_metrics"].update(load_metrics(result, rows))
            parts[LAG] = lag_table(run, strategy, result)
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
        parts[OWNERSHIP] = in_order(_keyed(run, strategy, len(o), {
            "partition": o.partition, "member": o.member, "start_ms": o.start_ms, "end_ms": o.end_ms},
            OWNERSHIP_SCHEMA), SORT_KEYS[OWNERSHIP][1:])
        parts[MOVES] = moves_of_run(run, strategy, parts[OWNERSHIP], parts[REBALANCES])
    schema = simulation_schema(swept)
    row = {field.name: _convert(values.get(field.name), field.type) for field in schema}
    return RunTables(row, parts[REBALANCES], parts[OWNERSHIP], parts[MOVES], parts[LAG])


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


def lag_table(run: Run, strategy: str, result: SimulationResult) -> pa.Table:
    load = result.load
    assert load is not None
    return _keyed(run, strategy, len(load.time_ms), {
        "time_ms": load.time_ms, "max_lag": load.max_lag_series, "total_lag": group_lag(result)}, LAG_SCHEMA)


# --------------------------------------------------------------------------- what a task does

class PartWriter:
    """A task's part of every table in ``PART_TABLES``: ``part-<task>.parquet`` under each
    table's location (a path or a store's URL), written a row group at a time as runs add rows,
    and with the schema alone when none do (so every table can be read). The files are opened
    on ``files``: when it unwinds with an error, none is left in place (``io.write_file``)."""

    def __init__(self, locations: dict[str, str], task: int, files: ExitStack):
        self.locations, self.task, self.files = locations, task, files
        self.pending: dict[str, list[pa.Table]] = {name: [] for name in PART_TABLES}
        self.rows = dict.fromkeys(PART_TABLES, 0)
        self.writers: dict[str, Any] = {}

    def add(self, tables: RunTables) -> None:
        for name in PART_TABLES:
            part = tables.part(name)
            if part.num_rows:
                self.pending[name].append(part)
                self.rows[name] += part.num_rows
                if self.rows[name] >= ROW_GROUP_ROWS:
                    self._flush(name)

    def finish(self) -> None:
        for name in PART_TABLES:
            if self.pending[name] or name not in self.writers:
                self._flush(name)

    def _flush(self, name: str) -> None:
        import pyarrow.parquet as pq

        from kafka_rebalance.pipeline.io import join, write_file

        if name not in self.writers:
            filesystem, path = self.files.enter_context(
                write_file(join(self.locations[name], f"part-{self.task:05d}.parquet")))
            self.writers[name] = self.files.enter_context(
                pq.ParquetWriter(path, PART_SCHEMAS[name], filesystem=filesystem))
        pending = self.pending[name]
        self.writers[name].write_table(pa.concat_tables(pending) if pending else PART_SCHEMAS[name].empty_table(),
                                       row_group_size=ROW_GROUP_ROWS)
        self.pending[name], self.rows[name] = [], 0


def simulate_batch(task: int, runs: Iterable[Run], sweep_name: str, swept: Sequence[tuple[str, pa.DataType]],
                   locations: dict[str, str]) -> bytes:
    """One Spark task: simulate ``runs`` in order of run id, write the task's part of every table
    in ``PART_TABLES`` under ``locations``, and return the runs' ``simulations`` rows as an Arrow
    IPC stream (the driver writes that table whole, in order)."""
    simulations = []
    with ExitStack() as files:
        writer = PartWriter(locations, task, files)
        for run in sorted(runs, key=lambda r: r.run_id):
            tables = simulate_run(run, sweep_name, swept)
            simulations.append(tables.simulation)
            writer.add(tables)
        writer.finish()
    sink = pa.BufferOutputStream()
    schema = simulation_schema(swept)
    with pa.ipc.new_stream(sink, schema) as stream:
        stream.write_table(pa.Table.from_pylist(simulations, schema=schema))
    return bytes(sink.getvalue())


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


# --------------------------------------------------------------------------- the driver's side

def strategy_summary(simulations: pd.DataFrame) -> pd.DataFrame:
    """Per scenario and strategy, over seeds and other parameters: runs and mean/max metrics
    (of the runs without an error)."""
    ok = simulations[simulations["error"].isna()]
    grouped = ok.groupby(["scenario", "strategy"], sort=True)
    summary = grouped.agg(
        runs=("run_id", "size"),
        partitions_moved=("partitions_moved", "mean"),
        min_partitions_moved=("min_partitions_moved", "mean"),
        stop_the_world_partition_ms=("stop_the_world_partition_ms", "mean"),
        max_stop_the_world_partition_ms=("stop_the_world_partition_ms", "max"),
        final_balance=("final_balance", "mean"),
        max_final_balance=("final_balance", "max"),
        rebalances=("rebalances", "mean"),
        max_partition_unowned_ms=("max_partition_unowned_ms", "mean"),
        records_processed_twice=("records_processed_twice", "mean"),
        records_lost=("records_lost", "sum"),
    )
    return summary.reset_index()


def read_table(location: str, name: str, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Table ``name`` as the tasks wrote it under ``location`` (of ``run_ids`` only, if given), in
    its order (``SORT_KEYS``)."""
    from kafka_rebalance.pipeline.io import read_parquet_parts

    table = read_parquet_parts(location)
    if run_ids is not None:
        table = table.filter(pc.is_in(table["run_id"], pa.array(list(run_ids), pa.string())))
    frame: pd.DataFrame = in_order(table, SORT_KEYS[name]).to_pandas()
    return frame


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
    from kafka_rebalance.pipeline.io import StagedOutput, join, write_parquet
    from kafka_rebalance.pipeline.report import lab as report
    from kafka_rebalance.pipeline.report.page import write_report
    from kafka_rebalance.pipeline.spark import spark_progress
    from kafka_rebalance.sim import load_scenario

    # invalid scenarios fail here, as bad input, before any task starts
    costs = [simulation_cost(load_scenario(run.scenario)) for run in sweep.runs]
    swept = swept_columns(sweep)
    sweep_name = sweep.name
    chunks = batches(sweep.runs, tasks or default_tasks(spark, len(sweep.runs)), costs)
    with StagedOutput(out_dir, marker=LAB_SUMMARY) as out:
        locations = {name: out.location(name) for name in PART_TABLES}
        job = spark.sparkContext.parallelize(list(enumerate(chunks)), len(chunks)).map(
            lambda batch: simulate_batch(batch[0], batch[1], sweep_name, swept, locations))
        with spark_progress(spark, f"simulating {len(sweep.runs)} runs", enabled=progress):
            streams = job.collect()
        simulations = pa.concat_tables([pa.ipc.open_stream(stream).read_all() for stream in streams])
        simulations = in_order(simulations, SORT_KEYS[SIMULATIONS])
        write_parquet(simulations, join(out.location(SIMULATIONS), "part-00000.parquet"))

        sims = simulations.to_pandas(maps_as_pydicts="strict")
        summary = strategy_summary(sims)
        showcase = report.pick_showcase(sims)
        showcase_ownership = read_table(locations[OWNERSHIP], OWNERSHIP, showcase) if showcase else None
        showcase_rebalances = read_table(locations[REBALANCES], REBALANCES, showcase) if showcase else None
        lag_frame = read_table(locations[LAG], LAG)
        figures = report.lab_figures(sims, summary, showcase_ownership, showcase_rebalances)
        lag_figure = report.lag_figure(sims, lag_frame)
        answer = report.lab_answer(sweep.name, sims, tables=out.final, report=join(out.final, "report.html"))
        page = report.render_lab_report(answer, sims, summary, figures, lag_figure)
        write_report(out, page, [*figures, *([lag_figure] if lag_figure is not None else [])])
        out.write_text(LAB_SUMMARY, json.dumps({
            "sweep": sweep.name, "runs": len(sweep.runs), "tasks": len(chunks),
            "parameters": sweep.parameters, "failed": int(sims["error"].notna().sum()),
        }, indent=2) + "\n")
    return LabRun(out_dir=out.final, report=join(out.final, "report.html"), runs=len(sweep.runs),
                  failed=int(sims["error"].notna().sum()), summary=summary, answer=answer)
