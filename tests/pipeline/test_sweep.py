"""Sweep files: grids, templates, parameters, and the arithmetic of the lab's rows and moves (no Spark)."""

from __future__ import annotations

from itertools import pairwise

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.model import GroupProtocol, InvalidInput, RebalanceProtocol
from kafka_rebalance.pipeline.lab import (
    MOVES_SCHEMA,
    batches,
    in_order,
    minimum_moves,
    moves_of_run,
    rebalance_rows,
)
from kafka_rebalance.pipeline.sweep import apply_parameters, load_sweep, parse_sweep
from kafka_rebalance.sim import load_scenario
from kafka_rebalance.sim.result import MemberPartitions, RebalanceRecord

BASE = {
    "name": "base",
    "topics": {"t0": 4, "t1": 2},
    "consumers": [
        {"id": "consumer1", "subscribe": ["t0", "t1"], "session_timeout_ms": 30000},
        {"id": "consumer2", "subscribe": ["t0", "t1"]},
    ],
    "produce": [{"topic": "t0", "records_per_s": 10}],
    "events": [{"at_ms": 0, "join": "consumer1"}, {"at_ms": 5000, "join": "consumer2"},
               {"at_ms": 9000, "crash": "consumer2"}],
}


def test_grid_times_seeds():
    sweep = parse_sweep({"seeds": [1, 2, 3], "runs": [{"scenario": BASE, "grid": {
        "strategy": ["range", "sticky"], "session_timeout_ms": [10000, 45000]}}]})
    assert len(sweep.runs) == 2 * 2 * 3
    assert sweep.parameters == ["strategy", "session_timeout_ms"]
    assert len({r.run_id for r in sweep.runs}) == 12
    run = next(r for r in sweep.runs if r.params == {"strategy": "sticky", "session_timeout_ms": 10000} and r.seed == 2)
    scenario = load_scenario(run.scenario)
    assert scenario.seed == 2 and scenario.config.session_timeout_ms == 10000
    # A swept setting applies to every consumer, replacing a consumer's own value.
    assert all(c.session_timeout_ms is None and c.strategies == ["sticky"] for c in scenario.consumers)


def test_group_size_clones_the_last_consumer_and_its_events():
    grown = apply_parameters(BASE, {"group_size": 4})
    assert [c["id"] for c in grown["consumers"]] == ["consumer1", "consumer2", "consumer3", "consumer4"]
    assert {"at_ms": 5000, "join": "consumer4"} in grown["events"]
    assert {"at_ms": 9000, "crash": "consumer3"} in grown["events"]
    load_scenario(grown)
    shrunk = apply_parameters(BASE, {"group_size": 1})
    assert [c["id"] for c in shrunk["consumers"]] == ["consumer1"]
    assert all("consumer2" not in e.values() for e in shrunk["events"])


def test_partitions_and_rates():
    scenario = apply_parameters(BASE, {"partitions": 12, "records_per_s": 250, "processing_ms_per_record": 3})
    assert scenario["topics"] == {"t0": 12, "t1": 12}
    assert scenario["produce"][0]["records_per_s"] == 250
    assert all(c["processing_ms_per_record"] == 3 for c in scenario["consumers"])


@pytest.mark.parametrize("bad, field", [
    ({"runs": [{"scenario": BASE, "grid": {"colour": ["red"]}}]}, "runs[0].grid.colour"),
    ({"runs": [{"scenario": BASE, "grids": {}}]}, "runs[0].grids"),
    ({"runz": []}, "sweep.runz"),
    ({"runs": []}, "sweep.runs"),
    ({"runs": [{"scenario": "nowhere.yaml"}]}, "runs[0].scenario"),
])
def test_bad_sweeps_name_the_field(bad, field):
    with pytest.raises(InvalidInput) as info:
        parse_sweep(bad)
    assert info.value.field == field


def test_builtin_sweep_is_valid():
    sweep = load_sweep(None)
    assert len(sweep.runs) >= 50
    assert {r.params["strategy"] for r in sweep.runs if "strategy" in r.params} == {
        "range", "roundrobin", "sticky", "cooperative-sticky"}
    # The protocol comparison: eager, cooperative-sticky and KIP-848 on the same churn.
    assert {r.params["protocol"] for r in sweep.runs if "protocol" in r.params} == {
        "eager", "cooperative-sticky", "consumer-uniform", "consumer-range", "load-aware"}
    assert all(("strategy" in r.params) != ("protocol" in r.params) for r in sweep.runs)
    for run in sweep.runs:
        load_scenario(run.scenario)


