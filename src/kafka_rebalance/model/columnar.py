"""The columnar form of a group: integer arrays, no per-partition Python objects.

Partitions are numbered globally: topics in Java string order, then partition number, so
``topic_offsets[t] + p`` is partition ``p`` of topic ``t`` and ascending global index is the
output order of the spec. Assignors take a ``ColumnarGroup`` and return an *owner array*:
one member index (or -1) per global partition.

The string boundary is where the time goes at scale (a million owned partitions in, a million
assigned partitions out), so it is done in bulk: owned strings of all members are parsed in one
pass of pyarrow string kernels (split on the last '-', dictionary-encode the topics, cast the
numbers), falling back to the plain Python loop, which also words the errors, when anything
looks off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_rebalance.model.errors import InvalidInput
from kafka_rebalance.model.java import (
    java_sort_key,
    partition_topic_of,
    static_first_member_order,
    topic_offsets_of,
)
from kafka_rebalance.model.snapshot import GroupSnapshot, MemberSubscription

UNASSIGNED = -1


@dataclass(frozen=True, eq=False)
class ColumnarGroup:
    topic_names: tuple[str, ...]
    partition_counts: np.ndarray  # int64 (T,)
    member_ids: tuple[str, ...]  # input order
    subscription_indptr: np.ndarray  # int64 (M+1,): member m subscribes to topics[indptr[m]:indptr[m+1]]
    subscription_topics: np.ndarray  # int32 topic indices, ascending and unique per member
    owned_indptr: np.ndarray  # int64 (M+1,)
    owned_partitions: np.ndarray  # int64 global partition indices claimed by each member
    generations: np.ndarray  # int64 (M,)
    group_instance_ids: tuple[str | None, ...] = ()
    member_racks: tuple[str | None, ...] = ()
    # Per topic: one tuple of replica racks per partition, or None.
    partition_racks: tuple[tuple[tuple[str, ...], ...] | None, ...] = ()
    # float64 (P,): each partition's load (records/s, bytes/s, ...), or None when unknown.
    partition_loads: np.ndarray | None = None

    @property
    def num_topics(self) -> int:
        return len(self.topic_names)

    @property
    def num_members(self) -> int:
        return len(self.member_ids)

    @cached_property
    def topic_offsets(self) -> np.ndarray:
        return topic_offsets_of(self.partition_counts)

    @property
    def num_partitions(self) -> int:
        return int(self.topic_offsets[-1])

    @cached_property
    def partition_topic(self) -> np.ndarray:
        """Topic index of every global partition."""
        return partition_topic_of(self.partition_counts, np.int32)

    @cached_property
    def member_order(self) -> np.ndarray:
        """Member indices in Kafka's MemberInfo order: static members first by group.instance.id,
        then dynamic members by member id (Java string order)."""
        return static_first_member_order(self.member_ids, self.group_instance_ids)

    @cached_property
    def member_rank(self) -> np.ndarray:
        rank = np.empty(self.num_members, dtype=np.int64)
        rank[self.member_order] = np.arange(self.num_members)
        return rank

    @cached_property
    def subscription_member(self) -> np.ndarray:
        """Member index of every entry of ``subscription_topics``."""
        return np.repeat(np.arange(self.num_members, dtype=np.int64), np.diff(self.subscription_indptr))

    @cached_property
    def owned_member(self) -> np.ndarray:
        return np.repeat(np.arange(self.num_members, dtype=np.int64), np.diff(self.owned_indptr))

    @cached_property
    def topic_subscribers(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR topic -> subscribing members, members in Kafka order: (indptr (T+1,), members)."""
        topics = self.subscription_topics.astype(np.int64)
        ranks = self.member_rank[self.subscription_member]
        indptr = np.zeros(self.num_topics + 1, dtype=np.int64)
        np.cumsum(np.bincount(topics, minlength=self.num_topics), out=indptr[1:])
        m = max(self.num_members, 1)
        if self.num_topics * m < 1 << 62:
            # Sort one int64 key (topic, rank) and read the member back from the rank: the same
            # order as a lexsort, several times faster on a million subscriptions.
            return indptr, self.member_order[np.sort(topics * m + ranks) % m]
        order = np.lexsort((ranks, topics))
        return indptr, self.subscription_member[order]

    def subscribers(self, topic: int) -> np.ndarray:
        indptr, members = self.topic_subscribers
        return members[indptr[topic] : indptr[topic + 1]]

    def subscribed_topics(self, member: int) -> np.ndarray:
        return self.subscription_topics[self.subscription_indptr[member] : self.subscription_indptr[member + 1]]

    def owned(self, member: int) -> np.ndarray:
        return self.owned_partitions[self.owned_indptr[member] : self.owned_indptr[member + 1]]

    @cached_property
    def is_subscribed(self) -> np.ndarray:
        """Boolean matrix (M, T) when small enough; used by checks, not by hot paths."""
        matrix = np.zeros((self.num_members, self.num_topics), dtype=bool)
        matrix[self.subscription_member, self.subscription_topics] = True
        return matrix

    def partition_names(self, indices: np.ndarray | None = None) -> list[str]:
        """'topic-partition' strings for the given global indices (all partitions when None)."""
        if indices is None:
            return [f"{name}-{p}" for name, n in zip(self.topic_names, self.partition_counts.tolist(), strict=True) for p in range(n)]
        indices = np.asarray(indices, dtype=np.int64)
        topics = self.partition_topic[indices]
        numbers = indices - self.topic_offsets[topics]
        names = self.topic_names
        largest = int(numbers.max()) + 1 if len(numbers) else 0
        if len(indices) >= 4096 and largest * 4 <= len(indices):
            # Many partitions, few distinct numbers (500 topics x 2,000): concatenate "topic-" and
            # the number's string from two small tables of Python strings, elementwise in C.
            prefixes = np.array([f"{name}-" for name in names], dtype=object)
            digits = np.array([str(p) for p in range(largest)], dtype=object)
            joined: list[str] = (prefixes[topics] + digits[numbers]).tolist()
            return joined
        return [f"{names[t]}-{p}" for t, p in zip(topics.tolist(), numbers.tolist(), strict=True)]

    def assignment_lists(self, owner: np.ndarray) -> dict[str, list[str]]:
        """Owner array -> {member_id: sorted partition strings}, every member present."""
        owner = np.asarray(owner)
        assigned = np.flatnonzero(owner >= 0)
        order = np.argsort(owner[assigned], kind="stable")
        sorted_partitions = assigned[order]
        counts = np.bincount(owner[assigned], minlength=self.num_members)
        bounds = np.zeros(self.num_members + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        names = self.partition_names(sorted_partitions)
        return {mid: names[bounds[m] : bounds[m + 1]] for m, mid in enumerate(self.member_ids)}

    def owner_from_lists(self, assignment: Mapping[str, Sequence[str]], where: str = "assignment") -> np.ndarray:
        """The inverse of ``assignment_lists``; rejects unknown members, partitions and double owners."""
        index = {mid: i for i, mid in enumerate(self.member_ids)}
        owner = np.full(self.num_partitions, UNASSIGNED, dtype=np.int64)
        for member_id, partitions in assignment.items():
            if member_id not in index:
                raise InvalidInput(where, f"unknown member {member_id!r}")
            parsed = self.parse_partitions(list(map(str, partitions)), f"{where}.{member_id}")
            if (parsed < 0).any():
                raise InvalidInput(f"{where}.{member_id}", "names a partition that does not exist")
            if (owner[parsed] != UNASSIGNED).any() or len(np.unique(parsed)) != len(parsed):
                raise InvalidInput(f"{where}.{member_id}", "a partition is assigned twice")
            owner[parsed] = index[member_id]
        return owner

    @cached_property
    def _topic_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.topic_names)}

    def parse_partitions(self, strings: Sequence[str], where: str) -> np.ndarray:
        """'topic-partition' strings -> global indices; -1 where the topic or partition does not exist."""
        return parse_partition_strings(strings, self._topic_index, self.topic_offsets, self.partition_counts, where)

    @classmethod
    def from_snapshot(cls, snapshot: GroupSnapshot) -> ColumnarGroup:
        topic_names = tuple(sorted(snapshot.topics, key=java_sort_key))
        topic_index = {name: i for i, name in enumerate(topic_names)}
        counts = np.array([snapshot.topics[t].partitions for t in topic_names], dtype=np.int64)
        offsets = np.zeros(len(topic_names) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        members = snapshot.members
        # Members mostly share subscriptions (2,000 members x 500 topics is a million entries):
        # resolve each distinct topic list once.
        resolved: dict[tuple[str, ...], np.ndarray] = {}
        sub_arrays = []
        for m in members:
            topics = resolved.get(m.topics)
            if topics is None:
                topics = np.array(sorted({topic_index[t] for t in m.topics if t in topic_index}), dtype=np.int32)
                resolved[m.topics] = topics
            sub_arrays.append(topics)
        sub_indptr = np.zeros(len(members) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in sub_arrays], out=sub_indptr[1:])
        sub_topics = np.concatenate(sub_arrays) if sub_arrays else np.zeros(0, dtype=np.int32)
        owned_indptr, owned = _parse_owned(members, topic_index, offsets, counts)
        return cls(
            topic_names=topic_names,
            partition_counts=counts,
            member_ids=tuple(m.member_id for m in members),
            subscription_indptr=sub_indptr,
            subscription_topics=sub_topics,
            owned_indptr=owned_indptr,
            owned_partitions=owned.astype(np.int64),
            generations=np.array([m.generation for m in members], dtype=np.int64),
            group_instance_ids=tuple(m.group_instance_id for m in members),
            member_racks=tuple(m.rack for m in members),
            partition_racks=tuple(snapshot.topics[t].racks for t in topic_names),
            partition_loads=global_partition_loads(topic_names, counts, snapshot.partition_loads),
        )

    @classmethod
    def from_arrays(
        cls,
        topic_names: Sequence[str],
        partition_counts: Sequence[int] | np.ndarray,
        member_ids: Sequence[str],
        subscription_indptr: Sequence[int] | np.ndarray,
        subscription_topics: Sequence[int] | np.ndarray,
        owned_indptr: Sequence[int] | np.ndarray | None = None,
        owned_partitions: Sequence[int] | np.ndarray | None = None,
        generations: Sequence[int] | np.ndarray | None = None,
        group_instance_ids: Sequence[str | None] | None = None,
        partition_loads: Sequence[float] | np.ndarray | None = None,
    ) -> ColumnarGroup:
        """Build a group from arrays a caller already holds (the public columnar entry point).

        ``topic_names`` must be in Java string order (``sorted(names, key=java_sort_key)``);
        subscriptions and owned partitions are CSR arrays over members; owned partitions are
        global indices (``topic_offsets[t] + p``); ``partition_loads``, when given, is one
        finite load >= 0 per global partition.
        """
        names = tuple(topic_names)
        if list(names) != sorted(names, key=java_sort_key):
            raise InvalidInput("topic_names", "must be sorted in Java string order")
        m = len(member_ids)
        counts = np.asarray(partition_counts, dtype=np.int64)
        if (counts < 0).any():
            raise InvalidInput("partition_counts", "must not be negative")
        sub_indptr = np.asarray(subscription_indptr, dtype=np.int64)
        sub_topics = np.asarray(subscription_topics, dtype=np.int32)
        if len(sub_indptr) != m + 1:
            raise InvalidInput("subscription_indptr", f"expected {m + 1} entries")
        if owned_indptr is None:
            owned_indptr = np.zeros(m + 1, dtype=np.int64)
            owned_partitions = np.zeros(0, dtype=np.int64)
        gens = np.full(m, -1, dtype=np.int64) if generations is None else np.asarray(generations, dtype=np.int64)
        loads = None
        if partition_loads is not None:
            loads = np.asarray(partition_loads, dtype=np.float64)
            if len(loads) != int(counts.sum()) or not np.isfinite(loads).all() or (loads < 0).any():
                raise InvalidInput("partition_loads", "expected one finite load >= 0 per partition")
        return cls(
            topic_names=names,
            partition_counts=counts,
            member_ids=tuple(member_ids),
            subscription_indptr=sub_indptr,
            subscription_topics=sub_topics,
            owned_indptr=np.asarray(owned_indptr, dtype=np.int64),
            owned_partitions=np.asarray(owned_partitions, dtype=np.int64),
            generations=gens,
            group_instance_ids=tuple(group_instance_ids) if group_instance_ids is not None else (None,) * m,
            member_racks=(None,) * m,
            partition_racks=(None,) * len(names),
            partition_loads=loads,
        )


