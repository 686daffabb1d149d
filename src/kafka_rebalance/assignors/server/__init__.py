"""Kafka 4.x's server-side assignors (KIP-848 consumer groups): ``uniform`` and ``range``.

The broker computes a consumer group's target assignment from every member's subscription and
current assignment. ``server_assign`` is the dict API; ``server_assign_columnar`` works on a
``ServerGroup`` (arrays) and is what the benchmarks time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from kafka_rebalance.assignors.server.group import ServerGroup
from kafka_rebalance.assignors.server.range import range_assign
from kafka_rebalance.assignors.server.topic_ids import (
    derived_topic_id,
    format_topic_id,
    parse_topic_id,
    topic_id_keys,
)
from kafka_rebalance.assignors.server.uniform import uniform_assign
from kafka_rebalance.model import UNASSIGNED, InvalidInput, java_sort_key

SERVER_ASSIGNORS: tuple[str, ...] = ("uniform", "range")
DEFAULT_SERVER_ASSIGNOR = "uniform"

_ASSIGNORS: dict[str, Callable[[ServerGroup], np.ndarray]] = {"uniform": uniform_assign, "range": range_assign}


@dataclass(frozen=True, slots=True)
class ServerMember:
    member_id: str
    subscribed_topics: tuple[str, ...]
    assigned: Mapping[str, tuple[int, ...]]  # current assignment: topic -> partitions
    instance_id: str | None = None
    rack: str | None = None


def check_server_assignor(name: str) -> str:
    if name not in _ASSIGNORS:
        raise InvalidInput("strategy", f"unknown server-side assignor {name!r} (known: {', '.join(SERVER_ASSIGNORS)})")
    return name


def server_assign_columnar(assignor: str, group: ServerGroup) -> np.ndarray:
    """The target owner (member index, or -1) of every global partition of ``group``."""
    return _ASSIGNORS[check_server_assignor(assignor)](group)


def server_assign(
    assignor: str,
    topics: Mapping[str, int],
    members: Sequence[ServerMember],
    topic_ids: Mapping[str, str] | None = None,
    partition_racks: Mapping[str, Sequence[Sequence[str]]] | None = None,
) -> dict[str, dict[str, tuple[int, ...]]]:
    """The target assignment: member id -> topic -> partitions (ascending), every member present.

    ``topics`` maps a topic name to its partition count; ``topic_ids`` optionally gives Kafka's
    base64 Uuid of a topic (else one is derived from the name, see ``topic_ids``). Subscribed
    topics missing from ``topics`` are ignored, as the coordinator resolves subscriptions
    against the metadata image; so are assigned partitions that no longer exist.
    ``partition_racks`` is accepted for the coordinator's sake but Kafka's server-side
    assignors do not use racks, so neither do these. Raises ``InvalidInput`` on bad input.
    """
    check_server_assignor(assignor)
    del partition_racks  # see docstring: Kafka's uniform and range builders ignore racks
    group = build_server_group(topics, members, topic_ids)
    owner = server_assign_columnar(assignor, group)
    return target_assignment(group, owner)


def resolve_topic_keys(names: Sequence[str], topic_ids: Mapping[str, str] | None) -> np.ndarray:
    ids = topic_ids or {}
    raw = [parse_topic_id(ids[n], f"topics.{n}.topic_id") if n in ids else derived_topic_id(n) for n in names]
    return topic_id_keys(raw)


def build_server_group(
    topics: Mapping[str, int],
    members: Sequence[ServerMember],
    topic_ids: Mapping[str, str] | None = None,
) -> ServerGroup:
    names = sorted(topics, key=java_sort_key)
    index = {name: i for i, name in enumerate(names)}
    counts = np.array([topics[n] for n in names], dtype=np.int64)
    if (counts < 0).any():
        raise InvalidInput("topics", "partition counts must not be negative")
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    seen: set[str] = set()
    for member in members:
        if member.member_id in seen:
            raise InvalidInput("members", f"duplicate member_id {member.member_id!r}")
        seen.add(member.member_id)

    # Subscription classes: resolve each distinct topic list once, then merge equal sets.
    class_of_set: dict[bytes, int] = {}
    class_lists: list[np.ndarray] = []
    resolved: dict[tuple[str, ...], int] = {}
    member_class = np.empty(len(members), dtype=np.int64)
    for i, member in enumerate(members):
        c = resolved.get(member.subscribed_topics)
        if c is None:
            topic_set = np.array(sorted({index[t] for t in member.subscribed_topics if t in index}), dtype=np.int64)
            c = class_of_set.setdefault(topic_set.tobytes(), len(class_lists))
            if c == len(class_lists):
                class_lists.append(topic_set)
            resolved[member.subscribed_topics] = c
        member_class[i] = c

    # Current assignment, flattened: (member, topic, partition) for known topics.
    runs = [(i, index[t], parts) for i, m in enumerate(members) for t, parts in m.assigned.items() if t in index]
    lengths = np.fromiter((len(r[2]) for r in runs), dtype=np.int64, count=len(runs))
    partition = np.fromiter(chain.from_iterable(r[2] for r in runs), dtype=np.int64, count=int(lengths.sum()))
    topic = np.repeat(np.fromiter((r[1] for r in runs), dtype=np.int64, count=len(runs)), lengths)
    holder = np.repeat(np.fromiter((r[0] for r in runs), dtype=np.int64, count=len(runs)), lengths)
    exists = (partition >= 0) & (partition < counts[topic]) if len(topic) else np.zeros(0, dtype=bool)
    global_index = offsets[topic[exists]] + partition[exists]
    holder = holder[exists]
    # A partition claimed twice (never in a real group) stays with its first claimant.
    first = np.unique(global_index, return_index=True)[1]
    owner = np.full(int(offsets[-1]), UNASSIGNED, dtype=np.int64)
    owner[global_index[first]] = holder[first]
    return ServerGroup.build(
        topic_names=names,
        partition_counts=counts,
        topic_keys=resolve_topic_keys(names, topic_ids),
        member_ids=[m.member_id for m in members],
        member_class=member_class,
        class_topic_lists=class_lists,
        current_owner=owner,
        instance_ids=[m.instance_id for m in members],
    )


def target_assignment(group: ServerGroup, owner: np.ndarray) -> dict[str, dict[str, tuple[int, ...]]]:
    """Owner array -> member id -> topic -> ascending partitions (topics in Java order)."""
    assigned = np.flatnonzero(owner >= 0)
    assigned = assigned[np.argsort(owner[assigned], kind="stable")]
    member = owner[assigned]
    topic = group.partition_topic[assigned]
    number = (assigned - group.topic_offsets[topic]).tolist()
    result: dict[str, dict[str, tuple[int, ...]]] = {mid: {} for mid in group.member_ids}
    if not len(assigned):
        return result
    breaks = np.flatnonzero((member[1:] != member[:-1]) | (topic[1:] != topic[:-1])) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = np.concatenate((breaks, [len(assigned)])).tolist()
    names, ids = group.topic_names, group.member_ids
    run_member = member[starts].tolist()
    run_topic = topic[starts].tolist()
    for m, t, s, e in zip(run_member, run_topic, starts, ends, strict=True):
        result[ids[m]][names[t]] = tuple(number[s:e])
    return result


__all__ = [
    "DEFAULT_SERVER_ASSIGNOR",
    "SERVER_ASSIGNORS",
    "ServerGroup",
    "ServerMember",
    "build_server_group",
    "check_server_assignor",
    "derived_topic_id",
    "format_topic_id",
    "server_assign",
    "server_assign_columnar",
    "target_assignment",
]
