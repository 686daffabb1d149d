"""What one lab task does, without Spark: simulate its runs, write its part of every table (the
schema alone where it has no rows, so the table can be read) and return the runs' rows of
``simulations``; a run whose simulation raises is a row with its error, and the others go on."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_rebalance.pipeline import lab
from kafka_rebalance.pipeline.sweep import parse_sweep

SCENARIO = {
    "name": "two-join", "topics": {"t0": 2},
    "consumers": [{"id": "c1", "subscribe": ["t0"]}, {"id": "c2", "subscribe": ["t0"]}],
    "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 5000, "join": "c2"}], "end_ms": 15000,
}


@pytest.fixture
def sweep():
    return parse_sweep({"name": "task", "seeds": [1, 2], "runs": [
        {"scenario": SCENARIO, "grid": {"strategy": ["range", "cooperative-sticky"]}}]})


def run_task(sweep, tmp_path, task: int = 3):
    locations = {name: str(tmp_path / name) for name in lab.PART_TABLES}
    stream = lab.simulate_batch(task, sweep.runs, sweep.name, lab.swept_columns(sweep), locations)
    return pa.ipc.open_stream(stream).read_all(), {name: pq.read_table(tmp_path / name / f"part-{task:05d}.parquet")
                                                   for name in lab.PART_TABLES}


def test_a_task_writes_its_part_of_every_table_in_run_order(sweep, tmp_path):
    simulations, parts = run_task(sweep, tmp_path)
    assert simulations.schema == lab.simulation_schema(lab.swept_columns(sweep))
    assert simulations["run_id"].to_pylist() == sorted(run.run_id for run in sweep.runs)
    assert simulations["error"].null_count == 4
    for name, part in parts.items():
        assert part.schema == lab.PART_SCHEMAS[name], name
        keys = [(key, "ascending") for key in lab.SORT_KEYS[name]]
        assert part.equals(part.sort_by(keys)), name  # sorted by run id and the table's keys
    assert parts[lab.LAG].num_rows == 0  # no load model: the schema alone
    assert set(parts[lab.OWNERSHIP]["run_id"].to_pylist()) == set(simulations["run_id"].to_pylist())
    # every move is a change of owner the ownership intervals show
    for move in parts[lab.MOVES].to_pylist():
        assert move["from_member"] != move["to_member"] and move["unowned_ms"] >= 0


def test_a_simulation_that_raises_is_a_row_with_its_error(sweep, tmp_path, monkeypatch):
    from kafka_rebalance import sim

    real = sim.run_simulation
    broken = sweep.runs[1].seed, sweep.runs[1].params["strategy"]

    def run_simulation(scenario, seed):
        if (seed, scenario.consumers[0].strategies[0]) == broken:
            raise RuntimeError("the simulator broke\nsecond line")
        return real(scenario, seed)

    monkeypatch.setattr(sim, "run_simulation", run_simulation)
    simulations, parts = run_task(sweep, tmp_path)
    failed = simulations.filter(simulations["error"].is_valid()).to_pylist()
    assert [row["error"] for row in failed] == ["RuntimeError: the simulator broke"]
    assert failed[0]["run_id"] == sweep.runs[1].run_id and failed[0]["rebalances"] is None
    assert sweep.runs[1].run_id not in parts[lab.OWNERSHIP]["run_id"].to_pylist()
    assert simulations.num_rows == 4
