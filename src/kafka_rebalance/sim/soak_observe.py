"""What the soak's invariants look at in a finished run, in one typed record (``Observation``),
read from the simulator's public result.

Fields the simulator does not report are ``None`` and the invariants that need them fall back to
the simulator's own counters (``offset_regressions``, ``records_lost``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafka_rebalance.sim.engine import run_simulation
from kafka_rebalance.sim.scenario import Scenario


@dataclass(frozen=True, slots=True)
class Ownership:
    partition: str
    member: str
    generation: int | None
    start_ms: int
    end_ms: int


@dataclass(frozen=True, slots=True)
class Consumption:
    partition: str
    member: str
    generation: int | None
    start_offset: int
    end_offset: int
    time_ms: int


@dataclass(frozen=True, slots=True)
class Commit:
    time_ms: int
    partition: str
    offset: int
    member: str
    generation: int | None
    accepted: bool


@dataclass(frozen=True, slots=True)
class Observation:
    ownership: tuple[Ownership, ...]
    consumption: tuple[Consumption, ...] | None
    commits: tuple[Commit, ...] | None
    offset_regressions: int
    records_lost: int
    final_state: str
    live_members: tuple[str, ...]  # consumers whose process runs at the end
    final_assignment: dict[str, tuple[str, ...]]
    subscribed_partitions: tuple[str, ...]  # what the live consumers subscribe to, at the end


def observe(scenario: Scenario) -> Observation:
    run = run_simulation(scenario)
    result = run.result
    ownership = tuple(Ownership(o["partition"], o["member"], None, o["start_ms"], o["end_ms"])
                      for o in result["ownership"])
    live = live_consumers(scenario)
    return Observation(
        ownership=ownership,
        consumption=None,
        commits=None,
        offset_regressions=run.offset_regressions,
        records_lost=int(result["metrics"]["records_lost"]),
        final_state=run.final_state,
        live_members=live,
        final_assignment={m: tuple(parts) for m, parts in result["final_assignment"].items()},
        subscribed_partitions=subscribed_partitions(scenario, live),
    )


def live_consumers(scenario: Scenario) -> tuple[str, ...]:
    """Consumers whose process is running at the end: the last of their join, restart, leave or
    crash events (in time order, as the simulator replays them) started it."""
    running: dict[str, bool] = {}
    for event in sorted(scenario.events, key=lambda e: e.at_ms):
        if event.at_ms > scenario.effective_end_ms:
            break
        for action, alive in (("join", True), ("restart", True), ("leave", False), ("crash", False)):
            name = getattr(event, action)
            if name is not None:
                running[name] = alive
    return tuple(sorted(name for name, alive in running.items() if alive))


def final_topics(scenario: Scenario) -> dict[str, int]:
    topics = dict(scenario.topics)
    for event in sorted(scenario.events, key=lambda e: e.at_ms):
        if event.at_ms > scenario.effective_end_ms:
            break
        if event.create_topic is not None:
            topics[event.create_topic.name] = event.create_topic.partitions
        elif event.add_partitions is not None:
            topics[event.add_partitions.topic] = max(topics[event.add_partitions.topic], event.add_partitions.count)
    return topics


def subscribed_partitions(scenario: Scenario, members: tuple[str, ...]) -> tuple[str, ...]:
    topics = final_topics(scenario)
    subscriptions = {c.id: (tuple(c.subscribe) if c.subscribe is not None else None, c.pattern)
                     for c in scenario.consumers}
    for event in sorted(scenario.events, key=lambda e: e.at_ms):
        if event.subscribe is not None and event.at_ms <= scenario.effective_end_ms:
            change = event.subscribe
            subscriptions[change.consumer] = (tuple(change.topics) if change.topics is not None else None,
                                              change.pattern)
    wanted: set[str] = set()
    for name in members:
        listed, pattern = subscriptions[name]
        if pattern is not None:
            compiled = re.compile(pattern)
            wanted.update(t for t in topics if compiled.fullmatch(t))
        else:
            wanted.update(t for t in listed or () if t in topics)
    return tuple(sorted(f"{t}-{p}" for t in wanted for p in range(topics[t])))
