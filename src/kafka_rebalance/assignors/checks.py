"""Properties of an assignment, shared by tests, benchmarks and the simulator's metrics."""

from __future__ import annotations

import numpy as np

from kafka_rebalance.assignors.sticky import previous_owners
from kafka_rebalance.model import UNASSIGNED, ColumnarGroup


def subscribed_partitions(group: ColumnarGroup) -> np.ndarray:
    """Mask of partitions whose topic at least one member subscribes to."""
    indptr, _ = group.topic_subscribers
    topic_has_subscriber = np.diff(indptr) > 0
    subscribed: np.ndarray = topic_has_subscriber[group.partition_topic]
    return subscribed


def owners_subscribe(group: ColumnarGroup, owner: np.ndarray) -> bool:
    """Every assigned partition belongs to a topic its owner subscribes to."""
    assigned = np.flatnonzero(owner != UNASSIGNED)
    if len(assigned) == 0:
        return True
    pairs = owner[assigned] * group.num_topics + group.partition_topic[assigned]
    allowed = np.unique(group.subscription_member * group.num_topics + group.subscription_topics)
    return bool(np.isin(pairs, allowed).all())


def member_loads(group: ColumnarGroup, owner: np.ndarray) -> np.ndarray:
    return np.bincount(owner[owner != UNASSIGNED], minlength=group.num_members)


def is_balanced(group: ColumnarGroup, owner: np.ndarray) -> bool:
    """Kafka's definition: no partition is held by a member with 2+ more partitions than some
    other subscriber of its topic (so no single move would even the loads out)."""
    loads = member_loads(group, owner)
    if len(loads) == 0 or loads.max() - loads.min() <= 1:
        return True
    indptr, members = group.topic_subscribers
    assigned = owner != UNASSIGNED
    for t in range(group.num_topics):
        subs = members[indptr[t] : indptr[t + 1]]
        if len(subs) < 2:
            continue
        lo, hi = group.topic_offsets[t], group.topic_offsets[t + 1]
        holders = owner[lo:hi][assigned[lo:hi]]
        if len(holders) and loads[holders].max() - loads[subs].min() >= 2:
            return False
    return True


def kept_partitions(group: ColumnarGroup, owner: np.ndarray) -> int:
    """Partitions that stay with their previous owner (previous ownership by Kafka's rules)."""
    prev = previous_owners(group)
    return int(((prev != UNASSIGNED) & (prev == owner)).sum())


def balance_score(group: ColumnarGroup, owner: np.ndarray) -> int:
    """Kafka's AbstractStickyAssignor balance score: sum of |load_i - load_j| over member pairs
    (lower is more balanced)."""
    loads = np.sort(member_loads(group, owner))
    n = len(loads)
    return int(((2 * np.arange(n) - n + 1) * loads).sum())
