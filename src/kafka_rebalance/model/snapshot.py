"""The group snapshot of docs/assignment-json.md, validated, and its assignment output.

Owned partitions stay strings here; ``ColumnarGroup`` parses them in bulk, because a snapshot
may carry a million of them and per-partition objects would dominate the cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np

from kafka_rebalance.model.errors import InvalidInput

DEFAULT_GENERATION = -1
# partition.assignment.strategy of a Java consumer left at its default (kafka-facts.md).
DEFAULT_CONSUMER_STRATEGIES: tuple[str, ...] = ("range", "cooperative-sticky")
# group.protocol: "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848, server-side assignors).
GROUP_PROTOCOLS: tuple[str, ...] = ("classic", "consumer")


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    partitions: int
    # One tuple of replica racks per partition, or None when the topic carries no rack data.
    racks: tuple[tuple[str, ...], ...] | None = None
    # Kafka's topic Uuid as base64 (consumer groups); checked where it is used.
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """One member's JoinGroup metadata (Kafka's Subscription v3 plus the member's strategy list)."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[str, ...] = ()
    generation: int = DEFAULT_GENERATION
    rack: str | None = None
    group_instance_id: str | None = None
    strategies: tuple[str, ...] = ()
    user_data: bytes | None = None
    # Consumer groups: the assignor the member asks for (ConsumerGroupHeartbeat ServerAssignor).
    server_assignor: str | None = None

    @property
    def effective_strategies(self) -> tuple[str, ...]:
        return self.strategies or DEFAULT_CONSUMER_STRATEGIES


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    topics: Mapping[str, TopicMetadata]
    members: tuple[MemberSubscription, ...]
    strategy: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    group_protocol: str = "classic"
    # Optional per-partition loads (any non-negative unit) per topic, as float64 arrays whose
    # length is the topic's partition count; only load-aware assignment reads them.
    partition_loads: Mapping[str, np.ndarray] = field(default_factory=dict)
    # Options of the chosen strategy (load-aware: max_count_skew, min_gain, rebalance_protocol).
    strategy_options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> GroupSnapshot:
        if not isinstance(data, Mapping):
            raise InvalidInput("snapshot", "expected a JSON object")
        strategy = data.get("strategy")
        if strategy is not None and (not isinstance(strategy, str) or not strategy):
            raise InvalidInput("strategy", "expected a non-empty string")
        group_protocol = data.get("group_protocol", "classic")
        if group_protocol is None:
            group_protocol = "classic"
        if group_protocol not in GROUP_PROTOCOLS:
            raise InvalidInput("group_protocol", f"expected one of {', '.join(GROUP_PROTOCOLS)}, got {group_protocol!r}")
        topics = _parse_topics(data.get("topics"))
        members = _parse_members(data.get("members"))
        loads = _parse_partition_loads(data.get("partition_loads"), topics)
        options = data.get("strategy_options")
        if options is None:
            options = {}
        if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
            raise InvalidInput("strategy_options", "expected an object of option names to values")
        return cls(topics=topics, members=members, strategy=strategy, group_protocol=group_protocol,
                   partition_loads=loads, strategy_options=dict(options))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.group_protocol != "classic":
            out["group_protocol"] = self.group_protocol
        if self.strategy is not None:
            out["strategy"] = self.strategy
        out["topics"] = {t.name: _topic_to_dict(t) for t in self.topics.values()}
        out["members"] = [_member_to_dict(m) for m in self.members]
        if self.partition_loads:
            out["partition_loads"] = {t: loads.tolist() for t, loads in self.partition_loads.items()}
        if self.strategy_options:
            out["strategy_options"] = dict(self.strategy_options)
        return out


def _topic_to_dict(t: TopicMetadata) -> int | dict[str, Any]:
    if t.racks is None and t.topic_id is None:
        return t.partitions
    d: dict[str, Any] = {"partitions": t.partitions}
    if t.racks is not None:
        d["racks"] = [list(r) for r in t.racks]
    if t.topic_id is not None:
        d["topic_id"] = t.topic_id
    return d


def _member_to_dict(m: MemberSubscription) -> dict[str, Any]:
    d: dict[str, Any] = {"member_id": m.member_id, "topics": list(m.topics)}
    if m.owned:
        d["owned"] = list(m.owned)
    if m.generation != DEFAULT_GENERATION:
        d["generation"] = m.generation
    if m.rack is not None:
        d["rack"] = m.rack
    if m.group_instance_id is not None:
        d["group_instance_id"] = m.group_instance_id
    if m.strategies:
        d["strategies"] = list(m.strategies)
    if m.server_assignor is not None:
        d["server_assignor"] = m.server_assignor
    return d


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise InvalidInput(where, "expected a list of strings")
    # set(map(type, ...)) runs in C: a million owned partitions are checked in milliseconds; the
    # generator (which also accepts str subclasses) only runs when that quick test fails.
    if not set(map(type, value)) <= {str} and not all(isinstance(item, str) for item in value):
        raise InvalidInput(where, "expected a list of strings")
    return tuple(value)


