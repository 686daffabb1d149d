"""A deterministic discrete-event simulator of a consumer group on a virtual clock.

Public API (the pipeline depends on these names):
- ``load_scenario(path_or_text_or_dict) -> Scenario`` (raises ``InvalidInput``)
- ``run_simulation(scenario, seed=None) -> SimulationResult``: the typed result (rebalances,
  metrics, and the columnar ownership / consumption / commit / produced tables)
- ``simulate(scenario, seed=None) -> dict``: ``SimulationResult.to_json()``, the result of
  docs/scenario.md plus ``ownership``
- ``write_log(result, path, style=None)`` / ``log_lines(result, style=None)``: the coordinator's
  log in one of Kafka's log formats
- ``ClassicGroupSide`` / ``ConsumerGroupSide``: the two group sides ``run_simulation`` picks from
  (``sim/run.py``), for a test that wants one of them whatever the scenario
"""

from kafka_rebalance.sim.classic_side import ClassicGroupSide
from kafka_rebalance.sim.consumer_group import ConsumerGroupSide
from kafka_rebalance.sim.logwriter import log_lines, write_log
from kafka_rebalance.sim.result import SimulationResult
from kafka_rebalance.sim.run import run_simulation, simulate
from kafka_rebalance.sim.scenario import Scenario, load_scenario

__all__ = ["ClassicGroupSide", "ConsumerGroupSide", "Scenario", "SimulationResult", "load_scenario", "log_lines",
           "run_simulation", "simulate", "write_log"]
