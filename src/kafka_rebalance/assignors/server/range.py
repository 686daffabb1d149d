"""Kafka's server-side ``range`` assignor (group-coordinator ``assignor/RangeAssignor``).

Per topic, the subscribers in ``sortMemberIds`` order (static members by instance id, then the
rest by member id) each take a contiguous range: ``n // s`` partitions, and the first ``n % s``
of them one more. The homogeneous and heterogeneous paths of Kafka's class give this same
answer; neither looks at the current assignment or at racks.

Kafka answers with one ``RangeSet`` per member and topic; ``range_ranges`` answers with the same
ranges as arrays, in time proportional to the number of ranges, not of partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_rebalance.assignors.server.group import ServerGroup
from kafka_rebalance.model import UNASSIGNED


@dataclass(frozen=True)
class Ranges:
    """Member ``member[i]`` gets partitions ``start[i]..end[i]-1`` of topic ``topic[i]``."""

    member: np.ndarray
    topic: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def owner(self, group: ServerGroup) -> np.ndarray:
        """The owner array (member index or -1 per global partition)."""
        owner = np.full(group.num_partitions, UNASSIGNED, dtype=np.int64)
        lengths = self.end - self.start
        first = group.topic_offsets[self.topic] + self.start
        run_start = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=run_start[1:])
        within = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(run_start, lengths)
        owner[np.repeat(first, lengths) + within] = np.repeat(self.member, lengths)
        return owner


def range_ranges(group: ServerGroup) -> Ranges:
    list_of_topic, indptr, members = group.subscriber_lists(group.range_order)
    subscribers = (indptr[1:] - indptr[:-1])[list_of_topic]
    counts = group.partition_counts
    safe = np.maximum(subscribers, 1)
    quota, extra = counts // safe, counts % safe
    # Subscribers with a non-empty range: all of them, or only the first `extra` when quota is 0.
    takers = np.where(quota > 0, subscribers, extra)
    topic = np.repeat(np.arange(group.num_topics, dtype=np.int64), takers)
    run_start = np.cumsum(takers) - takers
    position = np.arange(len(topic), dtype=np.int64) - np.repeat(run_start, takers)
    q, e = np.repeat(quota, takers), np.repeat(extra, takers)
    start = position * q + np.minimum(position, e)
    end = start + q + (position < e)
    first = indptr[list_of_topic]
    if (first == first[0]).all():  # one subscriber list for every topic (homogeneous group)
        member = members[first[0] + position] if len(first) else position
    else:
        member = members[np.repeat(first, takers) + position]
    return Ranges(member=member, topic=topic, start=start, end=end)


def range_assign(group: ServerGroup) -> np.ndarray:
    """The target owner (member index or -1) of every global partition."""
    return range_ranges(group).owner(group)
