"""A consumer group's target assignment as its coordinator holds it: member id -> ``Partitions``.

A computed target is kept as the assignor's own answer, an owner per partition
(``assignors.server``), and a member's ``Partitions`` are made when something reads them (its
reconciliation, a record, a log line). At 10,000 members and 500,000 partitions, making every
member's sets after every computation cost a hundred times the assignor's own time; most
members read theirs one heartbeat at a time. The next computation reads the members' current
assignment back from the same array (``HeldPartitions``), not from the sets; when members only
joined since, it extends the last computation's group instead (``extended_group``): the
members keep their numbers, or are renumbered once in Kafka's order, and only the joiners are
looked at. Nothing is done member by member after the assignor answers: no entry, no set, no
comparison; which members' targets changed is read from the partitions that moved
(``changed_members``), when asked.

Entries set one by one (a group loaded from its records, a custom assignor's answer, a static
member's target moved to its new member id) are kept as given. Iteration follows insertion, as a
dict's does: members in the order the computation listed them.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from itertools import compress, islice, repeat
from operator import itemgetter

import numpy as np

from kafka_rebalance.assignors.server import Holdings, ServerGroup, ServerMember, flatten_claims, member_major
from kafka_rebalance.assignors.server.build import subscribed_name_order
from kafka_rebalance.model import (
    capacity_after_puts,
    java_hash_order,
    java_sorted,
    java_string_hashes,
    topic_offsets_of,
)
from kafka_rebalance.protocol.modern.consumer.assignment import Partitions

# Below one partition in this many moved, the members whose target changed are read from the
# moved partitions; above, from how many partitions each member kept (two counts, no scatter).
MOVED_FEW = 4

# A member's target is found by a scan of the owner array (0.3 ms at 500,000 partitions) for the
# first few members read after a computation; then every member's at once, by one sort (1-20 ms).
SCANS_BEFORE_SORTING = 16


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class MemberNumbering:
    """A computation's members in the coordinator's order (the order they joined) and in the
    group's (Kafka's iteration order, ``coordinator_member_order``), kept so that the next
    computation, when members only joined since, numbers its group without a pass over them."""

    ids: list[str]  # the coordinator's order
    position: dict[str, int]  # member id -> its place in ``ids``
    index: np.ndarray  # place in ``ids`` -> member index in the group
    order: np.ndarray  # member index in the group -> place in ``ids``
    hashes: np.ndarray  # ``String.hashCode`` of ``ids``
    views: Sequence[ServerMember] | None  # what the assignors saw of ``ids``, when the caller said
    # The numbering ``extended_group`` extended into this one (``ids`` begins with its ids), else
    # None; weak, so that a group's numberings do not pile up behind the last one.
    extends: weakref.ref[MemberNumbering] | None = None


def _numbering(group: ServerGroup, member_ids: Sequence[str], views: Sequence[ServerMember] | None) -> MemberNumbering:
    ids = list(member_ids)
    in_group = dict(zip(group.member_ids, range(group.num_members), strict=True))
    index = np.fromiter(map(in_group.__getitem__, ids), dtype=np.int64, count=len(ids))
    order = np.empty_like(index)
    order[index] = np.arange(len(ids), dtype=np.int64)
    return MemberNumbering(ids, dict(zip(ids, range(len(ids)), strict=True)), index, order,
                           java_string_hashes(ids), views)


class TargetAssignment(MutableMapping[str, Partitions]):
    """Member id -> target ``Partitions``; also the ``HeldPartitions`` of the next computation."""

    def __init__(self, targets: Mapping[str, Partitions] | None = None) -> None:
        self._explicit: dict[str, Partitions] = dict(targets or {})
        # Every member in order: a computed one's index in ``_group``, or -1 for one set by hand
        # (its sets in ``_explicit``). None: exactly the computed members, in ``_numbering``'s
        # order (made on the first change, so that a computation makes no entry per member).
        self._entries: dict[str, int] | None = dict.fromkeys(self._explicit, -1)
        self._group: ServerGroup | None = None
        self._owner: np.ndarray | None = None
        self._numbering: MemberNumbering | None = None
        self._held: Holdings | None = None
        self._made: list[Partitions | None] = []  # computed members' sets made so far, by place in ``ids``
        self._any_made = False  # some set in ``_made`` (or was: a set forgotten leaves it True)
        self._scans = 0  # members' targets found by a scan since the computation
        self._moved: np.ndarray | None = None  # partitions whose holder the computation changed
        self._changed: np.ndarray | None = None  # by member index: its target changed
        self._counts_after: np.ndarray | None = None  # by member index: partitions held (when most moved)
        # The target whose holdings the group's ``current_owner`` is (None: not known to be one).
        self._basis: weakref.ref[TargetAssignment] | None = None

    @classmethod
    def computed(cls, group: ServerGroup, owner: np.ndarray, member_ids: Sequence[str],
                 previous: TargetAssignment | None = None, *, views: Sequence[ServerMember] | None = None,
                 numbering: MemberNumbering | None = None, held_from_previous: bool = False) -> TargetAssignment:
        """The assignor's answer ``owner`` on ``group``, for ``member_ids`` (in this order; the
        assignors saw them as ``views``, when given; ``numbering`` when ``extended_group``
        numbered them). ``held_from_previous``: ``group``'s current assignment is ``previous``
        (``build_server_group_from_held`` or ``extended_group`` read it), so the members whose
        target changed are found from the partitions that moved (``changed_members``).

        The sets already made of ``previous`` are kept for the members whose target did not
        change: most members keep theirs when one joins or leaves, and making and freeing their
        sets again cost more than the computation. Only when the topics are laid out as
        before: a partition gone from the layout (a topic no longer subscribed, or fewer
        partitions) would otherwise stay in a set kept."""
        target = cls()
        target._entries = None
        target._group, target._owner = group, owner
        numbering = numbering or _numbering(group, member_ids, views)
        target._numbering = numbering
        if held_from_previous and previous is not None:
            target._basis = weakref.ref(previous)
        made = previous.made_in(numbering) if previous is not None and previous.laid_out_as(group) else None
        if made is not None:
            for at in numbering.order[np.flatnonzero(target._changed_mask())].tolist():
                made[at] = None
        target._made = made or [None] * len(numbering.ids)
        target._any_made = made is not None
        return target

    def made_in(self, numbering: MemberNumbering) -> list[Partitions | None] | None:
        """The computed members' sets made so far (read since the computation), each at its
        member's place in ``numbering`` (None where not made); None when none is."""
        before = self._numbering
        if before is None or not self._any_made:
            return None
        if self.prefix_of(numbering):  # members only joined: places kept
            return [*self._made, *repeat(None, len(numbering.ids) - len(before.ids))]
        made: list[Partitions | None] = [None] * len(numbering.ids)
        place = np.fromiter(map(numbering.position.get, before.ids, repeat(-1)), dtype=np.int64,
                            count=len(before.ids)).tolist()
        for at, sets in zip(place, self._made, strict=True):
            if at >= 0 and sets is not None:
                made[at] = sets
        return made

    def prefix_of(self, numbering: MemberNumbering) -> bool:
        """Whether this target is exactly the computed targets of the first members of
        ``numbering``, in its order (nothing set by hand or removed since)."""
        before = self._numbering
        if before is None or self._entries is not None:
            return False
        return (numbering.extends is not None and numbering.extends() is before) or before.ids == numbering.ids[:len(before.ids)]

    def laid_out_as(self, group: ServerGroup) -> bool:
        """Whether the last computation had the topics and partition counts of ``group``."""
        return (self._group is not None and self._group.topic_names == group.topic_names
                and np.array_equal(self._group.partition_counts, group.partition_counts))

    def _changed_mask(self) -> np.ndarray:
        """By member index of the computation: whether a partition moved to or from it."""
        if self._changed is None:
            assert self._group is not None and self._owner is not None
            before, owner, m = self._group.current_owner, self._owner, self._group.num_members
            moving = before != owner
            if MOVED_FEW * int(np.count_nonzero(moving)) <= len(owner):  # by the partitions that moved
                moved = np.flatnonzero(moving)
                changed = np.zeros(m + 1, dtype=bool)  # the last entry: no holder (-1)
                changed[before[moved]] = True
                changed[owner[moved]] = True
                self._moved, self._changed = moved, changed[:-1]
            else:  # most moved (range, a member joining): unchanged are those whose partitions all stayed
                after = np.bincount(owner + 1, minlength=m + 1)[1:]  # -1 (no holder) counted apart
                stayed = np.bincount(owner[~moving] + 1, minlength=m + 1)[1:]
                self._counts_after = after
                self._changed = (stayed != np.diff(self._group.held_indptr)) | (stayed != after)
        return self._changed

    def changed_members(self, previous: TargetAssignment) -> list[str]:
        """The members of this target whose partitions differ from their target in
        ``previous``, or who had none there, in this target's order: those Kafka's
        ``TargetAssignmentBuilder.build`` writes a ``ConsumerGroupTargetAssignmentMember``
        record for. When this target was computed from ``previous``'s holdings on the same
        layout, read from the partitions that moved (no set is made); otherwise compared set by
        set."""
        basis = self._basis() if self._basis is not None else None
        numbering = self._numbering
        if basis is not previous or numbering is None or not previous.laid_out_as(self._group_or_fail()):
            return [m for m in self if m not in previous or self[m] != previous[m]]
        changed = self._changed_mask()[numbering.index].tolist()  # by place in ``ids``
        if previous.prefix_of(numbering):  # the others joined since
            kept = len(previous)
            changed[kept:] = [True] * (len(changed) - kept)
        else:
            changed = [c or m not in previous for c, m in zip(changed, numbering.ids, strict=True)]
        if self._entries is None:
            return list(compress(numbering.ids, changed))
        listed = []
        for member_id, entry in self._entries.items():
            if entry >= 0:
                if changed[numbering.position[member_id]]:
                    listed.append(member_id)
            elif member_id not in previous or self._explicit[member_id] != previous[member_id]:
                listed.append(member_id)
        return listed

    def _group_or_fail(self) -> ServerGroup:
        assert self._group is not None
        return self._group

    def _computed_entries(self) -> dict[str, int]:
        """``_entries``, made now when still implied by the computation."""
        if self._entries is None:
            numbering = self._numbering
            assert numbering is not None
            self._entries = dict(zip(numbering.ids, numbering.index.tolist(), strict=True))
        return self._entries

    def __getitem__(self, member_id: str) -> Partitions:
        numbering = self._numbering
        if self._entries is None:
            assert numbering is not None
            at = numbering.position[member_id]
        else:
            entry = self._entries[member_id]
            if entry < 0:
                return self._explicit[member_id]
            assert numbering is not None
            at = int(numbering.order[entry])
        made = self._made[at]
        if made is None:
            made = self._made[at] = self._partitions_of(int(numbering.index[at]))
            self._any_made = True
        return made

    def __setitem__(self, member_id: str, target: Partitions) -> None:
        entries = self._computed_entries()
        self._forget_made(entries.get(member_id, -1))
        entries[member_id] = -1
        self._explicit[member_id] = target

    def __delitem__(self, member_id: str) -> None:
        entries = self._computed_entries()
        self._forget_made(entries.pop(member_id))
        self._explicit.pop(member_id, None)

    def _forget_made(self, entry: int) -> None:
        if entry >= 0 and self._numbering is not None:
            self._made[int(self._numbering.order[entry])] = None

    def __iter__(self) -> Iterator[str]:
        if self._entries is None:
            assert self._numbering is not None
            return iter(self._numbering.ids)
        return iter(self._entries)

    def __len__(self) -> int:
        if self._entries is None:
            assert self._numbering is not None
            return len(self._numbering.ids)
        return len(self._entries)

    def __contains__(self, member_id: object) -> bool:
        if self._entries is None:
            assert self._numbering is not None
            return member_id in self._numbering.position
        return member_id in self._entries

    def clear(self) -> None:
        self._entries = {}
        self._explicit.clear()
        self._made = []

    def _partitions_of(self, member: int) -> Partitions:
        """What member ``member`` of the computation holds, topics in Java order (as the
        assignors write a target)."""
        assert self._group is not None and self._owner is not None
        held_before = self._group.held_indptr
        if self._held is None and self._moved is not None and held_before[member] == held_before[member + 1]:
            moved = self._moved  # it held nothing: it holds what moved to it (a member who joined)
            numbers = moved[self._owner[moved] == member]
        elif self._held is None and self._scans < SCANS_BEFORE_SORTING:
            self._scans += 1
            numbers = np.flatnonzero(self._owner == member)
        else:
            if self._held is None:
                self._held = member_major(self._owner, self._group.num_members)
            indptr, held = self._held
            numbers = held[indptr[member]:indptr[member + 1]]
        if not len(numbers):
            return {}
        offsets = self._group.topic_offsets
        topics = np.searchsorted(offsets, numbers, side="right") - 1
        cuts = np.flatnonzero(np.diff(topics)) + 1
        starts = [0, *cuts.tolist()]
        ends = [*cuts.tolist(), len(numbers)]
        local = (numbers - offsets[topics]).tolist()
        names = self._group.topic_names
        return {names[t]: frozenset(local[a:b]) for t, a, b in zip(topics[starts].tolist(), starts, ends, strict=True)}

    def _held_counts(self) -> np.ndarray:
        """How many partitions each member of the computation holds in its answer: the group's
        holdings, with the moved partitions taken off and put on (no pass over every holder)."""
        assert self._group is not None and self._owner is not None
        if self._held is not None:
            return np.diff(self._held[0])
        self._changed_mask()
        if self._counts_after is not None:
            return self._counts_after
        moved = self._moved
        assert moved is not None
        m = self._group.num_members
        counts = np.diff(self._group.held_indptr)
        if len(moved):
            gave, took = self._group.current_owner[moved], self._owner[moved]
            counts = (counts - np.bincount(gave[gave >= 0], minlength=m)
                      + np.bincount(took[took >= 0], minlength=m))
        return counts

    def extended_group(self, topics: Mapping[str, int],
                       views: Sequence[ServerMember]) -> tuple[ServerGroup, MemberNumbering] | None:
        """The next computation's group when its ``views`` are this computation's, the same
        objects in the same order (no member changed or left), followed by members who joined
        since, and the topics ``topics`` are laid out as before (and nothing was set by hand):
        ``build_server_group_from_held``'s group, made from this one's arrays. The joiners are
        put in Kafka's iteration order among the others from the hash codes kept; the holders
        are this target's owner array renumbered, the holdings member by member (when read)
        kept as they are when the members kept their relative order. None otherwise."""
        group, owner, numbering = self._group, self._owner, self._numbering
        if group is None or owner is None or numbering is None or numbering.views is None or self._entries is not None:
            return None
        before = numbering.views
        n, m = len(before), len(views)
        if n == 0 or m <= n or group.num_members != n or group.same_subscriptions is None:
            return None
        if before != views[:n]:  # the same objects, as a rule: compared by identity first, in C
            return None
        counts = group.partition_counts.tolist()
        if len(topics) != len(counts) or any(topics.get(name) != count
                                             for name, count in zip(group.topic_names, counts, strict=True)):
            return None
        joined = list(islice(views, n, None))
        position = dict(numbering.position)
        for at, view in enumerate(joined, n):
            if position.setdefault(view.member_id, at) != at:
                return None  # a member listed twice: the builder says which
        ids = [*numbering.ids, *(view.member_id for view in joined)]
        hashes = np.concatenate((numbering.hashes, java_string_hashes(ids[n:])))
        in_kafka_order = java_hash_order(hashes, capacity_after_puts(m))  # places, as Kafka iterates them

        topic_index = {name: t for t, name in enumerate(group.topic_names)}
        class_of = {group.class_topics[a:b].tobytes(): c
                    for c, (a, b) in enumerate(zip(group.class_indptr[:-1].tolist(), group.class_indptr[1:].tolist(),
                                                   strict=True))}
        added: list[np.ndarray] = []
        joined_class = []
        for view in joined:
            topic_set = np.array(sorted({topic_index[t] for t in view.subscribed_topics if t in topic_index}),
                                 dtype=np.int64)
            c = class_of.setdefault(topic_set.tobytes(), group.num_classes + len(added))
            if c == group.num_classes + len(added):
                added.append(topic_set)
            joined_class.append(c)
        class_indptr, class_topics = group.class_indptr, group.class_topics
        if added:
            class_indptr = np.concatenate((class_indptr, class_indptr[-1] + np.cumsum([len(a) for a in added])))
            class_topics = np.concatenate((class_topics, *added))
        first_names = frozenset(before[0].subscribed_topics)
        same = group.same_subscriptions and all(frozenset(view.subscribed_topics) == first_names for view in joined)
        counts_before = self._held_counts()
        held_before = self._held[1] if self._held is not None else None

        if same:
            # The members keep their numbers and the joiners take the next ones, so the holders
            # are this answer's owner array as it is; Kafka's order goes in as ``iteration_order``
            # (the homogeneous builder walks it; no pass over the partitions).
            index = np.concatenate((numbering.index, np.arange(n, m, dtype=np.int64)))  # place -> member index
            walk = index[in_kafka_order]
            current, held = owner, held_before
            member_ids = (*group.member_ids, *ids[n:])
            member_class = np.concatenate((group.member_class, np.array(joined_class, dtype=np.int64)))
            instance_ids = (*group.instance_ids, *(view.instance_id for view in joined))
            held_counts = np.concatenate((counts_before, np.zeros(m - n, dtype=np.int64)))
        else:
            # Renumbered in Kafka's order (the heterogeneous builder would otherwise renumber the
            # partitions and the holdings both, and back): the members keep their relative order
            # unless the table grew, so the holdings are kept as they are then.
            index = np.empty_like(in_kafka_order)
            index[in_kafka_order] = np.arange(m, dtype=np.int64)
            walk = index[in_kafka_order]  # 0..m-1: index order is Kafka's
            renumber = np.full(n + 1, -1, dtype=np.int64)  # old member index -> new; the last: no holder
            renumber[numbering.index] = index[:n]
            current = np.take(renumber, owner)
            held = held_before
            if held_before is not None and not bool((renumber[1:n] > renumber[:n - 1]).all()):
                assert self._held is not None
                held = _renumbered(self._held, renumber[:n], m)[1]
            in_order = itemgetter(*in_kafka_order.tolist())  # m >= 2: a tuple
            member_ids = in_order(ids)
            member_class = np.empty(m, dtype=np.int64)
            member_class[index[:n]] = group.member_class[numbering.index]
            member_class[index[n:]] = joined_class
            instance_ids = tuple(view.instance_id for view in in_order(views))
            held_counts = np.zeros(m, dtype=np.int64)
            held_counts[renumber[:n]] = counts_before
        order = np.empty_like(index)  # member index -> place
        order[index] = np.arange(m, dtype=np.int64)
        held_indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(held_counts, out=held_indptr[1:])
        first = views[int(in_kafka_order[0])]
        first_before = before[int(numbering.order[group.iteration_order[0] if group.iteration_order is not None else 0])]
        sequence = (group.subscription_sequence if first is first_before
                    else subscribed_name_order(first.subscribed_topics, topic_index, group.topic_keys))
        extended = ServerGroup(
            topic_names=group.topic_names,
            partition_counts=group.partition_counts,
            topic_keys=group.topic_keys,
            member_ids=member_ids,
            member_class=member_class,
            class_indptr=class_indptr,
            class_topics=class_topics,
            current_owner=current,
            held_indptr=held_indptr,
            held_given=held,
            instance_ids=instance_ids,
            same_subscriptions=same,
            subscription_sequence=sequence,
            iteration_order=None if bool((walk == np.arange(m)).all()) else walk,
        )
        return extended, MemberNumbering(ids, position, index, order, hashes, views, weakref.ref(numbering))

    def explicit_out_of_order(self) -> list[str]:
        """Members set one by one whose topics are not listed in Java order (a target loaded from
        records written otherwise): only their ``assigned`` maps give Kafka's claim order."""
        return [member_id for member_id, target in self._explicit.items() if not _in_java_order(target)]

    def current_assignment(self, topic_names: Sequence[str], partition_counts: np.ndarray,
                           member_index: Mapping[str, int]) -> tuple[np.ndarray, Holdings | None] | None:
        """``HeldPartitions.current_assignment``: the targets of the members in ``member_index``
        as the holders of the layout ``topic_names``/``partition_counts``; member by member too
        when the members' targets were all read since the computation (they reconciled) and the
        layout is the same."""
        offsets = topic_offsets_of(partition_counts)
        owner = np.full(int(offsets[-1]), -1, dtype=np.int64)
        holdings = None
        position = {name: i for i, name in enumerate(topic_names)}
        explicit = [(member_index[member_id], target) for member_id, target in self._explicit.items()
                    if member_id in member_index]
        if not all(_in_java_order(target) for _, target in explicit):
            return None
        group = self._group
        if group is not None and self._owner is not None:
            # The last computation's member index -> the new one (-1: gone, or its target set by hand).
            renumber = np.full(group.num_members + 1, -1, dtype=np.int64)
            if self._entries is None:
                assert self._numbering is not None
                ids, was = self._numbering.ids, self._numbering.index
            else:
                ids = list(self._entries)
                was = np.fromiter(self._entries.values(), dtype=np.int64, count=len(ids))
            new = np.fromiter(map(member_index.get, ids, repeat(-1)), dtype=np.int64, count=len(ids))
            renumber[was[was >= 0]] = new[was >= 0]
            previous = self._owner  # -1 (no holder) indexes the last slot of ``renumber``: -1
            if group.topic_names == tuple(topic_names) and np.array_equal(group.partition_counts, partition_counts):
                owner = renumber[previous]
                if self._held is not None and not explicit:
                    holdings = _renumbered(self._held, renumber[:-1], len(member_index))
            else:  # topics came or went, or grew: each topic's kept partitions moved as one slice
                before = group.topic_offsets
                for t, name in enumerate(group.topic_names):
                    now = position.get(name)
                    if now is not None:
                        kept = int(min(group.partition_counts[t], partition_counts[now]))
                        owner[offsets[now]:offsets[now] + kept] = renumber[previous[before[t]:before[t] + kept]]
        if explicit:
            claimed, which = flatten_claims([target for _, target in explicit], position, partition_counts, offsets)
            if len(claimed) and (bool((owner[claimed] >= 0).any())
                                 or int(np.bincount(claimed, minlength=len(owner)).max()) > 1):
                return None  # two claims of one partition: the first in Kafka's member order wins
            owner[claimed] = np.array([index for index, _ in explicit], dtype=np.int64)[which]
        return owner, holdings


def _renumbered(holdings: Holdings, renumber: np.ndarray, members: int) -> Holdings:
    """Member-major holdings with old member ``j`` now ``renumber[j]`` (-1: gone) among
    ``members``: each member's slice moved, no sort."""
    indptr, held = holdings
    old_of = np.full(members, -1, dtype=np.int64)
    kept = renumber >= 0
    old_of[renumber[kept]] = np.flatnonzero(kept)
    present = old_of >= 0
    counts = np.where(present, np.diff(indptr)[old_of], 0)
    new_indptr = np.zeros(members + 1, dtype=np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    starts = np.where(present, indptr[old_of], 0)
    take = np.repeat(starts - new_indptr[:-1], counts) + np.arange(int(new_indptr[-1]), dtype=np.int64)
    return new_indptr, held[take]


def _in_java_order(target: Partitions) -> bool:
    names = list(target)
    return names == java_sorted(names)
