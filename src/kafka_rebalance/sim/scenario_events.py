"""A scenario's events once validated: one frozen dataclass per kind, the closed union
``ScenarioEvent``.

The scenario document (docs/scenario.md) writes an event as a mapping with ``at_ms`` and exactly
one action key (``join: c1``, ``pause: c1`` with ``for_ms``, ``create_topic: {name, partitions}``,
...); ``sim.scenario.EventSpec`` validates that form, and ``Scenario.timeline`` holds the same
events as these types, in document order. The driver (``sim.driver``) dispatches them with
``match`` + ``assert_never``, so an event kind the driver does not handle is a type error.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConsumerJoins:
    """``join``: the consumer's process starts (nothing happens if it is running already)."""

    at_ms: int
    consumer: str


@dataclass(frozen=True, slots=True)
class ConsumerLeaves:
    """``leave``: a clean shutdown (``close()``) of the consumer's process."""

    at_ms: int
    consumer: str


@dataclass(frozen=True, slots=True)
class ConsumerCrashes:
    """``crash``: the process dies without a word to the group."""

    at_ms: int
    consumer: str


@dataclass(frozen=True, slots=True)
class ConsumerRestarts:
    """``restart``: a clean shutdown, and the process starts again ``after_ms`` later (a bounce;
    a static member keeps its group.instance.id)."""

    at_ms: int
    consumer: str
    after_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerPauses:
    """``pause``: the whole process is frozen for ``for_ms`` (a GC pause): no heartbeats either."""

    at_ms: int
    consumer: str
    for_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerStalls:
    """``stall``: the poll loop is stuck for ``for_ms``; background heartbeats go on."""

    at_ms: int
    consumer: str
    for_ms: int


@dataclass(frozen=True, slots=True)
class TopicCreated:
    """``create_topic``: a new topic with ``partitions`` partitions."""

    at_ms: int
    topic: str
    partitions: int


@dataclass(frozen=True, slots=True)
class PartitionsAdded:
    """``add_partitions``: the topic grows to ``count`` partitions (a count not above the current
    one changes nothing)."""

    at_ms: int
    topic: str
    count: int


@dataclass(frozen=True, slots=True)
class SubscriptionChanged:
    """``subscribe``: the running consumer subscribes to ``topics`` or, instead, ``pattern``."""

    at_ms: int
    consumer: str
    topics: tuple[str, ...] | None
    pattern: str | None


@dataclass(frozen=True, slots=True)
class CoordinatorFailsOver:
    """``coordinator_failover``: leadership of the group's ``__consumer_offsets`` partition moves
    to the next broker."""

    at_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerUpgrades:
    """``upgrade``: the consumer is stopped and started again ``after_ms`` later with
    group.protocol=consumer (a rolling upgrade's step, KIP-848's online migration)."""

    at_ms: int
    consumer: str
    after_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerDowngrades:
    """``downgrade``: the consumer is stopped and started again ``after_ms`` later with
    group.protocol=classic (the way back)."""

    at_ms: int
    consumer: str
    after_ms: int


TopicsGrown = TopicCreated | PartitionsAdded
ProtocolSwitch = ConsumerUpgrades | ConsumerDowngrades
ScenarioEvent = (ConsumerJoins | ConsumerLeaves | ConsumerCrashes | ConsumerRestarts | ConsumerPauses | ConsumerStalls
                 | TopicCreated | PartitionsAdded | SubscriptionChanged | CoordinatorFailsOver | ConsumerUpgrades
                 | ConsumerDowngrades)