def test_minimum_moves():
    # c1 leaves a group of three holding 3 of 8 partitions: exactly its 3 must move.
    owners = {f"t-{i}": m for i, m in enumerate(["c0", "c0", "c0", "c1", "c1", "c1", "c2", "c2"])}
    assert minimum_moves(set(owners), ["c0", "c2"], owners) == 3
    # A third member joins two holding 3 each: one from each of... no: 6/3 = 2 each, so 2 move.
    owners = {f"t-{i}": m for i, m in enumerate(["a", "a", "a", "b", "b", "b"])}
    assert minimum_moves(set(owners), ["a", "b", "c"], owners) == 2
    # 3 partitions over 3 members from 2/1: one moves.
    owners = {"t-0": "a", "t-1": "b", "t-2": "a"}
    assert minimum_moves(set(owners), ["a", "b", "c"], owners) == 1
    # First assignment: nothing had an owner, nothing "moves".
    assert minimum_moves({"t-0", "t-1"}, ["a", "b"], {}) == 0


def test_rebalance_rows_count_moves_and_cooperative_phases():
    run = parse_sweep({"runs": [{"scenario": BASE}]}).runs[0]
    def record(generation: int, start: int, members: str, assignment: dict[str, tuple[str, ...]],
               revoked: dict[str, tuple[str, ...]], added: dict[str, tuple[str, ...]]) -> RebalanceRecord:
        def each(mapping: dict[str, tuple[str, ...]]) -> tuple[MemberPartitions, ...]:
            return tuple(MemberPartitions(m, ps) for m, ps in mapping.items())

        return RebalanceRecord(generation, start, start + 10, "test", "cooperative-sticky", GroupProtocol.CLASSIC,
                               RebalanceProtocol.COOPERATIVE, None, tuple(members), each(assignment), each(revoked),
                               each(added))

    result = [
        record(1, 0, "ab", {"a": ("t-0", "t-2"), "b": ("t-1",)}, {}, {"a": ("t-0", "t-2"), "b": ("t-1",)}),
        record(2, 100, "abc", {"a": ("t-0",), "b": ("t-1",), "c": ()}, {"a": ("t-2",)}, {}),
        record(3, 120, "abc", {"a": ("t-0",), "b": ("t-1",), "c": ("t-2",)}, {}, {"c": ("t-2",)}),
    ]
    subs = {m: ("t",) for m in "abc"}
    rows, total_min = rebalance_rows(run, result, "cooperative-sticky", subs)
    moved = [r[10] for r in rows]
    minimum = [r[11] for r in rows]
    assert moved == [0, 0, 1] and minimum == [0, 1, 0] and total_min == 1
    subs["c"] = ("other",)
    assert rebalance_rows(run, result, "cooperative-sticky", subs)[1] is None


def test_batches_cover_every_run_once_in_sweep_order_and_balance_their_cost():
    items = list(range(10))
    cut = batches(items, 4)
    assert sorted(x for b in cut for x in b) == items and len(cut) == 4
    assert all(b == sorted(b) for b in cut)
    assert max(map(len, cut)) - min(map(len, cut)) <= 1  # equal costs: equal counts
    assert sorted(batches(items, 50)) == [[i] for i in items]
    # A sweep's long runs come together at its end: dealt by cost, they are spread.
    costs = [1.0] * 8 + [10.0] * 4
    cut = batches(list(range(12)), 4, costs)
    assert sorted(sum(costs[i] for i in b) for b in cut) == [12.0, 12.0, 12.0, 12.0]


def test_the_built_in_sweeps_batches_are_within_one_run_of_each_other():
    """Greedy dealing, costliest first: no batch costs more than another by more than its
    cheapest run would move (the longest-processing-time rule's bound)."""
    from kafka_rebalance.pipeline.lab import simulation_cost

    runs = load_sweep(None).runs
    costs = {run.run_id: simulation_cost(load_scenario(run.scenario)) for run in runs}
    cut = batches(runs, 8, [costs[run.run_id] for run in runs])
    loads = [sum(costs[run.run_id] for run in b) for b in cut]
    assert len(cut) == 8 and sum(len(b) for b in cut) == len(runs)
    assert max(loads) - min(loads) <= max(costs.values())


