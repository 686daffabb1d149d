"""A deterministic discrete-event simulator of a consumer group on a virtual clock.

Public API (the pipeline depends on these names):
- ``load_scenario(path_or_text_or_dict) -> Scenario`` (raises ``InvalidInput``)
- ``simulate(scenario, seed=None) -> dict``: the result of shared/spec/scenario.md plus
  ``ownership`` (intervals during which a member consumed a partition)
- ``run_simulation(scenario, seed=None) -> SimulationRun`` (result + coordinator log records)
- ``write_log(run, path, style=None)`` / ``log_lines(run, style=None)``: the coordinator's log
  in Kafka's GroupCoordinator format
"""

from kafka_rebalance.sim.engine import Simulation, SimulationRun, run_simulation, simulate
from kafka_rebalance.sim.logwriter import log_lines, write_log
from kafka_rebalance.sim.scenario import Scenario, load_scenario

__all__ = ["Scenario", "Simulation", "SimulationRun", "load_scenario", "log_lines", "run_simulation", "simulate",
           "write_log"]
