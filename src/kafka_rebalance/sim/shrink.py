"""The soak's shrinker: ``shrink`` reduces a failing schedule to a minimal one that fails the
same way (delta debugging over the events, then over consumers, topics, traffic and settings), so
a violation comes with a schedule a person can read. Deterministic: the same failing schedule
shrinks to the same minimal one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.sim import invariants
from kafka_rebalance.sim.invariants import Violation
from kafka_rebalance.sim.schedules import last_activity_ms, quiet_ms


def same_failure(violations: Sequence[Violation]) -> Callable[[dict[str, Any]], bool]:
    """The predicate a shrink keeps true: the candidate still breaks one of the same invariants."""
    kinds = {v.invariant for v in violations}

    def fails(candidate: dict[str, Any]) -> bool:
        try:
            # Looked up at each call, so a test can stand in its own check for the module's.
            return any(v.invariant in kinds for v in invariants.check_schedule(candidate))
        except InvalidInput:
            return False

    return fails


def shrink(schedule: dict[str, Any], fails: Callable[[dict[str, Any]], bool], *, budget: int = 400) -> tuple[
        dict[str, Any], int]:
    """A minimal schedule for which ``fails`` still holds, and how many candidates were tried.

    Delta debugging (ddmin) over the events, then removal of whole consumers (with their events),
    topics, produce entries, and simplification of settings (no jitter, no processing cost, not
    static, the quiet time recomputed). Repeats until nothing more can go or ``budget`` runs out.
    """
    state = {"tries": 0}

    def attempt(candidate: dict[str, Any]) -> bool:
        if state["tries"] >= budget:
            return False
        state["tries"] += 1
        return fails(_with_end(candidate))

    current = _with_end(copy.deepcopy(schedule))
    changed = True
    while changed and state["tries"] < budget:
        changed = False
        base = current

        def fails_with(events: list[Any], base: dict[str, Any] = base) -> bool:
            return attempt({**base, "events": events})

        events = _ddmin(base["events"], fails_with)
        if len(events) < len(current["events"]):
            current = _with_end({**current, "events": events})
            changed = True
        for candidate in _simplifications(current):
            if state["tries"] >= budget:
                break
            if attempt(candidate):
                current = _with_end(candidate)
                changed = True
    return current, state["tries"]


def _with_end(schedule: dict[str, Any]) -> dict[str, Any]:
    result = dict(schedule)
    result["end_ms"] = last_activity_ms(result) + quiet_ms(result)
    return result


def _ddmin(items: list[Any], fails: Callable[[list[Any]], bool]) -> list[Any]:
    """Zeller's ddmin: a 1-minimal sublist of ``items`` (order kept) for which ``fails`` holds."""
    current = list(items)
    granularity = 2
    while len(current) >= 2:
        chunk = max(1, len(current) // granularity)
        subsets = [current[i:i + chunk] for i in range(0, len(current), chunk)]
        reduced = False
        for index in range(len(subsets)):
            complement = [item for j, subset in enumerate(subsets) if j != index for item in subset]
            if fails(complement):
                current = complement
                granularity = max(granularity - 1, 2)
                reduced = True
                break
        if not reduced:
            if granularity >= len(current):
                break
            granularity = min(granularity * 2, len(current))
    if len(current) == 1 and fails([]):
        return []
    return current


def _simplifications(schedule: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Candidate schedules one step simpler than ``schedule``, most aggressive first."""
    for consumer in schedule["consumers"]:
        name = consumer["id"]
        if len(schedule["consumers"]) > 1:
            yield {**schedule, "consumers": [c for c in schedule["consumers"] if c["id"] != name],
                   "events": [e for e in schedule["events"] if not _mentions(e, name)]}
    for topic in list(schedule["topics"]):
        if len(schedule["topics"]) > 1:
            yield _without_topic(schedule, topic)
    for index in range(len(schedule.get("produce", []))):
        yield {**schedule, "produce": [p for i, p in enumerate(schedule["produce"]) if i != index]}
    config = schedule.get("config", {})
    for key, simple in (("network_jitter_ms", 0), ("network_latency_ms", 0), ("coordinator_load_ms", 0),
                        ("group_initial_rebalance_delay_ms", 0)):
        if config.get(key, simple) != simple:
            yield {**schedule, "config": {**config, key: simple}}
    for i, consumer in enumerate(schedule["consumers"]):
        for key in ("group_instance_id", "processing_ms_per_record", "max_poll_records"):
            if key in consumer:
                simpler = {k: v for k, v in consumer.items() if k != key}
                yield {**schedule, "consumers": [*schedule["consumers"][:i], simpler, *schedule["consumers"][i + 1:]]}
    for topic, count in schedule["topics"].items():
        if count > 1:
            yield {**schedule, "topics": {**schedule["topics"], topic: count - 1},
                   "events": [_regrow(e, topic, count - 1) for e in schedule["events"]]}
    for i, event in enumerate(schedule["events"]):
        for key in ("for_ms", "after_ms"):
            if event.get(key, 0) > 0:
                yield {**schedule, "events": [*schedule["events"][:i], {**event, key: event[key] // 2},
                                              *schedule["events"][i + 1:]]}


def _mentions(event: dict[str, Any], name: str) -> bool:
    return any(event.get(action) == name for action in ("join", "leave", "crash", "pause", "stall", "restart")) or (
        isinstance(event.get("subscribe"), dict) and event["subscribe"].get("consumer") == name)


def _without_topic(schedule: dict[str, Any], topic: str) -> dict[str, Any]:
    consumers = []
    for consumer in schedule["consumers"]:
        if "subscribe" in consumer:
            remaining = [t for t in consumer["subscribe"] if t != topic]
            consumer = {**consumer, "subscribe": remaining or [t for t in schedule["topics"] if t != topic][:1]}
        consumers.append(consumer)
    return {**schedule, "topics": {t: n for t, n in schedule["topics"].items() if t != topic},
            "consumers": consumers,
            "produce": [p for p in schedule.get("produce", []) if p["topic"] != topic],
            "events": [e for e in schedule["events"]
                       if not (isinstance(e.get("add_partitions"), dict) and e["add_partitions"]["topic"] == topic)]}


def _regrow(event: dict[str, Any], topic: str, base: int) -> dict[str, Any]:
    grow = event.get("add_partitions")
    if isinstance(grow, dict) and grow["topic"] == topic:
        return {**event, "add_partitions": {**grow, "count": max(grow["count"] - 1, base + 1)}}
    return event
