"""RoundRobinAssignor: all partitions sorted by topic then number, dealt to members in a circle
(Kafka order), skipping members not subscribed to the partition's topic."""

from __future__ import annotations

import numpy as np

from kafka_rebalance.assignors.base import ColumnarAssignor, empty_owner
from kafka_rebalance.model import ColumnarGroup


class RoundRobinAssignor(ColumnarAssignor):
    name = "roundrobin"

    def assign_columnar(self, group: ColumnarGroup) -> np.ndarray:
        owner = empty_owner(group)
        m = group.num_members
        if m == 0:
            return owner
        order = group.member_order
        rank = group.member_rank
        offsets = group.topic_offsets
        uniform = _all_subscribed_to_same(group)
        # The circular iterator's position: rank of the member it will offer next.
        position = 0
        for t in range(group.num_topics):
            n = int(group.partition_counts[t])
            subscribers = group.subscribers(t)
            if n == 0 or len(subscribers) == 0:
                continue
            ranks = np.arange(m) if uniform else rank[subscribers]  # ascending: subscribers are in Kafka order
            k = len(ranks)
            first = int(np.searchsorted(ranks, position)) % k
            picks = (first + np.arange(n)) % k
            owner[offsets[t] : offsets[t] + n] = order[ranks[picks]]
            position = (int(ranks[(first + n - 1) % k]) + 1) % m
        return owner


def _all_subscribed_to_same(group: ColumnarGroup) -> bool:
    counts = np.diff(group.subscription_indptr)
    return bool(len(counts) and (counts == counts[0]).all() and counts[0] == len(np.unique(group.subscription_topics)))
