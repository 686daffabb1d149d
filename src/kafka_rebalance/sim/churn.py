"""Churn scenarios for comparing group protocols on the same events: rolling restarts, scaling
out and in, crashes, slow consumers and an online migration (a rolling upgrade from a classic
group to the consumer protocol), each for any protocol.

``Service`` holds the costs of a typical service (docs/scenarios.md, "Realistic costs"):
100 records/s per partition, 1 ms of processing per record, ``max.poll.records`` 500,
auto-commit every 5 s, 500 ms of work in ``on_partitions_revoked`` (flush state, commit) and
200 ms in ``on_partitions_assigned`` (load state), and one member in twenty five times slower
than the rest (a hot key, a slow node). Scenario dicts come out ready for ``load_scenario``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from kafka_rebalance.model import GroupProtocol, ServerAssignorName

PROTOCOLS: dict[str, dict[str, Any]] = {
    # name -> scenario fields: how the group runs its rebalances
    "eager": {"group_protocol": GroupProtocol.CLASSIC.value, "strategies": ["range"]},
    "cooperative-sticky": {"group_protocol": GroupProtocol.CLASSIC.value, "strategies": ["cooperative-sticky"]},
    "load-aware": {"group_protocol": GroupProtocol.CLASSIC.value, "strategies": ["load-aware"]},
    "consumer-uniform": {"group_protocol": GroupProtocol.CONSUMER.value, "assignor": ServerAssignorName.UNIFORM.value},
    "consumer-range": {"group_protocol": GroupProtocol.CONSUMER.value, "assignor": ServerAssignorName.RANGE.value},
}
CHURNS = ("rolling-restart", "scale-out-in", "crashes", "slow-consumers", "migration")
MIGRATION_TARGET = "uniform"  # the server-side assignor a classic group (eager, cooperative-sticky) migrates to


@dataclass(frozen=True)
class Service:
    members: int = 40
    partitions: int = 80
    records_per_s_per_partition: float = 100.0
    processing_ms_per_record: float = 1.0
    slow_every: int = 20  # every n-th member is slow (0: none)
    slow_factor: float = 5.0
    max_poll_records: int = 500
    auto_commit_interval_ms: int = 5000
    revocation_ms: int = 500
    assignment_ms: int = 200
    restart_ms: int = 15000  # a process restart: stop, start, first poll
    seed: int = 11


def _names(service: Service) -> list[str]:
    return [f"c{i:03d}" for i in range(service.members)]


def _consumers(service: Service, strategies: list[str], static: bool = False) -> list[dict[str, Any]]:
    out = []
    for i, name in enumerate(_names(service)):
        slow = service.slow_every and i % service.slow_every == service.slow_every - 1
        cost = service.processing_ms_per_record * (service.slow_factor if slow else 1)
        spec: dict[str, Any] = {"id": name, "subscribe": ["orders"], "strategies": strategies,
                                "processing_ms_per_record": cost}
        if static:
            spec["group_instance_id"] = name
        out.append(spec)
    return out


def churn_scenario(churn: str, protocol: str, service: Service | None = None) -> dict[str, Any]:
    """The scenario dict of ``churn`` (one of CHURNS) run under ``protocol`` (a key of PROTOCOLS)."""
    service = service or Service()
    if churn not in CHURNS:
        raise ValueError(f"unknown churn {churn!r} (known: {', '.join(CHURNS)})")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r} (known: {', '.join(PROTOCOLS)})")
    rng = random.Random(service.seed)
    fields = PROTOCOLS[protocol]
    strategies = fields.get("strategies", ["cooperative-sticky"])
    names = _names(service)
    events: list[dict[str, Any]] = [{"at_ms": rng.randrange(0, 10000), "join": n} for n in names]
    start = 60000
    max_poll_interval_ms = 300000
    if churn in ("rolling-restart", "migration"):
        # migration: the same rolling restart, each consumer coming back with group.protocol=consumer
        # (from the classic group of ``protocol``, or from cooperative-sticky to a consumer protocol's assignor).
        action = "restart" if churn == "rolling-restart" else "upgrade"
        gap = 2 * service.restart_ms
        for i, name in enumerate(names):
            events.append({"at_ms": start + i * gap + rng.randrange(0, gap // 4), action: name,
                           "after_ms": service.restart_ms})
        end = start + len(names) * gap + 60000
    elif churn == "scale-out-in":
        half = names[len(names) // 2:]
        events = [e for e in events if e["join"] not in half]
        for i, name in enumerate(half):
            events.append({"at_ms": start + i * 5000 + rng.randrange(0, 1000), "join": name})
        back = start + len(half) * 5000 + 60000
        for i, name in enumerate(half):
            events.append({"at_ms": back + i * 5000 + rng.randrange(0, 1000), "leave": name})
        end = back + len(half) * 5000 + 60000
    elif churn == "crashes":
        victims = rng.sample(names, max(1, len(names) // 10))
        for i, name in enumerate(victims):
            at = start + i * 60000 + rng.randrange(0, 10000)
            events.append({"at_ms": at, "crash": name})
            events.append({"at_ms": at + 90000, "join": name})
        end = start + len(victims) * 60000 + 150000
    else:  # slow-consumers
        max_poll_interval_ms = 60000
        victims = rng.sample(names, max(1, len(names) // 10))
        for i, name in enumerate(victims):
            events.append({"at_ms": start + i * 45000 + rng.randrange(0, 5000), "stall": name, "for_ms": 90000})
        end = start + len(victims) * 45000 + 150000
    group_protocol, assignor = fields["group_protocol"], fields.get("assignor")
    if churn == "migration":
        group_protocol, assignor = GroupProtocol.CLASSIC.value, assignor or MIGRATION_TARGET
    scenario: dict[str, Any] = {
        "name": churn,
        "group": "orders-service",
        "group_protocol": group_protocol,
        "topics": {"orders": service.partitions},
        "config": {
            "max_poll_records": service.max_poll_records,
            "auto_commit_interval_ms": service.auto_commit_interval_ms,
            "revocation_ms": service.revocation_ms,
            "assignment_ms": service.assignment_ms,
            "max_poll_interval_ms": max_poll_interval_ms,
        },
        "consumers": _consumers(service, strategies),
        "produce": [{"topic": "orders", "records_per_s": service.records_per_s_per_partition * service.partitions,
                     "keys": 20 * service.partitions}],
        "events": events,
        "end_ms": end,
        "seed": service.seed,
    }
    if assignor is not None:
        scenario["assignor"] = assignor
    return scenario
