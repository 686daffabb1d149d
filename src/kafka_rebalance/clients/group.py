"""What every client adapter does at the group leader: members' subscriptions as the client
decoded them -> our columnar group -> our assignor -> per-member (topic, [partition]) lists.

Partition numbers come from cluster metadata and need not be 0..n-1 (a topic whose partitions
are {0, 2, 5}): each topic's numbers are sorted and indexed densely for the assignor, which
keeps their order, and mapped back on the way out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from kafka_rebalance.assignors import get_assignor, previous_owners
from kafka_rebalance.assignors.userdata import decode_cooperative_user_data, decode_sticky_user_data
from kafka_rebalance.model import ColumnarGroup, InvalidInput, java_sort_key
from kafka_rebalance.protocol.wire import DEFAULT_GENERATION, Subscription

TopicNumbers = list[tuple[str, list[int]]]


@dataclass(frozen=True, slots=True)
class MemberInfo:
    """One member as the leader sees it, after the strategy's rules for previous ownership."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation: int = DEFAULT_GENERATION
    group_instance_id: str | None = None
    rack: str | None = None


def member_info(strategy: str, member_id: str, sub: Subscription, group_instance_id: str | None = None) -> MemberInfo:
    """Previous ownership by Kafka's ``memberData`` for the strategy: eager sticky reads its user
    data (Java's or kafka-python's form; unreadable counts as nothing owned, as in Kafka);
    cooperative-sticky takes the subscription's owned partitions and generation (v2+), else the
    generation from its user data; the others take the subscription as sent."""
    owned = sub.owned_partitions
    generation = sub.generation_id
    if strategy == "sticky":
        owned, generation = (), DEFAULT_GENERATION
        if sub.user_data:
            try:
                names, generation = decode_sticky_user_data(sub.user_data)
            except InvalidInput:
                names, generation = [], DEFAULT_GENERATION
            owned = _pairs(names)
    elif strategy == "cooperative-sticky" and sub.version < 2:
        from_user_data = decode_cooperative_user_data(sub.user_data)
        generation = DEFAULT_GENERATION if from_user_data is None else from_user_data
    return MemberInfo(member_id, tuple(sub.topics), tuple(owned), generation, group_instance_id, sub.rack_id)


def _pairs(names: Iterable[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    by_topic: dict[str, list[int]] = {}
    for name in names:
        topic, _, number = name.rpartition("-")
        by_topic.setdefault(topic, []).append(int(number))
    return tuple((t, tuple(ns)) for t, ns in by_topic.items())


@dataclass(frozen=True)
class LeaderGroup:
    """The columnar group plus the partition numbers behind its dense indices."""

    group: ColumnarGroup
    numbers: tuple[np.ndarray, ...]  # per topic (in group order): sorted partition numbers

    def pairs(self, partitions: np.ndarray) -> TopicNumbers:
        """Global indices -> [(topic, [numbers])], topics in name order, numbers ascending."""
        g = self.group
        partitions = np.sort(np.asarray(partitions, dtype=np.int64))
        topics = g.partition_topic[partitions]
        out: TopicNumbers = []
        for t in np.unique(topics).tolist():
            local = partitions[topics == t] - g.topic_offsets[t]
            out.append((g.topic_names[t], self.numbers[t][local].tolist()))
        out.sort(key=lambda pair: java_sort_key(pair[0]))
        return out


def leader_group(partitions_for_topic: Mapping[str, Sequence[int] | None], members: Sequence[MemberInfo]) -> LeaderGroup:
    """Build the group from cluster metadata (topic -> partition numbers, None when unknown) and
    the members. Topics without metadata and partitions that no longer exist are left out, as
    Kafka's assignors leave them out."""
    known = {t: np.unique(np.asarray(list(ids), dtype=np.int64)) for t, ids in partitions_for_topic.items() if ids is not None}
    topic_names = tuple(sorted(known, key=java_sort_key))
    index = {t: i for i, t in enumerate(topic_names)}
    numbers = tuple(known[t] for t in topic_names)
    counts = np.array([len(n) for n in numbers], dtype=np.int64)
    offsets = np.zeros(len(topic_names) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    dense = [bool(len(n) == 0 or (n[0] == 0 and n[-1] == len(n) - 1)) for n in numbers]

    sub_lists, owned_lists = [], []
    for m in members:
        sub_lists.append(np.array(sorted({index[t] for t in m.topics if t in index}), dtype=np.int32))
        parts = []
        for topic, ids in m.owned:
            t = index.get(topic)
            if t is None or not len(ids):
                continue
            ids_array = np.asarray(ids, dtype=np.int64)
            if dense[t]:
                ok = (ids_array >= 0) & (ids_array < counts[t])
                parts.append(offsets[t] + ids_array[ok])
            else:
                pos = np.searchsorted(numbers[t], ids_array)
                pos[pos >= len(numbers[t])] = 0
                ok = numbers[t][pos] == ids_array if len(numbers[t]) else np.zeros(len(ids_array), dtype=bool)
                parts.append(offsets[t] + pos[ok])
        owned_lists.append(np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64))

    def csr(arrays: list[np.ndarray], dtype) -> tuple[np.ndarray, np.ndarray]:
        indptr = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in arrays], out=indptr[1:])
        flat = np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype=dtype)
        return indptr, flat

    sub_indptr, sub_topics = csr(sub_lists, np.int32)
    owned_indptr, owned = csr(owned_lists, np.int64)
    group = ColumnarGroup.from_arrays(
        topic_names,
        counts,
        [m.member_id for m in members],
        sub_indptr,
        sub_topics,
        owned_indptr,
        owned,
        [m.generation for m in members],
        [m.group_instance_id for m in members],
    )
    if any(m.rack is not None for m in members):
        group = replace(group, member_racks=tuple(m.rack for m in members))
    return LeaderGroup(group, numbers)


