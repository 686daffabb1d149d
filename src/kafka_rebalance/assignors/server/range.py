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
        lengths = (self.end - self.start).astype(np.int64)
        first = group.topic_offsets[self.topic] + self.start
        run_start = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=run_start[1:])
        within = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(run_start, lengths)
        owner[np.repeat(first, lengths) + within] = np.repeat(self.member.astype(np.int64), lengths)
        return owner


# Above this many distinct (subscriber list, partition count) pairs, ranges are computed per
# topic in one vectorised pass instead of once per pair and copied.
MAX_SHARED_SHAPES = 64
# Below this many ranges per shape (one per subscriber of a topic, or per partition where the
# partitions are fewer), the per-topic pass is cheaper than a dozen array calls per shape (where
# each numpy call's fixed cost dominates; measured on Kafka's JMH shapes).
MIN_RANGES_PER_SHARED_SHAPE = 3000


def range_ranges(
    group: ServerGroup,
    max_shared_shapes: int = MAX_SHARED_SHAPES,
    min_ranges_per_shared_shape: int = MIN_RANGES_PER_SHARED_SHAPE,
) -> Ranges:
    """Kafka's range assignment as ranges. Topics with the same subscriber list and partition
    count (every topic of a homogeneous group with even topics) get the same ranges: those are
    computed once and copied, so the cost is a few array copies per (member, topic) pair."""
    if group.num_classes == 1 and group.num_members and len(group.class_topics) and min_ranges_per_shared_shape:
        sizes = group.partition_counts[group.class_topics]
        if sizes.min() == sizes.max():
            return one_shape_ranges(group.range_order, group.class_topics, int(sizes[0]))
    list_of_topic, indptr, members = group.subscriber_lists(group.range_order)
    counts = group.partition_counts
    if len(counts) and counts.min() == counts.max():
        # Every topic the same size (Kafka's benchmark shapes): a shape is a subscriber list.
        shapes = np.arange(len(indptr) - 1)
        shape_of_topic = list_of_topic
    else:
        shape_key = list_of_topic * (int(counts.max(initial=0)) + 1) + counts
        shapes, shape_of_topic = np.unique(shape_key, return_inverse=True)
    if len(shapes) > max_shared_shapes:
        return ranges_per_topic(list_of_topic, indptr, members, counts)
    if min_ranges_per_shared_shape and len(shapes) > 1:
        ranges = int(np.minimum((indptr[1:] - indptr[:-1])[list_of_topic], counts).sum())
        if ranges < min_ranges_per_shared_shape * len(shapes):
            return ranges_per_topic(list_of_topic, indptr, members, counts)
    pieces = []
    topics_of_shape = np.argsort(shape_of_topic, kind="stable")
    shape_bounds = np.searchsorted(shape_of_topic[topics_of_shape], np.arange(len(shapes) + 1)).tolist()
    for s in range(len(shapes)):
        topics = topics_of_shape[shape_bounds[s] : shape_bounds[s + 1]]
        if not len(topics):
            continue
        g, n = int(list_of_topic[topics[0]]), int(counts[topics[0]])
        if indptr[g + 1] == indptr[g] or n == 0:
            continue
        piece = one_shape_ranges(members[indptr[g] : indptr[g + 1]], topics, n)
        pieces.append((piece.member, piece.topic, piece.start, piece.end))
    if not pieces:
        empty = np.zeros(0, dtype=np.int32)
        return Ranges(empty, empty, empty, empty)
    if len(pieces) == 1:
        return Ranges(*pieces[0])
    member, topic, start, end = (np.concatenate(column) for column in zip(*pieces, strict=True))
    return Ranges(member=member, topic=topic, start=start, end=end)


def one_shape_ranges(subscribers: np.ndarray, topics: np.ndarray, size: int) -> Ranges:
    """Every one of ``topics`` has ``size`` partitions and the same ``subscribers`` (in Kafka's
    order): one row of ranges, repeated per topic (a homogeneous group with even topics)."""
    quota, extra = divmod(size, len(subscribers))
    # int32 halves the bytes copied; partition numbers and member indices fit (Kafka: int).
    position = np.arange(len(subscribers) if quota else extra, dtype=np.int32)
    start = position * np.int32(quota)
    if extra:
        start += np.minimum(position, np.int32(extra))
        end = start + np.int32(quota) + (position < extra)
    else:
        end = start + np.int32(quota)
    times = len(topics)
    return Ranges(
        member=tiled(subscribers[: len(position)].astype(np.int32), times),
        topic=topics.astype(np.int32).repeat(len(position)),
        start=tiled(start, times),
        end=tiled(end, times),
    )


def tiled(row: np.ndarray, times: int) -> np.ndarray:
    """``np.tile(row, times)`` for a 1-d row, without its Python-level overhead."""
    out = np.empty((times, len(row)), dtype=row.dtype)
    out[:] = row
    return out.reshape(-1)


def ranges_per_topic(list_of_topic: np.ndarray, indptr: np.ndarray, members: np.ndarray, counts: np.ndarray) -> Ranges:
    subscribers = (indptr[1:] - indptr[:-1])[list_of_topic]
    safe = np.maximum(subscribers, 1)
    quota, extra = counts // safe, counts % safe
    # Subscribers with a non-empty range: all of them, or only the first `extra` when quota is 0.
    takers = np.where(quota > 0, subscribers, extra)
    topic = np.repeat(np.arange(len(counts), dtype=np.int64), takers)
    run_start = np.cumsum(takers) - takers
    position = np.arange(len(topic), dtype=np.int64) - np.repeat(run_start, takers)
    q, e = np.repeat(quota, takers), np.repeat(extra, takers)
    start = position * q + np.minimum(position, e)
    end = start + q + (position < e)
    member = members[np.repeat(indptr[list_of_topic], takers) + position]
    return Ranges(member=member, topic=topic, start=start, end=end)


def range_assign(group: ServerGroup) -> np.ndarray:
    """The target owner (member index or -1) of every global partition."""
    return range_ranges(group).owner(group)
