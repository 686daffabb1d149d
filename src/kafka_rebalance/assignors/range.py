"""RangeAssignor: per topic, members in Kafka order, the first ``n % m`` get one extra partition.

Rack-aware (KIP-881) when members and partitions carry racks, following Kafka's
RangeAssignor: a rack-matching pass (co-partitioned topics, those with the same subscribers
and partition count, are matched together) and then plain ranges for what is left.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kafka_rebalance.assignors.base import ColumnarAssignor, empty_owner
from kafka_rebalance.model import ColumnarGroup


class RangeAssignor(ColumnarAssignor):
    name = "range"

    def assign_columnar(self, group: ColumnarGroup) -> np.ndarray:
        if not _may_be_rack_aware(group):
            return _plain_ranges(group)
        owner = empty_owner(group)
        states = [_TopicState(group, t) for t in range(group.num_topics) if len(group.subscribers(t)) and group.partition_counts[t]]
        if any(s.needs_rack_aware for s in states):
            _assign_with_rack_matching(states)
            for state in states:
                state.assign_ranges(lambda member, p: True)
            for state in states:
                owner[state.offset + np.arange(state.n)] = state.owner
            return owner
        return _plain_ranges(group)


def _may_be_rack_aware(group: ColumnarGroup) -> bool:
    """Rack-aware range needs a member with a rack and a topic with partition racks."""
    return any(r is not None for r in group.member_racks) and any(r is not None for r in group.partition_racks)


def _plain_ranges(group: ColumnarGroup) -> np.ndarray:
    """Every topic at once, without a loop over topics (a group may have a million of them):
    with ``k`` subscribers (Kafka order) and ``n`` partitions, ``per, extra = divmod(n, k)``, the
    first ``extra`` subscribers take ``per + 1`` consecutive partitions and the rest ``per``."""
    owner = empty_owner(group)
    indptr, members = group.topic_subscribers
    k = np.diff(indptr)[group.partition_topic]
    assigned = np.flatnonzero(k > 0)
    if len(assigned) == 0:
        return owner
    topic = group.partition_topic[assigned]
    k = k[assigned]
    p = assigned - group.topic_offsets[topic]
    per, extra = np.divmod(group.partition_counts[topic], k)
    long_part = extra * (per + 1)  # partitions held by the members with one extra
    in_long = p < long_part
    index = np.where(in_long, p // (per + 1), extra + (p - long_part) // np.maximum(per, 1))
    owner[assigned] = members[indptr[topic] + index]
    return owner


class _TopicState:
    """Kafka's RangeAssignor.TopicAssignmentState, for the rack-aware path."""

    def __init__(self, group: ColumnarGroup, topic: int):
        self.topic = topic
        self.offset = int(group.topic_offsets[topic])
        self.n = int(group.partition_counts[topic])
        self.members = group.subscribers(topic)
        self.member_list = self.members.tolist()
        racks = group.member_racks or (None,) * group.num_members
        self.member_rack = {m: racks[m] for m in self.member_list}
        self.owner = np.full(self.n, -1, dtype=np.int64)
        self.unassigned = list(range(self.n))
        self.assigned_count = dict.fromkeys(self.member_list, 0)
        self.per_member, self.remaining_extra = divmod(self.n, len(self.member_list))
        consumer_racks = {r for r in self.member_rack.values() if r is not None}
        topic_racks = group.partition_racks[topic] if group.partition_racks else None
        self.partition_racks: list[frozenset[str]] | None = None
        all_partition_racks: set[str] = set()
        if consumer_racks and topic_racks is not None:
            self.partition_racks = [frozenset(r) for r in topic_racks]
            for r in self.partition_racks:
                all_partition_racks |= r
        self.needs_rack_aware = bool(
            consumer_racks
            and self.partition_racks is not None
            and not consumer_racks.isdisjoint(all_partition_racks)
            and not all(r == all_partition_racks for r in self.partition_racks)
        )
        # Kafka groups co-partitioned topics by the size of this map: 0 when members carry no rack.
        self.rack_map_size = self.n if consumer_racks else 0

    def racks_match(self, member: int, p: int) -> bool:
        rack = self.member_rack[member]
        if rack is None:
            return True
        return self.partition_racks is not None and rack in self.partition_racks[p]

    def max_assignable(self, member: int) -> int:
        return max(0, self.per_member + (1 if self.remaining_extra > 0 else 0) - self.assigned_count[member])

    def assign(self, member: int, partitions: list[int]) -> None:
        for p in partitions:
            self.owner[p] = member
        self.assigned_count[member] += len(partitions)
        if self.assigned_count[member] > self.per_member:
            self.remaining_extra -= 1
        taken = set(partitions)
        self.unassigned = [p for p in self.unassigned if p not in taken]

    def assign_ranges(self, may_assign: Callable[[int, int], bool]) -> None:
        for member in self.member_list:
            if not self.unassigned:
                break
            limit = self.max_assignable(member)
            chosen = [p for p in self.unassigned if may_assign(member, p)][:limit]
            if chosen:
                self.assign(member, chosen)


def _assign_with_rack_matching(states: list[_TopicState]) -> None:
    by_members: dict[tuple[int, ...], list[_TopicState]] = {}
    for state in states:
        by_members.setdefault(tuple(state.member_list), []).append(state)
    for members, same_members in by_members.items():
        by_size: dict[int, list[_TopicState]] = {}
        for state in same_members:
            by_size.setdefault(state.rack_map_size, []).append(state)
        for size, co_partitioned in by_size.items():
            if len(co_partitioned) > 1:
                _assign_co_partitioned(list(members), size, co_partitioned)
            elif co_partitioned[0].needs_rack_aware:
                state = co_partitioned[0]
                state.assign_ranges(state.racks_match)


def _assign_co_partitioned(members: list[int], num_partitions: int, states: list[_TopicState]) -> None:
    remaining = list(members)
    for p in range(num_partitions):
        match = next(
            (m for m in remaining if all(s.racks_match(m, p) and s.max_assignable(m) > 0 for s in states)),
            None,
        )
        if match is None:
            continue
        for state in states:
            state.assign(match, [p])
        if all(s.max_assignable(match) <= 0 for s in states):
            remaining.remove(match)
            if not remaining:
                break
