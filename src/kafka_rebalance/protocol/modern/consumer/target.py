"""A consumer group's target assignment as its coordinator holds it: member id -> ``Partitions``.

A computed target is kept as the assignor's own answer, an owner per partition
(``assignors.server``), and a member's ``Partitions`` are made when something reads them (its
reconciliation, a record, a log line). At 10,000 members and 500,000 partitions, making every
member's sets after every computation cost a hundred times the assignor's own time; most
members read theirs one heartbeat at a time. The next computation reads the members' current
assignment back from the same array (``HeldPartitions``), not from the sets.

Entries set one by one (a group loaded from its records, a custom assignor's answer, a static
member's target moved to its new member id) are kept as given. Iteration follows insertion, as a
dict's does: members in the order the computation listed them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from itertools import compress, repeat

import numpy as np

from kafka_rebalance.assignors.server import Holdings, ServerGroup, flatten_claims, member_major
from kafka_rebalance.model import java_sorted, topic_offsets_of
from kafka_rebalance.protocol.modern.consumer.assignment import Partitions

# A member's target is found by a scan of the owner array (0.3 ms at 500,000 partitions) for the
# first few members read after a computation; then every member's at once, by one sort (1-20 ms).
SCANS_BEFORE_SORTING = 16


class TargetAssignment(MutableMapping[str, Partitions]):
    """Member id -> target ``Partitions``; also the ``HeldPartitions`` of the next computation."""

    def __init__(self, targets: Mapping[str, Partitions] | None = None) -> None:
        # Every member in order: a computed one's index in ``_group``, or -1 for one set by hand
        # (its sets in ``_explicit``).
        self._entries: dict[str, int] = dict.fromkeys(targets or {}, -1)
        self._explicit: dict[str, Partitions] = dict(targets or {})
        self._group: ServerGroup | None = None
        self._owner: np.ndarray | None = None
        self._held: Holdings | None = None
        self._made: dict[str, Partitions] = {}
        self._scans = 0  # members' targets found by a scan since the computation

    @classmethod
    def computed(cls, group: ServerGroup, owner: np.ndarray, member_ids: Sequence[str],
                 previous: TargetAssignment | None = None) -> TargetAssignment:
        """The assignor's answer ``owner`` on ``group``, for ``member_ids`` (in this order). The
        sets already made of ``previous`` (the target ``group`` held) are kept for the members
        whose target did not change: most members keep theirs when one joins or leaves, and
        making and freeing their sets again cost more than the computation. Only when the
        topics are laid out as before: a partition gone from the layout (a topic no longer
        subscribed, or fewer partitions) would otherwise stay in a set kept."""
        target = cls()
        target._group, target._owner = group, owner
        index = dict(zip(group.member_ids, range(group.num_members), strict=True))
        target._entries = dict(zip(member_ids, map(index.__getitem__, member_ids), strict=True))
        made = previous.made() if previous is not None and previous.laid_out_as(group) else {}
        if made:
            moved = group.current_owner != owner
            changed = np.zeros(group.num_members + 1, dtype=bool)  # the last entry: no holder (-1)
            changed[group.current_owner[moved]] = True
            changed[owner[moved]] = True
            made_ids = list(made)
            now = np.fromiter(map(index.get, made_ids, repeat(-1)), dtype=np.int64, count=len(made_ids))
            kept = (~changed[now]).tolist()
            target._made = dict(zip(compress(made_ids, kept), compress(made.values(), kept), strict=True))
        return target

    def laid_out_as(self, group: ServerGroup) -> bool:
        """Whether the last computation had the topics and partition counts of ``group``."""
        return (self._group is not None and self._group.topic_names == group.topic_names
                and np.array_equal(self._group.partition_counts, group.partition_counts))

    def made(self) -> Mapping[str, Partitions]:
        """The computed members' targets made so far (read since the computation)."""
        return self._made

    def __getitem__(self, member_id: str) -> Partitions:
        entry = self._entries[member_id]
        if entry < 0:
            return self._explicit[member_id]
        made = self._made.get(member_id)
        if made is None:
            made = self._made[member_id] = self._partitions_of(entry)
        return made

    def __setitem__(self, member_id: str, target: Partitions) -> None:
        self._entries[member_id] = -1
        self._explicit[member_id] = target
        self._made.pop(member_id, None)

    def __delitem__(self, member_id: str) -> None:
        del self._entries[member_id]
        self._explicit.pop(member_id, None)
        self._made.pop(member_id, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, member_id: object) -> bool:
        return member_id in self._entries

    def clear(self) -> None:
        self._entries.clear()
        self._explicit.clear()
        self._made.clear()

    def _partitions_of(self, member: int) -> Partitions:
        """What member ``member`` of the computation holds, topics in Java order (as the
        assignors write a target)."""
        assert self._group is not None and self._owner is not None
        if self._held is None and self._scans < SCANS_BEFORE_SORTING:
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