def global_partition_loads(topic_names: Sequence[str], counts: np.ndarray, loads: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """Per-topic load lists -> one float64 array over global partitions (None when no topic has
    loads). A topic without a list counts each of its partitions at the mean load of the listed
    ones: unknown is taken as typical, neither idle nor hot."""
    if not loads:
        return None
    listed = [loads[t] for t in topic_names if t in loads]
    total = sum(len(v) for v in listed)
    typical = float(sum(float(v.sum()) for v in listed) / total) if total else 1.0
    parts = [np.asarray(loads[t], dtype=np.float64) if t in loads else np.full(int(n), typical) for t, n in zip(topic_names, counts.tolist(), strict=True)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)


def parse_partition_strings(
    strings: Sequence[str],
    topic_index: dict[str, int],
    offsets: np.ndarray,
    counts: np.ndarray,
    where: str,
) -> np.ndarray:
    """Parse 'topic-partition' strings (number after the last '-') to global indices.

    Returns -1 for a topic absent from metadata or a partition beyond its count; raises
    ``InvalidInput`` for a string with no partition number.
    """
    if len(strings) >= _BULK_MIN:
        fast = _parse_bulk(strings, topic_index, offsets, counts)
        if fast is not None:
            return fast
    out = np.empty(len(strings), dtype=np.int64)
    offsets_list = offsets.tolist()
    counts_list = counts.tolist()
    for i, text in enumerate(strings):
        topic, sep, number = text.rpartition("-")
        if not sep or not topic or not number.isdigit() or not number.isascii():
            raise InvalidInput(where, f"{text!r} is not 'topic-partition' with a partition number")
        t = topic_index.get(topic)
        p = int(number)
        out[i] = offsets_list[t] + p if t is not None and p < counts_list[t] else UNASSIGNED
    return out


# Below this many strings the Python loop is as fast as setting up the pyarrow kernels.
_BULK_MIN = 512


def _string_array(strings: Sequence[str]) -> pa.Array:
    """``pa.array(strings, type=pa.string())``, built from one joined buffer when every string is
    ASCII (then character offsets are byte offsets). As fast, and it keeps pyarrow from importing
    pandas to inspect a list (~0.2 s on the first call in a process)."""
    try:
        joined = "".join(strings)
    except TypeError:  # not all str: let pyarrow raise its usual error
        return pa.array(strings, type=pa.string())
    data = joined.encode("utf-8")
    if len(data) != len(joined):
        return pa.array(strings, type=pa.string())
    wide = len(data) >= 1 << 31
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    offsets = np.zeros(len(strings) + 1, dtype=np.int64 if wide else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    array_type = pa.LargeStringArray if wide else pa.StringArray
    return array_type.from_buffers(len(strings), pa.py_buffer(offsets), pa.py_buffer(data))


def _zero_and_one() -> tuple[pa.Scalar, pa.Scalar]:
    ints = pa.Array.from_buffers(pa.int64(), 2, [None, pa.py_buffer(np.arange(2, dtype=np.int64))])
    return ints[0], ints[1]


def _int_numpy(array: pa.Array | pa.ChunkedArray, dtype: type[np.int32] | type[np.int64]) -> np.ndarray:
    """A null-free integer arrow array as numpy, read from its buffer (``to_numpy`` would import
    pandas on first use)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count or np.dtype(dtype).itemsize != array.type.bit_width // 8:
        copied: np.ndarray = array.to_numpy(zero_copy_only=False)
        return copied
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * np.dtype(dtype).itemsize)


def _parse_bulk(strings: Sequence[str], topic_index: dict[str, int], offsets: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
    """``parse_partition_strings`` with pyarrow kernels; None when any string is malformed (or a
    number does not fit in 64 bits), so that the caller's Python loop finds and words the error."""
    try:
        text = _string_array(strings)
        parts = pc.split_pattern(text, "-", max_splits=1, reverse=True)
        if len(text) and pc.min(pc.list_value_length(parts)).as_py() != 2:
            return None
        # Scalars made from a buffer and array methods over ``pc`` wrappers that take Python
        # values: either would have pyarrow import pandas (~0.2 s) on the first call.
        zero, one = _zero_and_one()
        topics = pc.list_element(parts, zero)
        numbers = pc.list_element(parts, one)
        # Same rule as the loop: a non-empty topic, then ASCII digits only.
        well_formed = pc.and_(
            pc.and_(pc.greater(pc.binary_length(topics), zero), pc.utf8_is_digit(numbers)),
            pc.string_is_ascii(numbers),
        )
        if len(text) and not pc.all(well_formed).as_py():
            return None
        partition = _int_numpy(numbers.cast(pa.int64()), np.int64)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, UnicodeEncodeError):
        return None
    if isinstance(topics, pa.ChunkedArray):
        topics = topics.combine_chunks()
    encoded = topics.dictionary_encode()
    known = np.array([topic_index.get(name, -1) for name in encoded.dictionary.to_pylist()], dtype=np.int64)
    indices = _int_numpy(encoded.indices, np.int32 if encoded.indices.type == pa.int32() else np.int64)
    topic = known[indices] if len(known) else np.zeros(0, dtype=np.int64)
    exists = topic >= 0
    safe_topic = np.where(exists, topic, 0)
    if len(counts):
        exists &= partition < counts[safe_topic]
        return np.where(exists, offsets[safe_topic] + partition, UNASSIGNED).astype(np.int64)
    return np.full(len(partition), UNASSIGNED, dtype=np.int64)


def _parse_owned(members: Sequence[MemberSubscription], topic_index: dict[str, int], offsets: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every member's owned strings -> (owned_indptr, owned global indices): sorted and unique per
    member; partitions of topics gone from metadata are dropped, as Kafka drops them. All members
    are parsed in one bulk pass; on any malformed string, member by member to name the field."""
    lengths = np.fromiter((len(m.owned) for m in members), dtype=np.int64, count=len(members))
    parsed = None
    if lengths.sum() >= _BULK_MIN:
        parsed = _parse_bulk(list(chain.from_iterable(m.owned for m in members)), topic_index, offsets, counts)
    if parsed is None:
        parsed_lists = [parse_partition_strings(m.owned, topic_index, offsets, counts, f"members[{i}].owned") for i, m in enumerate(members)]
        parsed = np.concatenate(parsed_lists) if parsed_lists else np.zeros(0, dtype=np.int64)
    member = np.repeat(np.arange(len(members), dtype=np.int64), lengths)
    valid = parsed >= 0
    member, parsed = member[valid], parsed[valid]
    total = int(offsets[-1]) if len(offsets) else 0
    key = member * max(total, 1) + parsed
    if len(key) > 1 and not (key[1:] > key[:-1]).all():  # usually already sorted, as the spec writes lists
        key = np.unique(key)
        member, parsed = key // max(total, 1), key % max(total, 1)
    indptr = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(np.bincount(member, minlength=len(members)), out=indptr[1:])
    return indptr, parsed.astype(np.int64)