def _table(rows: list[tuple[object, ...]], names: list[str]) -> pa.Table:
    return pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})


def _moves_one_by_one(ownership: list[tuple[str, str, int, int]],
                      rebalances: list[tuple[int | None, int]]) -> list[tuple[object, ...]]:
    """What ``moves_of_run`` computes, a row at a time: each partition's intervals in order of
    start and member; a change of member is a move; its generation is that of the last rebalance
    (in the order by start, then generation, a null first) that started at or before it."""
    ordered_rebalances = sorted(rebalances, key=lambda r: (r[1], r[0] is not None, r[0] or 0))
    moves = []
    for partition in sorted({p for p, *_ in ownership}):
        intervals = sorted((start, member, end) for p, member, start, end in ownership if p == partition)
        for (_, before, released), (acquired, after, _) in pairwise(intervals):
            if before != after:
                started = [generation for generation, start in ordered_rebalances if start <= acquired]
                moves.append((partition, before, after, released, acquired, max(acquired - released, 0),
                              started[-1] if started else None))
    return moves


MOVES_COLUMNS = ["partition", "from_member", "to_member", "released_ms", "acquired_ms", "unowned_ms", "generation"]


def test_a_move_belongs_to_the_last_rebalance_begun_by_then_of_those_begun_together():
    """Consumer-group epochs bumped in one millisecond (members joining at once): the partition
    acquired after them moved under the last epoch, not the first (the DataFrame job's ``max_by``
    took either)."""
    run = parse_sweep({"runs": [{"scenario": BASE}]}).runs[0]
    ownership = in_order(_table([("t-0", "c1", 2, 5008), ("t-0", "c3", 5008, 9000), ("t-1", "c2", 2, 9000)],
                                ["partition", "member", "start_ms", "end_ms"]), ["partition", "start_ms"])
    rebalances = in_order(_table([(8, 2), (1, 2), (None, 9000)], ["generation", "start_ms"]),
                          ["start_ms", "generation"])
    moves = moves_of_run(run, "consumer-uniform", ownership, rebalances)
    assert moves.select(MOVES_COLUMNS).to_pylist() == [
        dict(zip(MOVES_COLUMNS, ("t-0", "c1", "c3", 5008, 5008, 0, 8), strict=True))]
    assert moves.column_names == MOVES_SCHEMA.names and moves["run_id"].to_pylist() == [run.run_id]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["t-0", "t-1", "t-2"]), st.sampled_from(["a", "b", "c"]),
                       st.integers(0, 50), st.integers(0, 40)), max_size=25,
             unique_by=lambda interval: interval[:3]),  # a member holds a partition once from a moment
    st.lists(st.tuples(st.one_of(st.none(), st.integers(1, 6)), st.integers(0, 60)), max_size=6),
)
def test_moves_of_a_run_are_the_one_by_one_reading_of_its_intervals(intervals, rebalances):
    run = parse_sweep({"runs": [{"scenario": BASE}]}).runs[0]
    ownership_rows = [(p, m, start, start + length) for p, m, start, length in intervals]
    ownership = _table(ownership_rows, ["partition", "member", "start_ms", "end_ms"]).cast(
        pa.schema([("partition", pa.string()), ("member", pa.string()), ("start_ms", pa.int64()),
                   ("end_ms", pa.int64())]))
    rebalance_table = in_order(_table(rebalances, ["generation", "start_ms"]).cast(
        pa.schema([("generation", pa.int64()), ("start_ms", pa.int64())])), ["start_ms", "generation"])
    moves = moves_of_run(run, "range", ownership, rebalance_table)
    expected = _moves_one_by_one(ownership_rows, rebalances)
    got = [tuple(row[c] for c in MOVES_COLUMNS) for row in moves.to_pylist()]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert [(r[0], r[4]) for r in got] == sorted((r[0], r[4]) for r in got)  # the table's order
