"""Running a scenario: ``run_simulation`` picks the group side the scenario's group needs and
runs it; ``simulate`` gives the result JSON of docs/scenario.md.

A group that ever speaks KIP-848's consumer protocol (``group_protocol: consumer``, or a classic
group with ``upgrade`` events: a rolling upgrade) runs on the consumer-group side
(``sim.consumer_group.ConsumerGroupSide``), any other on the classic side
(``sim.classic_side.ClassicGroupSide``). Both are the one driver (``sim.driver.Driver``) with
their protocol's hooks filled in.
"""

from __future__ import annotations

from typing import Any

from kafka_rebalance.sim.classic_side import ClassicGroupSide
from kafka_rebalance.sim.consumer_group import ConsumerGroupSide
from kafka_rebalance.sim.result import SimulationResult
from kafka_rebalance.sim.scenario import Scenario, load_scenario


def run_simulation(scenario: Scenario | dict[str, Any] | str, seed: int | None = None) -> SimulationResult:
    """Run a scenario and keep everything (typed result, log records, the invariant tables)."""
    loaded = load_scenario(scenario)
    if loaded.uses_consumer_protocol:
        return ConsumerGroupSide(loaded, seed).run()
    return ClassicGroupSide(loaded, seed).run()


def simulate(scenario: Scenario | dict[str, Any] | str, seed: int | None = None) -> dict[str, Any]:
    """The result of docs/scenario.md (plus ``ownership``) for a scenario and seed."""
    return run_simulation(scenario, seed).to_json()