@dataclass(frozen=True)
class PartitionMovements:
    """Partitions that changed owner in one assignment: (topic, partition, from, to)."""

    moves: tuple[tuple[str, int, str, str], ...]

    def are_sticky(self) -> bool:
        """Kafka's PartitionMovements.isSticky: within a topic, no chain of moves leads back to
        where it started (two members swapping partitions of one topic keep neither in place
        for nothing)."""
        edges: dict[str, dict[str, set[str]]] = {}
        for topic, _, src, dst in self.moves:
            edges.setdefault(topic, {}).setdefault(src, set()).add(dst)
        return not any(_has_cycle(graph) for graph in edges.values())


def _has_cycle(graph: dict[str, set[str]]) -> bool:
    state: dict[str, int] = {}  # 1 on the path, 2 done
    for start in graph:
        if state.get(start):
            continue
        stack = [(start, iter(graph.get(start, ())))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            nxt = next(children, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return True
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(graph.get(nxt, ()))))
    return False


@dataclass(frozen=True)
class LeaderResult:
    assignments: dict[str, TopicNumbers]
    movements: PartitionMovements


def assign_members(strategy: str, partitions_for_topic: Mapping[str, Sequence[int] | None], members: Sequence[MemberInfo]) -> LeaderResult:
    """Run our assignor for ``strategy`` over the members; every member gets an entry."""
    leader = leader_group(partitions_for_topic, members)
    group = leader.group
    owner = get_assignor(strategy).assign_columnar(group)
    assigned = np.flatnonzero(owner >= 0)
    order = np.argsort(owner[assigned], kind="stable")
    bounds = np.searchsorted(owner[assigned][order], np.arange(group.num_members + 1))
    by_member = assigned[order]
    assignments = {m.member_id: leader.pairs(by_member[bounds[i] : bounds[i + 1]]) for i, m in enumerate(members)}
    return LeaderResult(assignments, _movements(leader, owner))


def _movements(leader: LeaderGroup, owner: np.ndarray) -> PartitionMovements:
    group = leader.group
    prev = previous_owners(group)
    moved = np.flatnonzero((prev >= 0) & (owner >= 0) & (prev != owner))
    topics = group.partition_topic[moved]
    local = moved - group.topic_offsets[topics]
    ids = group.member_ids
    return PartitionMovements(
        tuple(
            (group.topic_names[t], int(leader.numbers[t][p]), ids[prev[q]], ids[owner[q]])
            for q, t, p in zip(moved.tolist(), topics.tolist(), local.tolist(), strict=True)
        )
    )
