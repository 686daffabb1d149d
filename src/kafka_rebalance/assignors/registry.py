"""Assignors by name: the built-ins, plug-ins registered under the ``kafka_rebalance.assignors``
entry-point group, and ``module:Class`` given directly."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points

from kafka_rebalance.assignors.base import PartitionAssignor
from kafka_rebalance.assignors.load_aware import LoadAwareAssignor
from kafka_rebalance.assignors.range import RangeAssignor
from kafka_rebalance.assignors.roundrobin import RoundRobinAssignor
from kafka_rebalance.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kafka_rebalance.model import InvalidInput

ENTRY_POINT_GROUP = "kafka_rebalance.assignors"
# Kafka's class names, so a Java-style partition.assignment.strategy value works too.
JAVA_CLASS_ALIASES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}

_BUILTINS: dict[str, Callable[[], PartitionAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
    "load-aware": LoadAwareAssignor,
}
_registered: dict[str, Callable[[], PartitionAssignor]] = {}


def register(name: str, factory: Callable[[], PartitionAssignor]) -> None:
    """Register an assignor factory under ``name`` for this process."""
    _registered[name] = factory


def available() -> list[str]:
    names = set(_BUILTINS) | set(_registered) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(names)


def get_assignor(name: str) -> PartitionAssignor:
    """Resolve a strategy name (built-in, registered, entry point, Java class, or module:Class)."""
    name = JAVA_CLASS_ALIASES.get(name, name)
    if name in _BUILTINS:
        return _BUILTINS[name]()
    if name in _registered:
        return _registered[name]()
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return _instantiate(ep.load, name)
    if ":" in name:
        module_name, _, attr = name.partition(":")
        return _instantiate(lambda: getattr(importlib.import_module(module_name), attr), name)
    raise InvalidInput("strategy", f"unknown strategy {name!r} (known: {', '.join(available())}, or module:Class)")


def _instantiate(load: Callable[[], object], name: str) -> PartitionAssignor:
    try:
        factory = load()
    except (ImportError, AttributeError) as exc:
        raise InvalidInput("strategy", f"cannot load assignor {name!r}: {exc}") from exc
    assignor = factory() if callable(factory) else factory
    if not isinstance(assignor, PartitionAssignor):
        raise InvalidInput("strategy", f"{name!r} is not a PartitionAssignor")
    return assignor
