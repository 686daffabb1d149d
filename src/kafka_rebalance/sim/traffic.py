"""Keyed produce traffic as closed-form log-end offsets (no event per record).

Record ``i`` of a produce entry is written at ``start_ms + i * 1000 / records_per_s`` with key
``"key-{i % keys}"`` and routed by murmur2 over the topic's partition count *at that time*
(partition increases re-route keys, as they do in Kafka). So the log-end offset of a partition
at time ``t`` is a count of record indices, computed from per-partition sorted key lists in
O(log keys), whatever the rate.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from kafka_rebalance.protocol.partitioner import partition_for_key

if TYPE_CHECKING:
    from kafka_rebalance.sim.scenario import ProduceSpec


@lru_cache(maxsize=256)
def keys_by_partition(keys: int, partitions: int) -> tuple[tuple[int, ...], ...]:
    """For each partition, the ascending key indices that murmur2 routes to it."""
    lists: list[list[int]] = [[] for _ in range(partitions)]
    for k in range(keys):
        lists[partition_for_key(f"key-{k}", partitions)].append(k)
    return tuple(tuple(x) for x in lists)


def _routed(n: int, keys: int, mine: tuple[int, ...]) -> int:
    """How many of record indices [0, n) carry a key in ``mine``."""
    if n <= 0:
        return 0
    full, rest = divmod(n, keys)
    return full * len(mine) + bisect_left(mine, rest)


class _Route(NamedTuple):
    """One produce entry's records routed to one partition while the topic has one partition
    count (an epoch of ``topic_epochs``: from ``from_ms`` until the next epoch)."""

    from_ms: int  # the epoch begins
    start: int
    cap: int | None  # records stop at the entry's end or the epoch's, whichever is first (None: never)
    rate: float
    keys: int
    mine: tuple[int, ...]  # key indices routed to the partition in this epoch
    before: int  # records of the entry produced before the epoch began
    routed_before: int  # how many of those ``mine`` routes to the partition


class Traffic:
    """Log-end offsets of every partition as a function of virtual time."""

    def __init__(self, produce: Sequence[ProduceSpec], topic_epochs: dict[str, list[tuple[int, int]]], end_ms: int):
        # topic_epochs[topic] = [(from_ms, partition_count), ...] ascending (creation, increases)
        self.topic_epochs = topic_epochs
        self.end_ms = end_ms
        self.by_topic: dict[str, list[tuple[int, int | None, float, int]]] = {}
        for spec in produce:
            epochs = topic_epochs.get(spec.topic)
            if not epochs:
                continue
            start = max(spec.start_ms, epochs[0][0])
            self.by_topic.setdefault(spec.topic, []).append((start, spec.end_ms, spec.records_per_s, spec.keys))
        self._plans: dict[str, list[_Route]] = {}

    @staticmethod
    def _count(start: int, stop: int | None, rate: float, t: int) -> int:
        """Records of one entry produced in [start, t)."""
        if stop is not None:
            t = min(t, stop)
        if t <= start:
            return 0
        return int((t - start) * rate // 1000)

    def leo(self, topic: str, partition: int, t: int) -> int:
        entries = self.by_topic.get(topic)
        if not entries:
            return 0
        epochs = self.topic_epochs[topic]
        total = 0
        for start, stop, rate, keys in entries:
            for i, (from_ms, count) in enumerate(epochs):
                if from_ms >= t:
                    break
                if partition >= count:
                    continue
                until = epochs[i + 1][0] if i + 1 < len(epochs) else t
                until = min(until, t)
                a = self._count(start, stop, rate, from_ms)
                b = self._count(start, stop, rate, until)
                if b > a:
                    mine = keys_by_partition(keys, count)[partition]
                    total += _routed(b, keys, mine) - _routed(a, keys, mine)
        return total

    def leo_of(self, partition_name: str, t: int) -> int:
        """The log-end offset of ``partition_name`` at ``t``: ``leo`` over routes planned once
        per partition, with ``_count`` and ``_routed`` inlined (the simulator asks this on every
        poll of every partition)."""
        routes = self._plans.get(partition_name)
        if routes is None:
            routes = self._plans[partition_name] = self._plan(partition_name)
        total = 0
        for from_ms, start, cap, rate, keys, mine, before, routed_before in routes:
            if from_ms >= t:
                continue
            until = t if cap is None or t <= cap else cap
            if until <= start:
                continue
            b = int((until - start) * rate // 1000)
            if b > before:
                full, rest = divmod(b, keys)
                total += full * len(mine) + bisect_left(mine, rest) - routed_before
        return total

    def leo_many(self, partition_names: Iterable[str], t: int) -> list[int]:
        """``leo_of`` of each partition at ``t``, in order (one call for a consumer's positions)."""
        leo_of = self.leo_of
        return [leo_of(name, t) for name in partition_names]

    def _plan(self, partition_name: str) -> list[_Route]:
        """The routes of ``leo``'s loop for one partition: one per produce entry and epoch of its
        topic in which the partition exists."""
        topic, _, number = partition_name.rpartition("-")
        partition = int(number)
        epochs = self.topic_epochs.get(topic)
        if not epochs:
            return []
        routes = []
        for start, stop, rate, keys in self.by_topic.get(topic, []):
            for i, (from_ms, count) in enumerate(epochs):
                if partition >= count:
                    continue
                epoch_end = epochs[i + 1][0] if i + 1 < len(epochs) else None
                cap = stop if epoch_end is None else epoch_end if stop is None else min(stop, epoch_end)
                mine = keys_by_partition(keys, count)[partition]
                before = self._count(start, stop, rate, from_ms)
                routes.append(_Route(from_ms, start, cap, rate, keys, mine, before, _routed(before, keys, mine)))
        return routes
