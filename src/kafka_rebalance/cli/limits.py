"""Sizes no run can hold, refused up front with the field that asks for them.

The contract of each input (scenario.md, assignment-json.md) accepts any positive integer; these
bounds keep a command from allocating terabytes or simulating for centuries. Each bound is far
above what a real Kafka cluster or a useful simulation needs, and each message says which field
asked for what.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.sim import Scenario

INT32_MAX = 2**31 - 1
# assign: Kafka's own cluster-wide guidance is far lower (a few hundred thousand partitions).
MAX_SNAPSHOT_PARTITIONS = 10_000_000
# simulate / lab / soak
MAX_SIMULATED_MS = 7 * 24 * 3600 * 1000
MAX_SIMULATED_PARTITIONS = 100_000
MAX_CONSUMERS = 10_000
MAX_KEYS = 1_000_000
MAX_RECORDS_PER_S = 1e9
MAX_PROCESSING_MS_PER_RECORD = 3_600_000.0
# Periodic work the simulator will do (heartbeats, metadata refreshes, auto-commits, idle polls):
# about 100k such events a second on one core, so this bounds a run to a few minutes.
MAX_PERIODIC_EVENTS = 20_000_000


def _duration(ms: int) -> str:
    days = ms / 86_400_000
    if days >= 365:
        return f"{days / 365:,.0f} years"
    if days >= 1:
        return f"{days:,.1f} days"
    return f"{ms / 3_600_000:,.1f} hours"


def check_snapshot_limits(data: Any) -> None:
    """Sizes of a group snapshot (the raw JSON object, before the model validates the rest)."""
    if not isinstance(data, Mapping):
        return
    topics = data.get("topics")
    total = 0
    if isinstance(topics, Mapping):
        for name, spec in topics.items():
            count = spec.get("partitions") if isinstance(spec, Mapping) else spec
            if isinstance(count, int) and not isinstance(count, bool):
                if count > INT32_MAX:
                    raise InvalidInput(f"topics.{name}", f"{count:,} partitions; Kafka's partition count is a 32-bit integer")
                total += max(count, 0)
        if total > MAX_SNAPSHOT_PARTITIONS:
            raise InvalidInput("topics", f"{total:,} partitions in all; at most {MAX_SNAPSHOT_PARTITIONS:,} are assigned "
                                         "(no Kafka cluster holds more)")
    members = data.get("members")
    if isinstance(members, list):
        for i, member in enumerate(members):
            generation = member.get("generation") if isinstance(member, Mapping) else None
            if isinstance(generation, int) and not isinstance(generation, bool) and not (
                    -INT32_MAX - 1 <= generation <= INT32_MAX):
                raise InvalidInput(f"members[{i}].generation", f"{generation} is not a 32-bit integer (Kafka's generation id)")


def check_scenario_limits(scenario: Scenario) -> None:
    """Sizes and durations of a validated scenario."""
    end_ms = scenario.effective_end_ms
    if end_ms > MAX_SIMULATED_MS:
        field = "end_ms" if scenario.end_ms is not None else "events"
        raise InvalidInput(field, f"{_duration(end_ms)} of simulated time; the simulator runs at most "
                                  f"{_duration(MAX_SIMULATED_MS)}")
    if len(scenario.consumers) > MAX_CONSUMERS:
        raise InvalidInput("consumers", f"{len(scenario.consumers):,} consumers; at most {MAX_CONSUMERS:,} are simulated")
    counts = dict(scenario.topics)
    for name, count in scenario.topics.items():
        if count > INT32_MAX:
            raise InvalidInput(f"topics.{name}", f"{count:,} partitions; Kafka's partition count is a 32-bit integer")
    for i, event in enumerate(scenario.events):
        if event.create_topic is not None:
            counts[event.create_topic.name] = max(counts.get(event.create_topic.name, 0), event.create_topic.partitions)
            field, count = f"events[{i}].create_topic.partitions", event.create_topic.partitions
        elif event.add_partitions is not None:
            topic = event.add_partitions.topic
            counts[topic] = max(counts.get(topic, 0), event.add_partitions.count)
            field, count = f"events[{i}].add_partitions.count", event.add_partitions.count
        else:
            continue
        if count > INT32_MAX:
            raise InvalidInput(field, f"{count:,} partitions; Kafka's partition count is a 32-bit integer")
    total = sum(counts.values())
    if total > MAX_SIMULATED_PARTITIONS:
        raise InvalidInput("topics", f"{total:,} partitions in all; the simulator holds at most "
                                     f"{MAX_SIMULATED_PARTITIONS:,}")
    for i, spec in enumerate(scenario.produce):
        if spec.keys > MAX_KEYS:
            raise InvalidInput(f"produce[{i}].keys", f"{spec.keys:,} keys; at most {MAX_KEYS:,}")
        if not math.isfinite(spec.records_per_s) or spec.records_per_s > MAX_RECORDS_PER_S:
            raise InvalidInput(f"produce[{i}].records_per_s", f"{spec.records_per_s:g}; at most {MAX_RECORDS_PER_S:g}")
    config = scenario.config
    periodic = 0.0
    for i, consumer in enumerate(scenario.consumers):
        if not math.isfinite(consumer.processing_ms_per_record) or (
                consumer.processing_ms_per_record > MAX_PROCESSING_MS_PER_RECORD):
            raise InvalidInput(f"consumers[{i}].processing_ms_per_record",
                               f"{consumer.processing_ms_per_record:g}; at most {MAX_PROCESSING_MS_PER_RECORD:g}")
        rate = 1 / consumer.setting(config, "heartbeat_interval_ms") + 1 / config.metadata_max_age_ms
        if consumer.setting(config, "enable_auto_commit"):
            rate += 1 / consumer.setting(config, "auto_commit_interval_ms")
        if consumer.processing_ms_per_record:
            rate += 1 / config.idle_poll_ms
        periodic += rate * end_ms
    if periodic > MAX_PERIODIC_EVENTS:
        raise InvalidInput("config", f"about {periodic:,.0f} heartbeats, polls and commits over {_duration(end_ms)}; "
                                     f"the simulator does at most {MAX_PERIODIC_EVENTS:,} (lengthen the intervals, "
                                     "shorten end_ms or use fewer consumers)")


MAX_SWEEP_RUNS = 1_000_000


def _check_seeds(value: Any, where: str) -> int:
    """A seed or a list of seeds; returns how many."""
    seeds = value if isinstance(value, list | tuple) else [value]
    for seed in seeds:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise InvalidInput(where, f"expected an integer seed or a list of them, got {seed!r}")
    return len(seeds)


def check_sweep_size(data: Any) -> None:
    """The seeds of a sweep, and the number of simulations it expands to, counted before it is
    expanded (a few grid axes of many values multiply into more runs than any cluster finishes)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("runs"), list):
        return
    default_seeds = data.get("seeds", [0])
    default_count = _check_seeds(default_seeds, "seeds")
    total = 0
    for index, run in enumerate(data["runs"]):
        if not isinstance(run, Mapping):
            continue
        grid = run.get("grid") or {}
        combinations = 1
        if isinstance(grid, Mapping):
            for values in grid.values():
                combinations *= len(values) if isinstance(values, list | tuple) else 1
            if "seed" in grid:
                _check_seeds(grid["seed"], f"runs[{index}].grid.seed")
        if not (isinstance(grid, Mapping) and "seed" in grid):
            combinations *= _check_seeds(run["seeds"], f"runs[{index}].seeds") if "seeds" in run else default_count
        total += combinations
        if total > MAX_SWEEP_RUNS:
            raise InvalidInput(f"runs[{index}].grid", f"the sweep expands to more than {MAX_SWEEP_RUNS:,} simulations")
