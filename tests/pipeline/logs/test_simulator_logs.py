"""The simulator's own ``--log`` output, in every format it writes, reads back as the
rebalances the simulation had (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_rebalance.pipeline.logparse.parse import parse_lines
from kafka_rebalance.pipeline.logparse.story import tell
from kafka_rebalance.protocol.logformat import STYLES
from kafka_rebalance.sim.logwriter import log_lines
from kafka_rebalance.sim.run import run_simulation
from tests.conftest import TEST_SYSLOG

SCENARIOS = Path(__file__).resolve().parents[3] / "examples" / "scenarios"


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_simulated_logs_read_back(scenario, style):
    run = run_simulation(str(SCENARIOS / scenario))
    lines = log_lines(run, style)
    events = [r for r in parse_lines(lines, "sim.log", syslog=TEST_SYSLOG) if r["kind"] is not None]
    assert len(events) == len(lines)  # every line the simulator writes is understood
    groups = {e["group"] for e in events}
    rows = [row for group in groups for row in tell("default", group, [e for e in events if e["group"] == group])
            ["rebalances"]]
    completed = {r["generation"] for r in rows if r["outcome"] in ("stable", "empty")}
    simulated = {r["generation"] for r in run.result["rebalances"] if r["end_ms"] is not None}
    assert simulated <= completed
    # one rebalance per generation: nothing merged, nothing invented
    generations = [r["generation"] for r in rows if r["generation"] is not None]
    assert len(generations) == len(set(generations))
