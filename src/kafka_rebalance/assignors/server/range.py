"""Kafka's server-side ``range`` assignor (group-coordinator ``assignor/RangeAssignor``).

Per topic, the subscribers in ``sortMemberIds`` order (static members by instance id, then the
rest by member id) each take a contiguous range: ``n // s`` partitions, and the first ``n % s``
of them one more. The homogeneous and heterogeneous paths of Kafka's class give this same
answer; neither looks at the current assignment or at racks. One vectorised pass over all
partitions: no loop over members or partitions.
"""

from __future__ import annotations

import numpy as np

from kafka_rebalance.assignors.server.group import ServerGroup
from kafka_rebalance.model import UNASSIGNED


def range_assign(group: ServerGroup) -> np.ndarray:
    """The target owner (member index or -1) of every global partition."""
    list_of_topic, indptr, members = group.subscriber_lists(group.range_order)
    lists = list_of_topic[group.partition_topic]
    subscribers = (indptr[1:] - indptr[:-1])[lists]
    count = group.partition_counts[group.partition_topic]
    partition = np.arange(group.num_partitions, dtype=np.int64) - group.topic_offsets[group.partition_topic]
    safe = np.maximum(subscribers, 1)
    quota, extra = count // safe, count % safe
    in_long_ranges = extra * (quota + 1)
    position = np.where(
        partition < in_long_ranges,
        partition // (quota + 1),
        extra + (partition - in_long_ranges) // np.maximum(quota, 1),
    )
    owner = np.full(group.num_partitions, UNASSIGNED, dtype=np.int64)
    has = subscribers > 0
    owner[has] = members[indptr[lists[has]] + position[has]]
    return owner
