"""The columnar form of a consumer group (KIP-848) as the broker's assignors see it.

Members rarely have a subscription of their own: thousands of members share a handful of topic
lists. So subscriptions are held once per *subscription class* (a distinct topic set), and a
member points at its class. The current assignment is one owner array over global partitions
(topics in Java string order, then partition number, as in ``ColumnarGroup``): in a consumer
group the members' current assignments are the previous target, which never overlap.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

import numpy as np

from kafka_rebalance.assignors.server.id_order import ARRAY_SORT_MIN_IDS, ascii_id_order
from kafka_rebalance.model import (
    UNASSIGNED,
    InvalidInput,
    capacities_after_puts,
    capacities_of_copies,
    java_order,
    java_sorted,
    partition_topic_of,
    static_first_member_order,
    topic_offsets_of,
)

_T = TypeVar("_T")


class cached_property(Generic[_T]):  # noqa: N801 - a drop-in for functools.cached_property
    """``functools.cached_property`` without its per-access lock (Python 3.11 takes an RLock on
    every first access; groups are built fresh per assignment, so every access is a first)."""

    def __init__(self, compute: Callable[[Any], _T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached_property[_T]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...
    def __get__(self, instance: object | None, owner: type | None = None) -> cached_property[_T] | _T:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


# Largest (classes x topics) subscription table held as a dense boolean matrix.
_DENSE_TABLE_LIMIT = 1 << 24


# ``ServerGroup.held_by`` picks the holdings of at most one member in this many out of the owner
# array (one pass over it) rather than sorting everyone's.
HELD_PICK_RATIO = 8


@dataclass(frozen=True, eq=False)
class ServerGroup:
    topic_names: tuple[str, ...]  # Java string order
    partition_counts: np.ndarray  # int64 (T,)
    topic_keys: np.ndarray  # int64 (T, 2): topic ids as signed (msb, lsb), Uuid.compareTo order
    member_ids: tuple[str, ...]  # input order
    member_class: np.ndarray  # int64 (M,): subscription class of each member
    class_indptr: np.ndarray  # int64 (C+1,)
    class_topics: np.ndarray  # int64: topic indices of each class, ascending and unique
    current_owner: np.ndarray  # int64 (P,): member index holding each partition now, or -1
    # The same assignment member-major: member m holds held_partitions[held_indptr[m]:held_indptr[m+1]],
    # ascending (Kafka's GroupSpec.memberAssignment beside its inverted map).
    held_indptr: np.ndarray  # int64 (M+1,)
    # ``held_partitions`` as the caller had it; None: sorted out of ``current_owner`` when first
    # read (a stable sort of every held partition by member: 20 ms at 500,000 partitions dealt
    # member by member, where most computations read a few members' holdings or none).
    held_given: np.ndarray | None
    instance_ids: tuple[str | None, ...] = ()
    # What Kafka's uniform builders iterate over in hash-table order (docs/assignment-json.md,
    # "Kafka's iteration orders"); None: derived from the ids, with insertions ascending.
    # Every member subscribes to the same topic names (Kafka's SubscriptionType.HOMOGENEOUS,
    # which counts names that do not resolve too); None: one subscription class.
    same_subscriptions: bool | None = None
    # The first member's subscribed topic ids as a HashSet<Uuid> iterates (topic indices).
    subscription_sequence: np.ndarray | None = None
    # Each partition's position in the input that listed the current assignment (the insertion
    # order of each member's HashMap<Uuid, HashSet<Integer>>, which breaks ties within a hash
    # bucket); None: partitions listed ascending. ``hashed_assignments`` False: the input's
    # order is the iteration order itself (Kafka's tests' LinkedHashMaps).
    claim_position: np.ndarray | None = None
    hashed_assignments: bool = True
    # The members in Kafka's iteration order (GroupSpec.memberIds()), when not index order.
    iteration_order: np.ndarray | None = None

    @property
    def num_members(self) -> int:
        return len(self.member_ids)

    @property
    def num_topics(self) -> int:
        return len(self.topic_names)

    @property
    def num_classes(self) -> int:
        return len(self.class_indptr) - 1

    @cached_property
    def topic_offsets(self) -> np.ndarray:
        return topic_offsets_of(self.partition_counts)

    @property
    def num_partitions(self) -> int:
        return int(self.topic_offsets[-1])

    @cached_property
    def partition_topic(self) -> np.ndarray:
        return partition_topic_of(self.partition_counts)

    def topics_of(self, partitions: np.ndarray) -> np.ndarray:
        """The topic of each of ``partitions`` (global indices): looked up when the full map
        is built already, else searched (a few partitions need not build it)."""
        if "partition_topic" in self.__dict__ or len(partitions) * 8 > self.num_partitions:
            topics: np.ndarray = self.partition_topic[partitions]
            return topics
        return np.searchsorted(self.topic_offsets, partitions, side="right") - 1

    @cached_property
    def class_of_entry(self) -> np.ndarray:
        """Class of every entry of ``class_topics``."""
        indptr = self.class_indptr
        return np.arange(len(indptr) - 1, dtype=np.int64).repeat(indptr[1:] - indptr[:-1])

    @cached_property
    def member_id_order(self) -> np.ndarray:
        """Members by member id in Java string order."""
        return java_order(self.member_ids)

    @cached_property
    def range_order(self) -> np.ndarray:
        """Kafka's ``RangeAssignor.sortMemberIds``: static members first by instance id, then the
        others by member id (both ``String.compareTo``)."""
        ids = self.member_ids
        if self.instance_ids.count(None) == len(ids):  # no static members: by member id
            if len(ids) >= ARRAY_SORT_MIN_IDS:  # one integer argsort (id_order.py)
                order = ascii_id_order(ids)
                if order is not None:
                    return order
            elif "".join(ids).isascii():  # ASCII ids: their Java order is Python's string order
                return np.fromiter(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64, count=len(ids))
        return static_first_member_order(ids, self.instance_ids)

    @cached_property
    def is_homogeneous(self) -> bool:
        """At least one member, and every member subscribes to every topic."""
        return self.num_classes == 1 and len(self.class_topics) == self.num_topics and self.num_members > 0

    @property
    def kafka_homogeneous(self) -> bool:
        """Kafka's subscription type is HOMOGENEOUS: every member subscribes to the same topic
        names (a group without members counts as such)."""
        if self.same_subscriptions is not None:
            return self.same_subscriptions
        return self.num_classes <= 1 or bool((self.member_class == self.member_class[0]).all())

    @cached_property
    def kafka_subscription_sequence(self) -> np.ndarray:
        """The topics of the first member's subscription in HashSet<Uuid> iteration order."""
        if self.subscription_sequence is not None:
            return self.subscription_sequence
        return subscription_iteration_order(self.first_member_topics, self.topic_keys)

    @property
    def first_member_topics(self) -> np.ndarray:
        """The topics of the first member's subscription, ascending unless the builder gave
        their hashed order: where only the set matters, this spares that hashing."""
        if self.subscription_sequence is not None:
            return self.subscription_sequence
        if not self.num_members:
            return np.zeros(0, dtype=np.int64)
        c = int(self.member_class[0])
        topics: np.ndarray = self.class_topics[self.class_indptr[c] : self.class_indptr[c + 1]]
        return topics

    @cached_property
    def held_partitions(self) -> np.ndarray:
        """int64 (number of held partitions,): see ``held_indptr``."""
        if self.held_given is not None:
            return self.held_given
        return member_major(self.current_owner, self.num_members)[1]

    def held_by(self, members: np.ndarray) -> np.ndarray:
        """The partitions ``members`` (ascending) hold, member by member, each ascending: sliced
        from ``held_partitions`` when made, else picked out of the owner array (a few members
        need no sort of everyone's holdings)."""
        indptr = self.held_indptr
        counts = indptr[members + 1] - indptr[members]
        if ("held_partitions" in self.__dict__ or self.held_given is not None
                or HELD_PICK_RATIO * len(members) > self.num_members):
            starts = np.repeat(indptr[members] - (np.cumsum(counts) - counts), counts)
            held: np.ndarray = self.held_partitions[starts + np.arange(int(counts.sum()), dtype=np.int64)]
            return held
        chosen = np.zeros(self.num_members + 1, dtype=bool)  # the last entry: no holder (-1)
        chosen[members] = True
        picked = np.flatnonzero(chosen[self.current_owner])
        by_member: np.ndarray = picked[np.argsort(self.current_owner[picked], kind="stable")]
        return by_member

    def held_in_iteration_order(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The partitions ``members`` (ascending) hold, each member's in the order its
        assignment map iterates them, and the member of each; only those members' holdings are
        read (Kafka's homogeneous builder reads the order of members it trims only)."""
        indptr = self.held_indptr
        counts = indptr[members + 1] - indptr[members]
        held = self.held_by(members)
        member = np.repeat(members, counts)
        if self.claim_position is not None:  # each member's claims in input order (else ascending)
            inserted = np.lexsort((self.claim_position[held], member))
            held, member = held[inserted], member[inserted]
        topic = self.topics_of(held)
        order = held_iteration_order(member, topic, held - self.topic_offsets[topic], self.topic_keys,
                                     hashed=self.hashed_assignments)
        return held[order], member[order]

    def in_iteration_order(self) -> tuple[ServerGroup, np.ndarray | None]:
        """The group renumbered so that member index order is Kafka's iteration order, and the
        old index of each new member (None when nothing moved)."""
        order = self.iteration_order
        if order is None or bool((order == np.arange(len(order))).all()):
            return self, None
        return self.permuted(order), order

    def permuted(self, order: np.ndarray) -> ServerGroup:
        """The same group with its members renumbered: new member ``i`` is old ``order[i]``
        (``subscription_sequence`` is kept: it must already be the new first member's)."""
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order), dtype=np.int64)
        owner = np.where(self.current_owner >= 0, np.append(inverse, -1)[self.current_owner], UNASSIGNED)
        counts = np.diff(self.held_indptr)[order]
        indptr = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        held = None
        if self.held_given is not None or "held_partitions" in self.__dict__:
            starts = self.held_indptr[order]
            take = np.repeat(starts - indptr[:-1], counts) + np.arange(int(indptr[-1]), dtype=np.int64)
            held = self.held_partitions[take]
        return ServerGroup(
            topic_names=self.topic_names,
            partition_counts=self.partition_counts,
            topic_keys=self.topic_keys,
            member_ids=tuple(self.member_ids[i] for i in order.tolist()),
            member_class=self.member_class[order],
            class_indptr=self.class_indptr,
            class_topics=self.class_topics,
            current_owner=owner,
            held_indptr=indptr,
            held_given=held,
            instance_ids=tuple(self.instance_ids[i] for i in order.tolist()) if self.instance_ids else (),
            same_subscriptions=self.same_subscriptions,
            subscription_sequence=self.subscription_sequence,
            claim_position=self.claim_position,
            hashed_assignments=self.hashed_assignments,
        )

    @cached_property
    def topic_class(self) -> np.ndarray | None:
        """The one class subscribing to each topic (-1 for none), or None when some topic has
        subscribers of several classes. Classes without members subscribe to nothing."""
        if self.num_classes == 1:
            topic_class = np.full(self.num_topics, -1, dtype=np.int64)
            if self.num_members:
                topic_class[self.class_topics] = 0
            return topic_class
        populated = np.bincount(self.member_class, minlength=self.num_classes)[self.class_of_entry] > 0
        topics, classes = self.class_topics[populated], self.class_of_entry[populated]
        if (np.bincount(topics, minlength=self.num_topics) > 1).any():
            return None
        topic_class = np.full(self.num_topics, -1, dtype=np.int64)
        topic_class[topics] = classes
        return topic_class

    def is_subscribed(self, members: np.ndarray, topics: np.ndarray) -> np.ndarray:
        """Elementwise: does ``members[i]`` subscribe to ``topics[i]``?"""
        if self.topic_class is not None:  # one class per topic: the member's must be it
            same: np.ndarray = self.topic_class[topics] == self.member_class[members]
            return same
        if self.num_classes * self.num_topics <= _DENSE_TABLE_LIMIT:
            table = np.zeros((self.num_classes, self.num_topics), dtype=bool)
            table[self.class_of_entry, self.class_topics] = True
            subscribed: np.ndarray = table[self.member_class[members], topics]
            return subscribed
        t = max(self.num_topics, 1)
        keys = self.class_of_entry * t + self.class_topics  # ascending: classes, then topics
        query = self.member_class[members] * t + topics
        pos = np.searchsorted(keys, query)
        found: np.ndarray = pos < len(keys)
        found[found] = keys[pos[found]] == query[found]
        return found

    def subscriber_lists(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each topic's subscribers, listed in ``order`` (every member index, once).

        Topics subscribed by the same set of classes share one list. Returns ``(list_of_topic,
        indptr, members)``: topic ``t``'s subscribers are ``members[indptr[g]:indptr[g+1]]`` with
        ``g = list_of_topic[t]``; a topic nobody subscribes to has an empty list.
        """
        if self.num_classes == 1:
            # Everyone subscribes to the same topics: list 0 is every member, list 1 is empty.
            list_of_topic = np.ones(self.num_topics, dtype=np.int64)
            if self.num_members:
                list_of_topic[self.class_topics] = 0
            return list_of_topic, np.array([0, len(order), len(order)], dtype=np.int64), order
        if self.topic_class is not None:
            # One class per topic: the lists are the classes' members, grouped in one stable sort.
            ordered_class = self.member_class[order]
            grouped = stable_member_order(ordered_class, self.num_classes)
            indptr = np.zeros(self.num_classes + 2, dtype=np.int64)
            np.cumsum(np.bincount(ordered_class, minlength=self.num_classes), out=indptr[1 : self.num_classes + 1])
            indptr[-1] = indptr[-2]  # list C: empty, for topics nobody subscribes to
            list_of_topic = np.where(self.topic_class >= 0, self.topic_class, self.num_classes)
            return list_of_topic, indptr, order[grouped]
        classes_by_topic = np.argsort(self.class_topics, kind="stable")
        topic_bounds = np.searchsorted(self.class_topics[classes_by_topic], np.arange(self.num_topics + 1))
        entry_class = self.class_of_entry[classes_by_topic]
        signature_index: dict[bytes, int] = {}
        list_of_topic = np.empty(self.num_topics, dtype=np.int64)
        pieces: list[np.ndarray] = []
        ordered_class = self.member_class[order]
        for t in range(self.num_topics):
            classes = entry_class[topic_bounds[t] : topic_bounds[t + 1]]
            signature = classes.tobytes()
            g = signature_index.get(signature)
            if g is None:
                g = signature_index[signature] = len(pieces)
                if len(classes) == 0:
                    pieces.append(np.zeros(0, dtype=np.int64))
                elif len(classes) == 1:
                    pieces.append(order[ordered_class == classes[0]])
                else:
                    chosen = np.zeros(self.num_classes, dtype=bool)
                    chosen[classes] = True
                    pieces.append(order[chosen[ordered_class]])
            list_of_topic[t] = g
        indptr = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in pieces], out=indptr[1:])
        members = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        return list_of_topic, indptr, members

    @classmethod
    def build(
        cls,
        topic_names: Sequence[str],
        partition_counts: Sequence[int] | np.ndarray,
        topic_keys: np.ndarray,
        member_ids: Sequence[str],
        member_class: Sequence[int] | np.ndarray,
        class_topic_lists: Sequence[Sequence[int] | np.ndarray],
        current_owner: np.ndarray | None = None,
        instance_ids: Sequence[str | None] | None = None,
        held: tuple[np.ndarray, np.ndarray] | None = None,
        same_subscriptions: bool | None = None,
        subscription_sequence: np.ndarray | None = None,
        claim_position: np.ndarray | None = None,
        hashed_assignments: bool = True,
        iteration_order: np.ndarray | None = None,
    ) -> ServerGroup:
        """A group from arrays. ``topic_names`` in Java string order; ``class_topic_lists`` one
        list of topic indices per subscription class; ``current_owner`` one member index (or -1)
        per global partition; ``held`` the same assignment member-major, ``(held_indptr,
        held_partitions)``, when the caller has it (else it is derived from ``current_owner``)."""
        names = tuple(topic_names)
        if list(names) != java_sorted(names):
            raise InvalidInput("topic_names", "must be sorted in Java string order")
        counts = np.asarray(partition_counts, dtype=np.int64)
        lists = [np.unique(np.asarray(c, dtype=np.int64)) for c in class_topic_lists]
        indptr = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in lists], out=indptr[1:])
        total = int(counts.sum())
        owner = np.full(total, UNASSIGNED, dtype=np.int64) if current_owner is None else np.asarray(current_owner, dtype=np.int64)
        if len(owner) != total:
            raise InvalidInput("current_owner", f"expected {total} entries")
        m = len(member_ids)
        held_indptr, held_given = held if held is not None else (held_counts(owner, m), None)
        return cls(
            topic_names=names,
            partition_counts=counts,
            topic_keys=np.asarray(topic_keys, dtype=np.int64).reshape(len(names), 2),
            member_ids=tuple(member_ids),
            member_class=np.asarray(member_class, dtype=np.int64).reshape(m),
            class_indptr=indptr,
            class_topics=np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64),
            current_owner=owner,
            held_indptr=held_indptr,
            held_given=held_given,
            instance_ids=tuple(instance_ids) if instance_ids is not None else (None,) * m,
            same_subscriptions=same_subscriptions,
            subscription_sequence=subscription_sequence,
            claim_position=claim_position,
            hashed_assignments=hashed_assignments,
            iteration_order=iteration_order,
        )


def held_counts(owner: np.ndarray, num_members: int) -> np.ndarray:
    """``indptr`` (M+1,): member m holds ``indptr[m+1] - indptr[m]`` partitions of ``owner``."""
    holders = owner[owner >= 0]
    if len(holders) and holders.max() >= num_members:
        raise InvalidInput("current_owner", f"member index {int(holders.max())} out of range ({num_members} members)")
    indptr = np.zeros(num_members + 1, dtype=np.int64)
    np.cumsum(np.bincount(holders, minlength=num_members), out=indptr[1:])
    return indptr


def member_major(owner: np.ndarray, num_members: int) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, partitions)``: the partitions each member holds in ``owner``, ascending."""
    indptr = held_counts(owner, num_members)
    held = np.flatnonzero(owner >= 0)
    return indptr, held[stable_member_order(owner[held], num_members)]


def stable_member_order(holders: np.ndarray, num_members: int) -> np.ndarray:
    """``np.argsort(holders, kind="stable")`` for indices below ``num_members`` (members, or
    subscription classes): as int16 when they fit, which numpy sorts by radix (4x faster at
    500,000 partitions)."""
    if num_members <= np.iinfo(np.int16).max:
        holders = holders.astype(np.int16)
    order: np.ndarray = np.argsort(holders, kind="stable")
    return order


def subscription_iteration_order(topics: np.ndarray, topic_keys: np.ndarray, names_order: np.ndarray | None = None) -> np.ndarray:
    """``topics`` (indices, ascending) as ``new HashSet<>(subscribedTopicIds)`` iterates them:
    by bucket of ``Uuid.hashCode`` in a table sized for them, ties in insertion order
    (``names_order``: the topics as the member's HashSet of names yields them; default: topic
    index order)."""
    inserted = topics if names_order is None else names_order
    capacity = _capacity_of_copy(len(inserted))
    # Every topic, ascending (a class lists its topics so): the keys as they are, not a copy.
    every_topic = names_order is None and len(topics) == len(topic_keys)
    bucket = uuid_buckets(topic_keys if every_topic else topic_keys[inserted], capacity)
    if capacity <= np.iinfo(np.int16).max:  # a stable sort of 16-bit integers is numpy's radix sort
        bucket = bucket.astype(np.int16)
    ordered: np.ndarray = inserted[np.argsort(bucket, kind="stable")]
    return ordered


def uuid_buckets(keys: np.ndarray, capacity: int | np.ndarray) -> np.ndarray:
    """The ``HashMap`` bucket of each Uuid (rows of signed ``(msb, lsb)``) in a table of
    ``capacity``: ``Uuid.hashCode`` (the halves of msb ^ lsb, XORed), spread, masked. On int64
    throughout: only the low 32 bits are kept, so the sign of the shifts does not matter."""
    h: np.ndarray = keys[:, 0] ^ keys[:, 1]
    h ^= h >> 32
    h &= 0xFFFFFFFF
    h ^= h >> 16
    h &= np.asarray(capacity, dtype=np.int64) - 1
    return h


def held_iteration_order(member: np.ndarray, topic: np.ndarray, partition: np.ndarray, topic_keys: np.ndarray,
                         hashed: bool = True) -> np.ndarray:
    """Entries (member, topic, partition number), given in insertion order, as each member's
    assignment iterates them: the member's ``HashMap<Uuid, Set<Integer>>`` (built by puts, as
    ``Assignment.fromRecord`` does) bucket by bucket, each topic's ``new HashSet<>(list)`` bucket
    by bucket; ties in insertion order. Not ``hashed``: linked maps and sets, so topics in the
    order first inserted, partitions as inserted. Returns a permutation of the entries, member
    by member in ascending member index."""
    n = len(member)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n <= HELD_ORDER_LOOP_ENTRIES:
        return _held_iteration_order_small(member.tolist(), topic.tolist(), partition.tolist(), topic_keys, hashed)
    # Segments: maximal stretches of one (member, topic); runs: one per (member, topic), made of
    # one segment or more (a topic listed again later), first seen at its first segment's start.
    breaks = np.flatnonzero((member[1:] != member[:-1]) | (topic[1:] != topic[:-1])) + 1
    segment_start = np.concatenate(([0], breaks))
    segment_of = np.zeros(n, dtype=np.int64)
    segment_of[breaks] = 1
    np.cumsum(segment_of, out=segment_of)
    segment_key = member[segment_start] * (int(topic.max()) + 1) + topic[segment_start]
    if len(segment_start) == 1 or bool((segment_key[1:] > segment_key[:-1]).all()):
        run_start, run_of = segment_start, segment_of  # every run one segment (the usual input)
    else:
        _, first_segment, segment_run = np.unique(segment_key, return_index=True, return_inverse=True)
        run_start, run_of = segment_start[first_segment], segment_run.reshape(-1)[segment_of]
    if not hashed:  # each member's topics in the order first inserted, partitions as inserted
        inserted: np.ndarray = np.lexsort((run_start[run_of], member))
        return inserted
    run_member = member[run_start]
    run_size = np.bincount(run_of, minlength=len(run_start))
    topics_per_member = np.bincount(run_member)
    topic_bucket = uuid_buckets(topic_keys[topic[run_start]], _capacities(_PUT_CAPACITIES, capacities_after_puts, topics_per_member)[run_member])
    # Runs in iteration order: by member, topic bucket, first insertion; the rank of each run.
    run_rank = np.empty(len(run_start), dtype=np.int64)
    run_rank[np.lexsort((run_start, topic_bucket, run_member))] = np.arange(len(run_start), dtype=np.int64)
    partition_capacity = _capacities(_COPY_CAPACITIES, capacities_of_copies, run_size)
    # Integer.hashCode spread (java_spread) of partition numbers, which are non-negative ints.
    partition_bucket = (partition ^ (partition >> 16)) & (partition_capacity - 1)[run_of]
    # One key per entry (run rank, then partition bucket); the stable sort keeps insertion order
    # among equal keys. Bucket < capacity <= max(16, 4 * run size): the key stays far below 2**63.
    key = run_rank[run_of] * int(partition_capacity.max()) + partition_bucket
    ordered: np.ndarray = np.argsort(key, kind="stable")
    return ordered


# Table sizes of maps and sets of up to 1,023 entries, looked up (one gather instead of the
# formula's half a dozen numpy calls).
_COPY_CAPACITIES = capacities_of_copies(np.arange(1024))
_PUT_CAPACITIES = capacities_after_puts(np.arange(1024))


def _capacities(table: np.ndarray, formula: Callable[[np.ndarray], np.ndarray], counts: np.ndarray) -> np.ndarray:
    if int(counts.max(initial=0)) < len(table):
        looked_up: np.ndarray = table[counts]
        return looked_up
    return formula(counts)


# Up to this many entries, orders are computed on Python ints: the array path's fixed cost
# (about 40 numpy calls, 40-60 us here) is more than the loops' (about 1 us an entry).
HELD_ORDER_LOOP_ENTRIES = 40


def _spread_bucket(hash_code: int, capacity: int) -> int:
    h = hash_code & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def _uuid_hash(msb: int, lsb: int) -> int:
    h = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    return ((h >> 32) ^ h) & 0xFFFFFFFF


@functools.cache
def _capacity_of_copy(count: int) -> int:
    initial = max(int(np.float32(count) / np.float32(0.75)) + 1, 16)
    return 1 << (initial - 1).bit_length()


@functools.cache
def _capacity_after_puts(count: int) -> int:
    capacity = 16
    while count > capacity * 3 // 4:
        capacity *= 2
    return capacity


def _held_iteration_order_small(member: list[int], topic: list[int], partition: list[int], topic_keys: np.ndarray,
                                hashed: bool) -> np.ndarray:
    """``held_iteration_order`` on Python ints (same keys, same order): each member's entries
    grouped by topic in dicts (which keep first insertion order, the tie-break of both hash
    orders), then each member's topics and each topic's partitions put in bucket order, member
    by member."""
    runs: dict[int, dict[int, list[int]]] = {}
    for i, (m, t) in enumerate(zip(member, topic, strict=True)):
        of_member = runs.get(m)
        if of_member is None:
            runs[m] = {t: [i]}
        elif (entries := of_member.get(t)) is None:
            of_member[t] = [i]
        else:
            entries.append(i)
    order: list[int] = []
    if not hashed:  # topics in the order first inserted, partitions as inserted
        for m in sorted(runs):
            for entries in runs[m].values():
                order.extend(entries)
        return np.array(order, dtype=np.int64)
    distinct = sorted(set(topic))
    spread = {t: _spread_bucket(_uuid_hash(msb, lsb), 1 << 32)
              for t, (msb, lsb) in zip(distinct, topic_keys[distinct].tolist(), strict=True)}
    # Sorted as plain integers, bucket * n + entry index (ties in insertion order, which the
    # entry index is): no key function and no tuples to compare.
    n = len(member)
    for m in sorted(runs):
        of_member = runs[m]
        runs_of_member = list(of_member.values())
        if len(runs_of_member) > 1:  # topics by bucket, ties by first insertion (a run's first entry)
            mask = _capacity_after_puts(len(runs_of_member)) - 1
            by_first = {entries[0]: entries for entries in runs_of_member}
            keys = sorted([(spread[topic[first]] & mask) * n + first for first in by_first])
            runs_of_member = [by_first[k % n] for k in keys]
        for entries in runs_of_member:
            if len(entries) > 1:
                mask = _capacity_of_copy(len(entries)) - 1
                entries = [k % n for k in sorted([((partition[i] ^ (partition[i] >> 16)) & mask) * n + i for i in entries])]
            order.extend(entries)
    return np.array(order, dtype=np.int64)
