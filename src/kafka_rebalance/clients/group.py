"""What every client adapter does at the group leader: members' subscriptions as the client
decoded them -> our columnar group -> our assignor -> per-member (topic, [partition]) lists.

Partition numbers come from cluster metadata and need not be 0..n-1 (a topic whose partitions
are {0, 2, 5}): each topic's numbers are sorted and indexed densely for the assignor, which
keeps their order, and mapped back on the way out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Protocol

import numpy as np

from kafka_rebalance.assignors import PartitionAssignor, get_assignor, previous_owners
from kafka_rebalance.assignors.load_aware import load_aware_member_data
from kafka_rebalance.assignors.userdata import decode_cooperative_user_data, decode_sticky_user_data
from kafka_rebalance.model import ColumnarGroup, InvalidInput, java_sort_key
from kafka_rebalance.protocol.wire import DEFAULT_GENERATION, Subscription

TopicNumbers = list[tuple[str, list[int]]]


class ClusterMetadata(Protocol):
    """What a leader reads of its client's cluster metadata (kafka-python's ``ClusterMetadata``,
    aiokafka's): the partition numbers of a topic, None while the topic is unknown."""

    def partitions_for_topic(self, topic: str) -> Collection[int] | None: ...


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
    generation from its user data; load-aware takes owned partitions when there are any
    (COOPERATIVE), else its sticky user data (EAGER); the others take the subscription as sent."""
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
    elif strategy == "load-aware" and not owned:
        # An EAGER load-aware member revoked everything: its last assignment is in its user data.
        names, generation = load_aware_member_data(sub.user_data)
        owned = _pairs(names)
    elif strategy in ("cooperative-sticky", "load-aware") and sub.version < 2:
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

    @cached_property
    def number_of(self) -> np.ndarray:
        """Partition number of every global partition."""
        return np.concatenate(self.numbers) if self.numbers else np.zeros(0, dtype=np.int64)

    def loads_array(self, loads: Mapping[tuple[str, int], float]) -> np.ndarray:
        """(topic, partition number) -> load, as one float per global partition; partitions
        without one count at the mean of the given ones (as a snapshot's missing topics do)."""
        g = self.group
        out = np.full(g.num_partitions, np.nan)
        index = {name: t for t, name in enumerate(g.topic_names)}
        for (topic, number), value in loads.items():
            t = index.get(topic)
            if t is None:
                continue
            numbers = self.numbers[t]
            i = int(np.searchsorted(numbers, number))
            if i < len(numbers) and numbers[i] == number:
                out[int(g.topic_offsets[t]) + i] = value
        known = ~np.isnan(out)
        out[~known] = float(out[known].mean()) if known.any() else 1.0
        return out

    def per_member(self, owner: np.ndarray) -> list[TopicNumbers]:
        """Owner array -> for every member, [(topic, [numbers])]: topics in Java order (the
        group's), numbers ascending. One sort and one ``tolist`` for the whole group."""
        g = self.group
        if len(owner) <= SMALL_GROUP_PARTITIONS:
            return self._per_member_small(owner.tolist())
        out: list[TopicNumbers] = [[] for _ in range(g.num_members)]
        assigned = np.flatnonzero(owner >= 0)
        if len(assigned) == 0:
            return out
        members = owner[assigned]
        order = np.argsort(members, kind="stable")  # stable: partitions stay ascending
        partitions, members = assigned[order], members[order]
        topics = g.partition_topic[partitions]
        cut = np.flatnonzero((members[1:] != members[:-1]) | (topics[1:] != topics[:-1])) + 1
        starts = np.concatenate(([0], cut)).tolist()
        ends = [*starts[1:], len(partitions)]
        numbers = self.number_of[partitions].tolist()
        run_member = members[starts].tolist()
        run_topic = topics[starts].tolist()
        names = g.topic_names
        for m, t, a, b in zip(run_member, run_topic, starts, ends, strict=True):
            out[m].append((names[t], numbers[a:b]))
        return out

    def _per_member_small(self, owner: list[int]) -> list[TopicNumbers]:
        """``per_member`` on Python lists (the same lists, in the same order)."""
        out: list[TopicNumbers] = [[] for _ in range(self.group.num_members)]
        start = 0
        for name, numbers in zip(self.group.topic_names, self.numbers, strict=True):
            end = start + len(numbers)
            current: dict[int, list[int]] = {}
            for m, number in zip(owner[start:end], numbers.tolist(), strict=True):
                if m >= 0:
                    held = current.get(m)
                    if held is None:
                        held = current[m] = []
                        out[m].append((name, held))
                    held.append(number)
            start = end
        return out


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` by a sort (numpy 2's hash-based unique is several times slower here)."""
    values = np.sort(values)
    if len(values) > 1 and not (values[1:] != values[:-1]).all():
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


# Up to this many partitions, the leader's conversions run on Python lists: numpy's per-call
# cost would be most of a small group's rebalance.
SMALL_GROUP_PARTITIONS = 512


def leader_group(partitions_for_topic: Mapping[str, Collection[int] | None], members: Sequence[MemberInfo]) -> LeaderGroup:
    """Build the group from cluster metadata (topic -> partition numbers, None when unknown) and
    the members. Topics without metadata and partitions that no longer exist are left out, as
    Kafka's assignors leave them out."""
    if sum(len(ids) for ids in partitions_for_topic.values() if ids is not None) <= SMALL_GROUP_PARTITIONS:
        return _leader_group_small({t: sorted(set(ids)) for t, ids in partitions_for_topic.items() if ids is not None}, members)
    known = {t: _sorted_unique(np.fromiter(ids, dtype=np.int64)) for t, ids in partitions_for_topic.items() if ids is not None}
    topic_names = tuple(sorted(known, key=java_sort_key))
    index = {t: i for i, t in enumerate(topic_names)}
    numbers = tuple(known[t] for t in topic_names)
    counts = np.array([len(n) for n in numbers], dtype=np.int64)
    offsets = np.zeros(len(topic_names) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])

    # Subscriptions: members mostly share one topic list; resolve each distinct list once.
    resolved: dict[tuple[str, ...], list[int]] = {}
    sub_flat: list[int] = []
    sub_lengths: list[int] = []
    # Owned: one flat column of numbers plus (member, topic) per chunk, expanded by numpy.
    owned_number: list[int] = []
    chunk_member: list[int] = []
    chunk_topic: list[int] = []
    chunk_length: list[int] = []
    for i, m in enumerate(members):
        topics = resolved.get(m.topics)
        if topics is None:
            topics = resolved[m.topics] = sorted({index[t] for t in m.topics if t in index})
        sub_flat.extend(topics)
        sub_lengths.append(len(topics))
        for topic, ids in m.owned:
            t = index.get(topic)
            if t is not None and ids:
                owned_number.extend(ids)
                chunk_member.append(i)
                chunk_topic.append(t)
                chunk_length.append(len(ids))
    sub_indptr = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(sub_lengths, out=sub_indptr[1:])

    lengths = np.array(chunk_length, dtype=np.int64)
    member_col = np.repeat(np.array(chunk_member, dtype=np.int64), lengths)
    topic_col = np.repeat(np.array(chunk_topic, dtype=np.int64), lengths)
    number_col = np.fromiter(owned_number, dtype=np.int64, count=len(owned_number))
    local = number_col.copy()
    exists = (number_col >= 0) & (number_col < counts[topic_col]) if len(number_col) else np.zeros(0, dtype=bool)
    for t, n in enumerate(numbers):
        if len(n) and n[-1] != len(n) - 1:  # sparse numbers: look each up
            rows = np.flatnonzero(topic_col == t)
            pos = np.minimum(np.searchsorted(n, number_col[rows]), len(n) - 1)
            local[rows] = pos
            exists[rows] = n[pos] == number_col[rows]
    key = _sorted_unique(member_col[exists] * max(total, 1) + offsets[topic_col[exists]] + local[exists])
    owned_members, owned = key // max(total, 1), key % max(total, 1)
    owned_indptr = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owned_members, minlength=len(members)), out=owned_indptr[1:])

    group = ColumnarGroup.from_arrays(
        topic_names,
        counts,
        [m.member_id for m in members],
        sub_indptr,
        np.array(sub_flat, dtype=np.int32),
        owned_indptr,
        owned,
        [m.generation for m in members],
        [m.group_instance_id for m in members],
    )
    if any(m.rack is not None for m in members):
        group = replace(group, member_racks=tuple(m.rack for m in members))
    return LeaderGroup(group, numbers)


def _leader_group_small(known: dict[str, list[int]], members: Sequence[MemberInfo]) -> LeaderGroup:
    """``leader_group`` on Python lists, for few partitions: the same group."""
    topic_names = tuple(sorted(known, key=java_sort_key))
    index = {t: i for i, t in enumerate(topic_names)}
    counts = [len(known[t]) for t in topic_names]
    offsets = [0]
    for n in counts:
        offsets.append(offsets[-1] + n)
    total = max(offsets[-1], 1)
    # Local index of each partition number; None where the numbers are already 0..n-1.
    local_of = [None if not ns or ns[-1] == len(ns) - 1 else {n: i for i, n in enumerate(ns)} for ns in (known[t] for t in topic_names)]
    resolved: dict[tuple[str, ...], list[int]] = {}
    sub_flat: list[int] = []
    sub_indptr = [0]
    keys: set[int] = set()
    for i, m in enumerate(members):
        topics = resolved.get(m.topics)
        if topics is None:
            topics = resolved[m.topics] = sorted({index[t] for t in m.topics if t in index})
        sub_flat.extend(topics)
        sub_indptr.append(len(sub_flat))
        for topic, ids in m.owned:
            t = index.get(topic)
            if t is None:
                continue
            base, lookup, n = i * total + offsets[t], local_of[t], counts[t]
            if lookup is None:
                keys.update(base + p for p in ids if 0 <= p < n)
            else:
                keys.update(base + lookup[p] for p in ids if p in lookup)
    owned = sorted(keys)
    owned_indptr = [0] * (len(members) + 1)
    for key in owned:
        owned_indptr[key // total + 1] += 1
    for i in range(len(members)):
        owned_indptr[i + 1] += owned_indptr[i]
    # Built directly, not through ``from_arrays``: its checks (Java order, counts >= 0) hold by
    # construction here, and they cost a fifth of a small group's rebalance.
    group = ColumnarGroup(
        topic_names=topic_names,
        partition_counts=np.array(counts, dtype=np.int64),
        member_ids=tuple(m.member_id for m in members),
        subscription_indptr=np.array(sub_indptr, dtype=np.int64),
        subscription_topics=np.array(sub_flat, dtype=np.int32),
        owned_indptr=np.array(owned_indptr, dtype=np.int64),
        owned_partitions=np.array([key % total for key in owned], dtype=np.int64),
        generations=np.array([m.generation for m in members], dtype=np.int64),
        group_instance_ids=tuple(m.group_instance_id for m in members),
        member_racks=tuple(m.rack for m in members),
        partition_racks=(None,) * len(topic_names),
    )
    return LeaderGroup(group, tuple(np.array(known[t], dtype=np.int64) for t in topic_names))


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
    leader: LeaderGroup
    owner: np.ndarray

    @cached_property
    def movements(self) -> PartitionMovements:
        """Computed when asked for (tests and diagnostics), not on every rebalance."""
        return _movements(self.leader, self.owner)


def assign_members(
    strategy: str | PartitionAssignor,
    partitions_for_topic: Mapping[str, Collection[int] | None],
    members: Sequence[MemberInfo],
    loads: Mapping[tuple[str, int], float] | None = None,
) -> LeaderResult:
    """Run our assignor for ``strategy`` (a name, or an assignor already configured) over the
    members; every member gets an entry. ``loads`` (topic, partition number) -> load, for
    load-aware assignment; partitions it leaves out count at the mean of those it gives."""
    leader = leader_group(partitions_for_topic, members)
    if loads:
        leader = replace(leader, group=replace(leader.group, partition_loads=leader.loads_array(loads)))
    assignor = strategy if isinstance(strategy, PartitionAssignor) else get_assignor(strategy)
    owner = assignor.assign_columnar(leader.group)
    per_member = leader.per_member(owner)
    assignments = {m.member_id: per_member[i] for i, m in enumerate(members)}
    return LeaderResult(assignments, leader, owner)


def _movements(leader: LeaderGroup, owner: np.ndarray) -> PartitionMovements:
    group = leader.group
    prev = previous_owners(group)
    moved = np.flatnonzero((prev >= 0) & (owner >= 0) & (prev != owner))
    topics = group.partition_topic[moved]
    ids = group.member_ids
    return PartitionMovements(
        tuple(
            (group.topic_names[t], n, ids[prev[q]], ids[owner[q]])
            for q, t, n in zip(moved.tolist(), topics.tolist(), leader.number_of[moved].tolist(), strict=True)
        )
    )
