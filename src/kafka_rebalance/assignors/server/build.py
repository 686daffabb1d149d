"""From dicts (``ServerMember``) or a group snapshot to a ``ServerGroup``, and back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from kafka_rebalance.assignors.server.group import ServerGroup
from kafka_rebalance.assignors.server.topic_ids import derived_topic_id, parse_topic_id, topic_id_keys
from kafka_rebalance.model import UNASSIGNED, ColumnarGroup, GroupSnapshot, InvalidInput, java_sort_key


@dataclass(frozen=True, slots=True)
class ServerMember:
    member_id: str
    subscribed_topics: tuple[str, ...]
    assigned: Mapping[str, tuple[int, ...]]  # current assignment: topic -> partitions
    instance_id: str | None = None
    rack: str | None = None


def resolve_topic_keys(names: Sequence[str], topic_ids: Mapping[str, str] | None) -> np.ndarray:
    ids = topic_ids or {}
    raw = [parse_topic_id(ids[n], f"topics.{n}.topic_id") if n in ids else derived_topic_id(n) for n in names]
    return topic_id_keys(raw)


def build_server_group(
    topics: Mapping[str, int],
    members: Sequence[ServerMember],
    topic_ids: Mapping[str, str] | None = None,
) -> ServerGroup:
    for name, count in topics.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidInput(f"topics.{name}", f"expected a partition count, got {count!r}")
    names = sorted(topics, key=java_sort_key)
    index = {name: i for i, name in enumerate(names)}
    counts = np.array([topics[n] for n in names], dtype=np.int64)
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    seen: set[str] = set()
    for member in members:
        if member.member_id in seen:
            raise InvalidInput("members", f"duplicate member_id {member.member_id!r}")
        seen.add(member.member_id)

    member_class, class_lists = subscription_classes([m.subscribed_topics for m in members], index)
    # Current assignment, flattened: (member, topic, partition) for known topics.
    runs = [(i, index[t], parts) for i, m in enumerate(members) for t, parts in m.assigned.items() if t in index]
    lengths = np.fromiter((len(r[2]) for r in runs), dtype=np.int64, count=len(runs))
    partition = np.fromiter(chain.from_iterable(r[2] for r in runs), dtype=np.int64, count=int(lengths.sum()))
    topic = np.repeat(np.fromiter((r[1] for r in runs), dtype=np.int64, count=len(runs)), lengths)
    holder = np.repeat(np.fromiter((r[0] for r in runs), dtype=np.int64, count=len(runs)), lengths)
    exists = (partition >= 0) & (partition < counts[topic]) if len(topic) else np.zeros(0, dtype=bool)
    owner = owner_from_claims(offsets[topic[exists]] + partition[exists], holder[exists], int(offsets[-1]))
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


def subscription_classes(topic_lists: Sequence[Sequence[str]], index: Mapping[str, int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each member's subscription class, and each class's topic indices (ascending). Topics
    missing from ``index`` are dropped; equal sets share a class whatever their order."""
    class_of_set: dict[bytes, int] = {}
    class_lists: list[np.ndarray] = []
    resolved: dict[tuple[str, ...], int] = {}
    member_class = np.empty(len(topic_lists), dtype=np.int64)
    for i, topics in enumerate(topic_lists):
        key = tuple(topics)
        c = resolved.get(key)
        if c is None:
            topic_set = np.array(sorted({index[t] for t in key if t in index}), dtype=np.int64)
            c = class_of_set.setdefault(topic_set.tobytes(), len(class_lists))
            if c == len(class_lists):
                class_lists.append(topic_set)
            resolved[key] = c
        member_class[i] = c
    return member_class, class_lists


def owner_from_claims(partitions: np.ndarray, holders: np.ndarray, total: int) -> np.ndarray:
    """Owner array from (partition, member) claims. A partition claimed twice (never so in a
    real group: members' assignments are the previous target) stays with its first claimant."""
    first = np.unique(partitions, return_index=True)[1]
    owner = np.full(total, UNASSIGNED, dtype=np.int64)
    owner[partitions[first]] = holders[first]
    return owner


def server_group_from_snapshot(snapshot: GroupSnapshot) -> tuple[ServerGroup, ColumnarGroup]:
    """The consumer group of a snapshot; also its ``ColumnarGroup`` (same member and partition
    numbering), whose bulk parser read the ``owned`` strings and whose writer prints the result."""
    columnar = ColumnarGroup.from_snapshot(snapshot)
    names = columnar.topic_names
    index = {name: i for i, name in enumerate(names)}
    member_class, class_lists = subscription_classes([m.topics for m in snapshot.members], index)
    ids = {n: topic_id for n in names if (topic_id := snapshot.topics[n].topic_id) is not None}
    group = ServerGroup.build(
        topic_names=names,
        partition_counts=columnar.partition_counts,
        topic_keys=resolve_topic_keys(names, ids),
        member_ids=columnar.member_ids,
        member_class=member_class,
        class_topic_lists=class_lists,
        current_owner=owner_from_claims(columnar.owned_partitions, columnar.owned_member, columnar.num_partitions),
        instance_ids=columnar.group_instance_ids,
    )
    return group, columnar


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


