"""Golden outputs: ``simulate --json`` and the coordinator log (every style) of each example
scenario, captured from the simulator before the protocol redesign of issue 11.

A change here must be a deliberate behaviour fix; regenerate with
``python -m tests.sim.test_golden`` and say in the commit which fix changed which scenario.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kafka_rebalance.sim import load_scenario, log_lines, run_simulation
from tests.sim.helpers import SCENARIOS

GOLDEN = Path(__file__).parent / "golden"
STYLES = ("modern", "legacy", "legacy-old")
NAMES = sorted(p.stem for p in SCENARIOS.glob("*.yaml"))
# KIP-848 groups and migrations (recorded 2026-11-27; the same at 66e5ea3, before the network moved
# into the driver, for seeds 0-2)
CONSUMER_GROUPS = sorted(p.stem for p in (SCENARIOS / "consumer-groups").glob("*.yaml"))


def _run(name: str):
    return run_simulation(load_scenario((SCENARIOS / f"{name}.yaml").read_text()))


def _result_json(run) -> str:
    return json.dumps(run.to_json(), indent=2) + "\n"


@pytest.mark.parametrize("name", NAMES)
def test_simulate_json_matches_golden(name):
    run = _run(name)
    assert json.loads(_result_json(run)) == json.loads((GOLDEN / f"{name}.json").read_text())
    for style in STYLES:
        expected = (GOLDEN / f"{name}.{style}.log").read_text().splitlines()
        assert log_lines(run, style) == expected, style


@pytest.mark.parametrize("name", CONSUMER_GROUPS)
def test_consumer_group_simulate_json_matches_golden(name):
    run = run_simulation(load_scenario((SCENARIOS / "consumer-groups" / f"{name}.yaml").read_text()))
    assert json.loads(_result_json(run)) == json.loads((GOLDEN / "consumer-groups" / f"{name}.json").read_text())


def regenerate(names: list[str]) -> None:
    for name in names or NAMES:
        run = _run(name)
        (GOLDEN / f"{name}.json").write_text(_result_json(run))
        for style in STYLES:
            (GOLDEN / f"{name}.{style}.log").write_text("".join(line + "\n" for line in log_lines(run, style)))
    for name in CONSUMER_GROUPS:
        run = run_simulation(load_scenario((SCENARIOS / "consumer-groups" / f"{name}.yaml").read_text()))
        (GOLDEN / "consumer-groups" / f"{name}.json").write_text(_result_json(run))


if __name__ == "__main__":
    regenerate(sys.argv[1:])
