"""Sweeps: scenarios (or scenario templates) with parameter grids, expanded into one run per
combination. Pure Python, no Spark.

A sweep file::

    name: my-sweep
    seeds: [1, 2]                     # every combination runs once per seed (default [0])
    runs:
      - scenario: crash.yaml          # a path (relative to the sweep file) or an inline mapping
        grid:                         # optional; every combination of the listed values runs
          strategy: [range, cooperative-sticky]
          session_timeout_ms: [10000, 45000]
        showcase: true                # optional: draw this run's ownership timelines

Sweep parameters (anything else is an error):

- ``strategy``: every consumer's ``partition.assignment.strategy`` (a name, or a list in
  preference order);
- ``group_size``: the number of consumers; extra consumers are copies of the last one (ids
  numbered on from its id, joining when it joins), surplus ones are dropped with their events;
- ``partitions``: the partition count of every topic of ``topics``;
- ``records_per_s``: the rate of every ``produce`` entry; ``processing_ms_per_record``: every
  consumer's processing cost;
- any ``config`` setting of the scenario (``session_timeout_ms``, ``heartbeat_interval_ms``,
  ``max_poll_interval_ms``, ``max_poll_records``, ...), applied to every consumer;
- ``seed`` (instead of the top-level ``seeds``) and ``end_ms``;
- ``protocol``: how the group rebalances, one of ``eager`` (classic, range),
  ``cooperative-sticky`` and ``load-aware`` (classic), ``consumer-uniform`` and
  ``consumer-range`` (KIP-848 consumer groups with that server-side assignor).

Instead of ``scenario``, a run may name a churn of ``sim.churn`` (``churn: rolling-restart``,
``scale-out-in``, ``crashes``, ``slow-consumers`` or ``migration``) with optional ``service``
costs (the fields of ``sim.churn.Service``); its ``protocol`` grid then compares protocols on
the same events.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kafka_rebalance.model import InvalidInput

SCENARIO_PARAMETERS = ("strategy", "group_size", "partitions", "records_per_s", "processing_ms_per_record", "seed",
                       "end_ms", "protocol")
# The scenario's config settings (docs/scenario.md plus the simulator's optional ones).
CONFIG_PARAMETERS = (
    "session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms", "group_initial_rebalance_delay_ms",
    "enable_auto_commit", "auto_commit_interval_ms", "metadata_max_age_ms", "max_poll_records",
    "heartbeat_with_poll", "network_latency_ms", "network_jitter_ms", "idle_poll_ms", "coordinator_load_ms",
    "consumer_heartbeat_interval_ms", "consumer_session_timeout_ms", "revocation_ms", "assignment_ms",
)
# Settings a consumer may also set for itself; a swept value replaces the consumer's own.
CONSUMER_SETTINGS = ("session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms", "max_poll_records",
                     "enable_auto_commit", "auto_commit_interval_ms", "heartbeat_with_poll")
SWEEP_KEYS = ("name", "description", "seeds", "runs")
RUN_KEYS = ("scenario", "churn", "service", "grid", "seeds", "showcase", "label")
BUILTIN_SWEEP = "lab-sweep.yaml"


def known_parameters() -> tuple[str, ...]:
    return (*SCENARIO_PARAMETERS, *CONFIG_PARAMETERS)


@dataclass(frozen=True)
class Run:
    """One simulation of a sweep: a concrete scenario, its seed, and the swept values."""

    run_id: str
    scenario_name: str
    label: str
    params: dict[str, Any]
    seed: int
    scenario: dict[str, Any]
    showcase: bool = False
    run_index: int = 0


@dataclass
class Sweep:
    name: str
    description: str
    runs: list[Run] = field(default_factory=list)
    parameters: list[str] = field(default_factory=list)  # swept parameter names, in first-seen order


def _builtin_text() -> str:
    return (resources.files("kafka_rebalance") / "data" / BUILTIN_SWEEP).read_text(encoding="utf-8")


def load_sweep(source: str | Path | None = None) -> Sweep:
    """A sweep from a file (None: the built-in sweep). Raises InvalidInput for bad input."""
    if source is None:
        return parse_sweep(yaml.safe_load(_builtin_text()), base_dir=None, origin="built-in sweep")
    path = Path(source)
    text = path.read_text(encoding="utf-8")
    return parse_sweep(yaml.safe_load(text), base_dir=path.parent, origin=str(path))


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _load_base(spec: Any, base_dir: Path | None, where: str) -> dict[str, Any]:
    if isinstance(spec, Mapping):
        return copy.deepcopy(dict(spec))
    if isinstance(spec, str):
        candidates = [Path(spec)]
        if base_dir is not None:
            candidates.insert(0, base_dir / spec)
        for candidate in candidates:
            if candidate.is_file():
                data = yaml.safe_load(candidate.read_text(encoding="utf-8"))
                if not isinstance(data, Mapping):
                    raise InvalidInput(where, f"{spec}: expected a scenario mapping")
                return dict(data)
        raise InvalidInput(where, f"{spec}: no such scenario file")
    raise InvalidInput(where, "expected a scenario file path or an inline scenario mapping")


def parse_sweep(data: Any, base_dir: Path | None = None, origin: str = "sweep") -> Sweep:
    if not isinstance(data, Mapping):
        raise InvalidInput("sweep", "expected a mapping with runs")
    unknown = sorted(set(data) - set(SWEEP_KEYS))
    if unknown:
        raise InvalidInput(f"sweep.{unknown[0]}", f"unknown key (known: {', '.join(SWEEP_KEYS)})")
    runs_spec = data.get("runs")
    if not isinstance(runs_spec, list) or not runs_spec:
        raise InvalidInput("sweep.runs", "expected a non-empty list of runs")
    default_seeds = _as_list(data.get("seeds", [0]))
    sweep = Sweep(name=str(data.get("name") or Path(origin).stem), description=str(data.get("description") or ""))
    for index, run_spec in enumerate(runs_spec):
        where = f"runs[{index}]"
        if not isinstance(run_spec, Mapping):
            raise InvalidInput(where, "expected a mapping with a scenario")
        unknown = sorted(set(run_spec) - set(RUN_KEYS))
        if unknown:
            raise InvalidInput(f"{where}.{unknown[0]}", f"unknown key (known: {', '.join(RUN_KEYS)})")
        churn = _churn_spec(run_spec, where)
        if churn is None and "scenario" not in run_spec:
            raise InvalidInput(f"{where}.scenario", "missing (or give a churn)")
        base = churn(None) if churn is not None else _load_base(run_spec["scenario"], base_dir, f"{where}.scenario")
        grid = run_spec.get("grid") or {}
        if not isinstance(grid, Mapping):
            raise InvalidInput(f"{where}.grid", "expected a mapping of parameter: [values]")
        for name in grid:
            if name not in known_parameters():
                raise InvalidInput(f"{where}.grid.{name}",
                                   f"unknown sweep parameter (known: {', '.join(known_parameters())})")
            if name not in sweep.parameters:
                sweep.parameters.append(name)
        seeds = _as_list(run_spec.get("seeds", default_seeds))
        axes = {name: _as_list(values) for name, values in grid.items()}
        if "seed" in axes:
            seeds = [None]
        for name, values in axes.items():
            if not values:
                raise InvalidInput(f"{where}.grid.{name}", "needs at least one value")
        names = list(axes)
        for combination in itertools.product(*(axes[n] for n in names)):
            params = dict(zip(names, combination, strict=True))
            for seed in seeds:
                chosen_seed = int(params.get("seed", seed))
                template = churn(params.get("protocol")) if churn is not None else base
                scenario = apply_parameters(template, params, f"{where}.grid")
                scenario["seed"] = chosen_seed
                scenario_name = str(base.get("name") or f"run{index}")
                label = str(run_spec.get("label") or scenario_name)
                run_params = {k: v for k, v in params.items() if k != "seed"}
                sweep.runs.append(Run(
                    run_id=run_id(scenario_name, run_params, chosen_seed, index),
                    scenario_name=scenario_name, label=label, params=run_params, seed=chosen_seed,
                    scenario=scenario, showcase=bool(run_spec.get("showcase", False)), run_index=index))
    ids = [r.run_id for r in sweep.runs]
    if len(set(ids)) != len(ids):
        raise InvalidInput("sweep.runs", "two runs have the same scenario, parameters and seed")
    return sweep


def _churn_spec(run_spec: Mapping[str, Any], where: str) -> Any:
    """For a ``churn`` run: a function protocol -> scenario dict (None when the run has a scenario)."""
    if "churn" not in run_spec:
        return None
    if "scenario" in run_spec:
        raise InvalidInput(f"{where}.churn", "give either a scenario or a churn, not both")
    from dataclasses import fields as dataclass_fields

    from kafka_rebalance.sim.churn import CHURNS, PROTOCOLS, Service, churn_scenario

    name = run_spec["churn"]
    if name not in CHURNS:
        raise InvalidInput(f"{where}.churn", f"unknown churn {name!r} (known: {', '.join(CHURNS)})")
    overrides = run_spec.get("service") or {}
    known = {f.name for f in dataclass_fields(Service)}
    if not isinstance(overrides, Mapping) or set(overrides) - known:
        raise InvalidInput(f"{where}.service", f"expected a mapping of {', '.join(sorted(known))}")
    service = Service(**overrides)

    def build(protocol: Any) -> dict[str, Any]:
        protocol = str(protocol or "cooperative-sticky")
        if protocol not in PROTOCOLS:
            raise InvalidInput(f"{where}.grid.protocol", f"unknown protocol {protocol!r} (known: {', '.join(PROTOCOLS)})")
        return churn_scenario(name, protocol, service)

    return build


def run_id(scenario_name: str, params: Mapping[str, Any], seed: int, run_index: int) -> str:
    canonical = json.dumps({"scenario": scenario_name, "params": params, "seed": seed, "run": run_index},
                           sort_keys=True, default=str)
    return hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:16]


_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def _resize_group(scenario: dict[str, Any], size: int, where: str) -> None:
    consumers = scenario.get("consumers") or []
    if not isinstance(size, int) or size < 1:
        raise InvalidInput(f"{where}.group_size", f"expected a positive integer, got {size!r}")
    if not consumers:
        raise InvalidInput(f"{where}.group_size", "the scenario has no consumer to copy")
    events = scenario.get("events") or []
    if size < len(consumers):
        dropped = {c["id"] for c in consumers[size:]}
        scenario["consumers"] = consumers[:size]
        scenario["events"] = [e for e in events if not (_event_consumers(e) & dropped)]
        return
    template = consumers[-1]
    match = _TRAILING_NUMBER.match(str(template["id"]))
    stem, number = (match.group(1), int(match.group(2))) if match else (f"{template['id']}-", 1)
    existing = {c["id"] for c in consumers}
    template_events = [e for e in events if _event_consumers(e) == {template["id"]}]
    added: list[dict[str, Any]] = []
    while len(consumers) + len(added) < size:
        number += 1
        new_id = f"{stem}{number}"
        if new_id in existing:
            continue
        clone = copy.deepcopy(template)
        clone["id"] = new_id
        if clone.get("group_instance_id"):
            clone["group_instance_id"] = f"{clone['group_instance_id']}-{number}"
        added.append(clone)
        for event in template_events:
            copied = copy.deepcopy(event)
            for action in ("join", "leave", "crash", "pause", "stall", "restart", "upgrade", "downgrade"):
                if copied.get(action) == template["id"]:
                    copied[action] = new_id
            if isinstance(copied.get("subscribe"), Mapping):
                copied["subscribe"]["consumer"] = new_id
            events.append(copied)
    scenario["consumers"] = consumers + added
    scenario["events"] = sorted(events, key=lambda e: e.get("at_ms", 0))


def _event_consumers(event: Mapping[str, Any]) -> set[str]:
    names = {event[a] for a in ("join", "leave", "crash", "pause", "stall", "restart", "upgrade", "downgrade")
             if event.get(a)}
    if isinstance(event.get("subscribe"), Mapping) and event["subscribe"].get("consumer"):
        names.add(event["subscribe"]["consumer"])
    return names


def apply_parameters(base: Mapping[str, Any], params: Mapping[str, Any], where: str = "grid") -> dict[str, Any]:
    """The scenario ``base`` with the swept ``params`` applied (a new dict)."""
    scenario = copy.deepcopy(dict(base))
    consumers = scenario.setdefault("consumers", [])
    if "group_size" in params:
        _resize_group(scenario, params["group_size"], where)
        consumers = scenario["consumers"]
    for name, value in params.items():
        if name == "protocol":
            from kafka_rebalance.sim.churn import PROTOCOLS

            if value not in PROTOCOLS:
                raise InvalidInput(f"{where}.protocol", f"unknown protocol {value!r} (known: {', '.join(PROTOCOLS)})")
            fields = PROTOCOLS[value]
            if not any("upgrade" in e for e in scenario.get("events") or []):
                scenario["group_protocol"] = fields["group_protocol"]
            if "assignor" in fields:
                scenario["assignor"] = fields["assignor"]
            for consumer in consumers:
                consumer["strategies"] = list(fields.get("strategies", consumer.get("strategies") or
                                                         ["cooperative-sticky"]))
        elif name == "strategy":
            strategies = [str(v) for v in _as_list(value)]
            for consumer in consumers:
                consumer["strategies"] = strategies
        elif name == "partitions":
            if not isinstance(value, int) or value < 1:
                raise InvalidInput(f"{where}.partitions", f"expected a positive integer, got {value!r}")
            topics = scenario.get("topics") or {}
            if not topics:
                raise InvalidInput(f"{where}.partitions", "the scenario has no topics")
            scenario["topics"] = {topic: value for topic in topics}
        elif name == "records_per_s":
            for entry in scenario.get("produce") or []:
                entry["records_per_s"] = value
        elif name == "processing_ms_per_record":
            for consumer in consumers:
                consumer["processing_ms_per_record"] = value
        elif name == "end_ms":
            scenario["end_ms"] = value
        elif name in CONFIG_PARAMETERS:
            scenario.setdefault("config", {})[name] = value
            if name in CONSUMER_SETTINGS:
                for consumer in consumers:
                    consumer.pop(name, None)
    return scenario
