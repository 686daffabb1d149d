"""SimulationResult's columnar tables agree with each other and with the metrics."""

from __future__ import annotations

import numpy as np

from kafka_rebalance.sim import run_simulation
from tests.sim.helpers import SCENARIOS


def test_tables_of_a_cooperative_run():
    run = run_simulation(SCENARIOS / "cooperative-join.yaml")
    assert run.to_json()["metrics"] == run.metrics.to_json()
    assert len(run.rebalances) == run.metrics.rebalances
    # Every produced record was consumed, from offset 0, in contiguous ranges.
    for partition, produced in zip(run.produced.partition, run.produced.records, strict=True):
        mine = run.consumption.partition == partition
        starts, ends = run.consumption.from_offset[mine], run.consumption.to_offset[mine]
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
        assert starts[0] == 0 and ends.max() == produced
        assert (starts[1:] <= np.maximum.accumulate(ends)[:-1]).all()
    # Consumption happens inside an ownership interval of the same member.
    for p, m, start, end in zip(run.consumption.partition, run.consumption.member, run.consumption.start_ms,
                                run.consumption.end_ms, strict=True):
        owned = (run.ownership.partition == p) & (run.ownership.member == m)
        assert ((run.ownership.start_ms[owned] <= start) & (run.ownership.end_ms[owned] >= end)).any()
    # Accepted commits never go back, and the last one of a partition is at most what was produced.
    accepted = run.commits.error_code == 0
    assert accepted.sum() > 0 and run.offset_regressions == 0
    assert run.final_group_state == "Stable" and run.final_members == ("consumer1", "consumer2", "consumer3")
    assert {m.member for m in run.final_assignment} == {"consumer1", "consumer2", "consumer3"}
    assert set(run.ownership.generation.tolist()) <= {1, 2, 3}