def _parse_topics(raw: Any) -> dict[str, TopicMetadata]:
    if not isinstance(raw, Mapping):
        raise InvalidInput("topics", "expected an object mapping topic name to partition count")
    topics: dict[str, TopicMetadata] = {}
    for name, spec in raw.items():
        where = f"topics.{name}"
        if not isinstance(name, str) or not name:
            raise InvalidInput("topics", "topic names must be non-empty strings")
        racks = None
        topic_id = None
        if isinstance(spec, Mapping):
            count = spec.get("partitions")
            topic_id = spec.get("topic_id")
            if topic_id is not None and (not isinstance(topic_id, str) or not topic_id):
                raise InvalidInput(f"{where}.topic_id", "expected a base64 topic id string or null")
            if "racks" in spec and spec["racks"] is not None:
                racks_raw = spec["racks"]
                if not isinstance(racks_raw, Sequence) or isinstance(racks_raw, str):
                    raise InvalidInput(f"{where}.racks", "expected one list of racks per partition")
                racks = tuple(_string_list(r, f"{where}.racks[{i}]") for i, r in enumerate(racks_raw))
            where = f"{where}.partitions"
        else:
            count = spec
        if not _is_int(count):
            raise InvalidInput(where, f"expected a partition count, got {count!r}")
        if count < 0:
            raise InvalidInput(where, f"partition count must not be negative, got {count}")
        if racks is not None and len(racks) != count:
            raise InvalidInput(f"topics.{name}.racks", f"has {len(racks)} entries for {count} partitions")
        topics[name] = TopicMetadata(name, count, racks, topic_id)
    return topics


def _parse_members(raw: Any) -> tuple[MemberSubscription, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise InvalidInput("members", "expected a list of members")
    members = []
    seen: set[str] = set()
    for i, m in enumerate(raw):
        where = f"members[{i}]"
        if not isinstance(m, Mapping):
            raise InvalidInput(where, "expected an object")
        member_id = m.get("member_id")
        if not isinstance(member_id, str) or not member_id:
            raise InvalidInput(f"{where}.member_id", "expected a non-empty string")
        if member_id in seen:
            raise InvalidInput(f"{where}.member_id", f"duplicate member_id {member_id!r}")
        seen.add(member_id)
        if "topics" not in m:
            raise InvalidInput(f"{where}.topics", "missing")
        topics = _string_list(m["topics"], f"{where}.topics")
        owned = _string_list(m.get("owned") or (), f"{where}.owned")
        generation = m.get("generation", DEFAULT_GENERATION)
        if generation is None:
            generation = DEFAULT_GENERATION
        if not _is_int(generation):
            raise InvalidInput(f"{where}.generation", f"expected an integer, got {generation!r}")
        rack = m.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise InvalidInput(f"{where}.rack", "expected a string or null")
        instance = m.get("group_instance_id")
        if instance is not None and (not isinstance(instance, str) or not instance):
            raise InvalidInput(f"{where}.group_instance_id", "expected a non-empty string or null")
        strategies = _string_list(m.get("strategies") or (), f"{where}.strategies")
        server_assignor = m.get("server_assignor")
        if server_assignor is not None and (not isinstance(server_assignor, str) or not server_assignor):
            raise InvalidInput(f"{where}.server_assignor", "expected a non-empty string or null")
        members.append(
            MemberSubscription(
                member_id=member_id,
                topics=topics,
                owned=owned,
                generation=generation,
                rack=rack,
                group_instance_id=instance,
                strategies=strategies,
                server_assignor=server_assignor,
            )
        )
    return tuple(members)


def _parse_partition_loads(raw: Any, topics: Mapping[str, TopicMetadata]) -> dict[str, np.ndarray]:
    """``{"topic": [load of partition 0, ...]}``: each list as long as the topic has partitions,
    every load a finite number >= 0. Checked as arrays (a topic may have a million partitions)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidInput("partition_loads", "expected an object mapping topic name to a list of loads")
    out: dict[str, np.ndarray] = {}
    for topic, values in raw.items():
        where = f"partition_loads.{topic}"
        if topic not in topics:
            raise InvalidInput(where, "no such topic in topics")
        if not isinstance(values, Sequence) or isinstance(values, str | bytes):
            raise InvalidInput(where, "expected a list of numbers, one per partition")
        # Only numbers: a bool or a numeric string would pass np.asarray's float conversion.
        if not set(map(type, values)) <= {int, float} and not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        ):
            raise InvalidInput(where, "expected a list of numbers, one per partition")
        try:
            loads = np.asarray(values, dtype=np.float64)
        except (OverflowError, ValueError, TypeError):
            raise InvalidInput(where, "expected a list of numbers, one per partition") from None
        expected = topics[topic].partitions
        if len(loads) != expected:
            raise InvalidInput(where, f"has {len(loads)} loads for {expected} partitions")
        if not np.isfinite(loads).all():
            raise InvalidInput(where, f"load of partition {int(np.flatnonzero(~np.isfinite(loads))[0])} is not a finite number")
        if (loads < 0).any():
            raise InvalidInput(where, f"load of partition {int(np.flatnonzero(loads < 0)[0])} is negative")
        out[topic] = loads
    return out
