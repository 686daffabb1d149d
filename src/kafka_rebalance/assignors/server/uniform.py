"""Kafka's server-side ``uniform`` assignor (group-coordinator ``assignor/UniformAssignor``),
as of Kafka 4.1: the same answers, partition for partition.

Kafka picks one of two builders by subscription type, and so does this module:

- Every member subscribes to the same topic names (``SubscriptionType.HOMOGENEOUS``):
  ``UniformHomogeneousAssignmentBuilder``, with KAFKA-18688's stability fix. Its answer
  depends on three iteration orders, all reproduced: the members' (``GroupSpec.memberIds()``,
  here member index order), the subscribed topic ids' (a ``HashSet<Uuid>``), and each member's
  current assignment's (a ``HashMap<Uuid, Set<Integer>>`` of ``HashSet<Integer>``); see
  ``ServerGroup.kafka_subscription_sequence`` and ``held_in_iteration_order``.
- Otherwise: ``UniformHeterogeneousAssignmentBuilder``, ported step for step: drop partitions
  a member no longer subscribes to, deal unassigned partitions topic by topic to the least
  loaded subscribers, then move partitions from the most to the least loaded subscribers of
  each topic, at most 16 passes. Topic ties are broken by topic id (``Uuid.compareTo``), member
  ties by member index; no hash order reaches the answer.

Neither Kafka builder looks at racks (Kafka 4.1), so neither does this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from kafka_rebalance.assignors.server.group import ServerGroup
from kafka_rebalance.model import UNASSIGNED

# UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT
MAX_BALANCE_PASSES = 16


def uniform_assign(group: ServerGroup) -> np.ndarray:
    """The target owner (member index or -1) of every global partition. Members are iterated
    in ``group.iteration_order`` (Kafka's ``GroupSpec.memberIds()`` order), else index order."""
    if group.kafka_homogeneous:  # walks the members in that order itself: no renumbering of the partitions
        return homogeneous_assign(group)
    ordered, order = group.in_iteration_order()
    owner = heterogeneous_assign(ordered)
    if order is None:
        return owner
    return np.where(owner >= 0, order[owner], UNASSIGNED)


def homogeneous_assign(group: ServerGroup) -> np.ndarray:
    """UniformHomogeneousAssignmentBuilder (Kafka 4.1, with KAFKA-18688's stability fix).

    Kafka walks the members once, in order: each keeps the first ``quota`` partitions of its
    current assignment in its map's iteration order and gives up the rest; the ``p % m``
    larger quotas go to members that already fill them, except that the last members take
    them when as many remain as members are left. Then the members below quota, in order,
    take the unassigned partitions in list order: first those nobody held (topics in the
    subscription's HashSet order, partitions ascending), then those given up (in the order
    given up). Here every step is one pass over arrays. The walk is over the members in
    ``group.iteration_order`` (positions below), each member's own arrays stay by member index.
    """
    m = group.num_members
    order = group.iteration_order
    if order is not None and bool((order == np.arange(m)).all()):
        order = None
    topics = group.first_member_topics  # ordered below only where the order matters
    if m == 0 or not len(topics):
        return np.full(group.num_partitions, UNASSIGNED, dtype=np.int64)
    counts = group.partition_counts
    subscribed_total = int(counts[topics].sum())
    quota, extras = divmod(subscribed_total, m)
    first_assignment = int(group.held_indptr[-1]) == 0
    if first_assignment and len(topics) == group.num_topics:
        return first_homogeneous_assignment(group, group.kafka_subscription_sequence, quota, extras, order)
    subscribed = np.zeros(group.num_topics, dtype=bool)
    subscribed[topics] = True

    owner = group.current_owner
    if len(topics) == group.num_topics:  # every topic subscribed: every holding counts
        held = group.held_indptr[1:] - group.held_indptr[:-1]
        result = owner.copy()
    else:  # holdings of topics nobody subscribes to any more are dropped
        valid = (owner >= 0) & subscribed[group.partition_topic]
        held = np.bincount(owner[valid], minlength=m)
        result = np.where(valid, owner, UNASSIGNED)
    if order is not None:
        held = held[order]  # by position in the walk from here on

    position = np.arange(m, dtype=np.int64)
    if extras:
        over = held > quota
        over_before: np.ndarray = np.cumsum(over) - over
        taken_before = np.minimum(over_before, extras)
        forced = (m - position) <= extras - taken_before
        first_forced = int(np.argmax(forced)) if forced.any() else m
        extra = np.where(position < first_forced, over & (over_before < extras), True)
        target = quota + extra
    else:
        target = np.full(m, quota, dtype=np.int64)
    keep = np.minimum(held, target)

    # Members above target give up what follows their first ``keep`` partitions in their
    # assignment's iteration order: only their holdings are put in that order.
    trimmed = np.flatnonzero(held > keep)
    given_up = np.zeros(0, dtype=np.int64)
    if len(trimmed):
        if order is None:
            sequence, member = group.held_in_iteration_order(trimmed)
        else:  # read by member index, then each member's holdings put at its position in the walk
            walk_position = np.empty(m, dtype=np.int64)
            walk_position[order] = position
            sequence, member = group.held_in_iteration_order(np.sort(order[trimmed]))
            in_walk = np.argsort(walk_position[member], kind="stable")
            sequence, member = sequence[in_walk], walk_position[member][in_walk]
        if len(topics) != group.num_topics:
            mine = subscribed[group.partition_topic[sequence]]
            sequence, member = sequence[mine], member[mine]
        counts_trimmed = held[trimmed]
        rank = np.arange(len(sequence), dtype=np.int64) - np.repeat(np.cumsum(counts_trimmed) - counts_trimmed, counts_trimmed)
        given_up = sequence[rank >= keep[member]]
        result[given_up] = UNASSIGNED

    if int(held.sum()) == subscribed_total:  # every subscribed partition is held: none to deal first
        nobody = np.zeros(0, dtype=np.int64)
    else:  # the partitions nobody holds, topic by topic in the subscription's order
        topics = group.kafka_subscription_sequence
        lengths = counts[topics]
        run_start = np.cumsum(lengths) - lengths
        pool = np.repeat(group.topic_offsets[topics] - run_start, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
        nobody = pool if first_assignment else pool[owner[pool] < 0]
    free = np.concatenate((nobody, given_up)) if len(given_up) else nobody
    takers = np.repeat(position if order is None else order, target - keep)
    assert len(takers) == len(free), "quotas must cover the unassigned partitions exactly"
    result[free] = takers
    return result


def first_homogeneous_assignment(group: ServerGroup, topics: np.ndarray, quota: int, extras: int,
                                 order: np.ndarray | None = None) -> np.ndarray:
    """``homogeneous_assign`` when nobody holds anything and every topic is subscribed: nobody
    fills a larger quota, so the last ``extras`` members are the ones made to take one, and the
    members in order (``order``: member indices in the walk, else index order) take the
    partitions topic by topic in the subscription's order."""
    m = group.num_members
    position = np.arange(m, dtype=np.int64)
    takers = np.repeat(position if order is None else order, quota + (position >= m - extras))
    rank = np.empty(len(topics), dtype=np.int64)
    rank[topics] = np.arange(len(topics), dtype=np.int64)  # each topic's place in the subscription
    counts = group.partition_counts
    size = int(counts[0])
    if (counts == size).all():  # topics of one size: whole rows of the deal, put in topic order
        by_topic: np.ndarray = takers.reshape(len(topics), size)[rank].reshape(-1)
        return by_topic
    dealt_before = np.cumsum(counts[topics]) - counts[topics]  # the deal's offset of each topic
    start = dealt_before[rank]
    result: np.ndarray = takers[np.repeat(start - group.topic_offsets[:-1], counts) + np.arange(len(takers), dtype=np.int64)]
    return result


def heterogeneous_assign(group: ServerGroup) -> np.ndarray:
    """Kafka's heterogeneous builder on any group (``uniform_assign`` uses it only where
    subscriptions overlap)."""
    return _HeterogeneousBuilder(group, *kept_owner_and_sizes(group)).build()


def kept_owner_and_sizes(group: ServerGroup) -> tuple[np.ndarray, np.ndarray]:
    """The current owner of every partition, or -1 where its owner no longer subscribes to its
    topic (Kafka's builders revoke those first); and how many partitions each member keeps."""
    owner = group.current_owner.copy()
    sizes = group.held_indptr[1:] - group.held_indptr[:-1]
    if not int(group.held_indptr[-1]):  # a first assignment: nothing held, nothing to revoke
        return owner, sizes
    topic_class = group.topic_class
    if topic_class is not None:  # one class per topic: an owner of another class no longer subscribes
        small = np.int16 if group.num_classes < np.iinfo(np.int16).max else np.int64
        member_class = np.empty(group.num_members + 1, dtype=small)
        member_class[:-1] = group.member_class
        member_class[-1] = -2  # the class of "no owner" (index -1): no topic's
        elsewhere = np.flatnonzero(member_class[owner] != np.repeat(topic_class.astype(small), group.partition_counts))
        revoked = elsewhere[owner[elsewhere] >= 0]
    else:
        holding = np.flatnonzero(owner >= 0)
        revoked = holding[~group.is_subscribed(owner[holding], group.partition_topic[holding])]
    if len(revoked):
        sizes = sizes - np.bincount(owner[revoked], minlength=group.num_members)
        owner[revoked] = UNASSIGNED
    return owner, sizes


class _HeterogeneousBuilder:
    """UniformHeterogeneousAssignmentBuilder, ported step for step (members by index)."""

    def __init__(self, group: ServerGroup, owner: np.ndarray, sizes: np.ndarray):
        self.group = group
        self.owner = owner  # the builder's own copy: written in place
        self.sizes = sizes  # partitions each member holds in ``owner``
        list_of_topic, indptr, members = group.subscriber_lists(np.arange(group.num_members, dtype=np.int64))
        self.subscriber_list = list_of_topic
        self.subscriber_indptr = indptr
        self.subscriber_members = members  # ascending within each list
        self.subscriber_count = (indptr[1:] - indptr[:-1])[list_of_topic]
        # Lists no other list shares a member with (one subscription class per topic): a deal
        # or a move within one list leaves every other list's sizes as they were.
        self.disjoint_lists = group.topic_class is not None
        # Lists whose subscribers are known to be within one partition of each other (valid
        # until a move changes the sizes of their members).
        self.settled: set[int] = set()

    def subscribers(self, topic: int) -> np.ndarray:
        g = self.subscriber_list[topic]
        return self.subscriber_members[self.subscriber_indptr[g] : self.subscriber_indptr[g + 1]]

    def sort_topics(self, topics: np.ndarray) -> np.ndarray:
        """Partitions per subscriber descending, then subscriber count ascending, then topic id."""
        counts = self.group.partition_counts[topics].astype(np.float64)
        subscribers = self.subscriber_count[topics]
        keys = self.group.topic_keys[topics]
        return topics[np.lexsort((keys[:, 1], keys[:, 0], subscribers, -(counts / subscribers)))]

    def build(self) -> np.ndarray:
        subscribed = np.flatnonzero(self.subscriber_count > 0)
        if len(subscribed):
            self.assign_remaining(subscribed)
            self.balance(subscribed[self.subscriber_count[subscribed] >= 2])
        return self.owner

    def assign_remaining(self, subscribed: np.ndarray) -> None:
        """Topic by topic (``sort_topics``), each topic's unassigned partitions (ascending) to
        its least loaded subscribers. Where subscriber lists are disjoint, a list whose sizes
        are within one is dealt to by a ``LevelDealer`` on Python lists (the same members, a
        few list operations per topic instead of a dozen numpy calls), and the partitions are
        written once at the end."""
        offsets = self.group.topic_offsets
        unassigned = self.owner < 0
        free_by_topic = np.bincount(self.group.partition_topic[unassigned], minlength=self.group.num_topics)
        topics = subscribed[free_by_topic[subscribed] > 0]
        if not self.disjoint_lists:  # a deal changes sizes that other topics' deals read
            for topic in self.sort_topics(topics).tolist():
                lo, hi = offsets[topic], offsets[topic + 1]
                free = lo + np.flatnonzero(self.owner[lo:hi] < 0)
                takers = least_loaded_sequence(self.subscribers(topic), self.sizes, len(free))
                self.owner[free] = takers
                np.add.at(self.sizes, takers, 1)
            return
        free_count = free_by_topic.tolist()
        list_of_topic = self.subscriber_list.tolist()
        dealers: dict[int, LevelDealer | ArrayLevelDealer] = {}
        takers_of: dict[int, list[int] | np.ndarray] = {}
        for topic in self.sort_topics(topics).tolist():
            g = list_of_topic[topic]
            dealer = dealers.get(g)
            if dealer is None:
                members = self.subscribers(topic)
                member_sizes = self.sizes[members]
                if member_sizes.max() - member_sizes.min() <= 1:
                    dealer = dealers[g] = (ArrayLevelDealer(members, member_sizes) if len(members) >= ARRAY_DEALER_MEMBERS
                                           else LevelDealer(members.tolist(), member_sizes.tolist()))
                else:  # more than two levels: numpy's closed form, until the list is within one
                    takers = least_loaded_sequence(members, self.sizes, free_count[topic])
                    np.add.at(self.sizes, takers, 1)
                    takers_of[topic] = takers
                    continue
            count = free_count[topic]
            takers_of[topic] = dealer.deal(count) if count < LARGE_DEAL else dealer.deal_array(count)
        dealt = sorted(takers_of)
        takers = concatenated(map(takers_of.__getitem__, dealt))
        if len(takers) == len(self.owner):  # every partition was free and dealt: a first assignment
            self.owner[:] = takers
        else:
            in_dealt = np.zeros(self.group.num_topics, dtype=bool)
            in_dealt[dealt] = True
            free = np.flatnonzero(unassigned & in_dealt[self.group.partition_topic])  # topic by topic, ascending
            assert len(takers) == len(free)
            self.owner[free] = takers
        for dealer in dealers.values():
            listed, sizes = dealer.sizes()
            self.sizes[listed] = sizes

    def balance(self, topics: np.ndarray) -> None:
        if not len(topics) or self.all_within_one(topics):
            return  # no topic would move a partition: Kafka's passes end without a change
        ordered = self.sort_topics(topics).tolist()
        last_rebalanced = -1
        for _ in range(MAX_BALANCE_PASSES):
            for index, topic in enumerate(ordered):
                if index == last_rebalanced:
                    return
                if self.balance_topic(topic) > 0 or last_rebalanced == -1:
                    last_rebalanced = index

    def all_within_one(self, topics: np.ndarray) -> bool:
        """Are the subscribers of each of ``topics`` within one partition of each other?"""
        lists = np.unique(self.subscriber_list[topics])
        starts, ends = self.subscriber_indptr[lists], self.subscriber_indptr[lists + 1]
        lists, starts = lists[ends > starts], starts[ends > starts]
        if not len(lists):
            return True
        sizes = self.sizes[self.subscriber_members]
        # Each list is a run of subscriber_members; reduceat over the runs' starts (in order).
        order = np.argsort(starts)
        bounds = starts[order]
        ends_sorted = self.subscriber_indptr[lists[order] + 1]
        spans = np.maximum.reduceat(sizes, bounds) - np.minimum.reduceat(sizes, bounds)
        contiguous = (np.append(bounds[1:], len(sizes)) == ends_sorted).all()
        if not contiguous:  # runs with gaps between them: reduce each run on its own
            spans = np.array([int(sizes[a:b].max() - sizes[a:b].min()) for a, b in zip(bounds, ends_sorted, strict=True)])
        return bool((spans <= 1).all())

    def balance_topic(self, topic: int) -> int:
        g = int(self.subscriber_list[topic])
        if g in self.settled:
            return 0
        members = self.subscribers(topic)
        member_sizes = self.sizes[members]
        if member_sizes.max() - member_sizes.min() <= 1:
            self.settled.add(g)
            return 0
        lo, hi = self.group.topic_offsets[topic], self.group.topic_offsets[topic + 1]
        local_of = np.empty(self.group.num_members, dtype=np.int16 if len(members) <= np.iinfo(np.int16).max else np.int64)
        local_of[members] = np.arange(len(members))  # subscribers are ascending: local index order is member order
        local_owner = local_of[self.owner[lo:hi]]  # every partition of a subscribed topic has a subscriber now
        sizes = member_sizes.tolist()
        balancer = _Balancer(sizes)
        balancer.initialize()
        # Each subscriber's partitions of the topic, ascending: partitions[start[o]:end[o]]
        # (a stable sort of 16-bit owners is numpy's radix sort).
        partitions = np.argsort(local_owner, kind="stable")
        counts = np.bincount(local_owner, minlength=len(members))
        end = np.cumsum(counts).tolist()
        start = [e - c for e, c in zip(end, counts.tolist(), strict=True)]
        moved_partitions: list[int] = []
        moved_to: list[int] = []
        while not balancer.is_balanced():
            most = -1
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            # A partition leaves its owner's run as it moves, so its owner is still ``most``.
            sizes[most] -= 1
            sizes[least] += 1
            moved_partitions.append(end[most])
            moved_to.append(least)
        moved = len(moved_to)
        if moved:
            self.owner[lo + partitions[moved_partitions]] = members[moved_to]
            self.sizes[members] = sizes
            if not self.disjoint_lists:  # members of this list are in others too
                self.settled.clear()
        return moved


def least_loaded_sequence(members: np.ndarray, sizes: np.ndarray, count: int) -> np.ndarray:
    """The members Kafka's ``MemberAssignmentBalancer.nextLeastLoadedMember`` returns, ``count``
    times: members sorted by (size, index); level by level, every member at or below the level
    takes one partition, in that order. Computed in closed form instead of one call at a time."""
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    member_sizes = sizes[members]
    low, high = int(member_sizes.min()), int(member_sizes.max())
    if high - low <= 1:
        # The usual case once partitions are dealt: two levels. The lower members (index order)
        # take one each, then everyone in (size, index) order, again and again.
        at_low = member_sizes == low
        ranked = np.concatenate((members[at_low], members[~at_low])) if high > low else members
        lower = int(at_low.sum())
        if count <= lower:
            return ranked[:count]
        return np.concatenate((ranked[:lower], np.resize(ranked, count - lower)))
    order = np.argsort(member_sizes, kind="stable")  # members are ascending, so ties keep index order
    ranked, level0 = members[order], member_sizes[order]

    def taken_through(level: int) -> int:
        return int(np.maximum(level - level0 + 1, 0).sum())

    low, high = int(level0[0]), int(level0[0]) + count  # taken_through(high) >= count
    while low < high:
        mid = (low + high) // 2
        if taken_through(mid) >= count:
            high = mid
        else:
            low = mid + 1
    last_level = low
    full = np.maximum(last_level - level0, 0)  # picks on levels below last_level
    remainder = count - int(full.sum())
    per_member = full + (np.arange(len(ranked)) < remainder)
    position = np.repeat(np.arange(len(ranked)), per_member)
    first = np.zeros(len(ranked) + 1, dtype=np.int64)
    np.cumsum(per_member, out=first[1:])
    level = level0[position] + (np.arange(len(position)) - first[position])
    sequence = np.lexsort((position, level))
    return ranked[position[sequence]]


# From this many partitions a deal is built as an array: a list's per-element cost overtakes
# numpy's per-call cost.
LARGE_DEAL = 64


def concatenated(pieces: Iterable[list[int] | np.ndarray]) -> np.ndarray:
    """Lists and arrays of member indices, one array: runs of lists joined as one list first."""
    arrays: list[np.ndarray] = []
    pending: list[int] = []
    for piece in pieces:
        if isinstance(piece, list):
            pending.extend(piece)
        else:
            if pending:
                arrays.append(np.array(pending, dtype=np.int64))
                pending = []
            arrays.append(piece)
    if pending or not arrays:
        arrays.append(np.array(pending, dtype=np.int64))
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


class LevelDealer:
    """``least_loaded_sequence`` call after call on one subscriber list whose sizes are within
    one of each other and change only through these calls. The state is the members still on
    the lower level (ascending) and those a level up (ascending); a call takes the lower ones
    in order, then everyone, lower ones first, round after round."""

    def __init__(self, members: list[int], sizes: list[int]):
        low = min(sizes)
        self.level = low  # the size of the members in low[taken:]; the others have one more
        self.members = members  # ascending
        if low == max(sizes):  # one level (a first assignment)
            self.low, self.high = members, []
        else:
            self.low = [m for m, s in zip(members, sizes, strict=True) if s == low]
            self.high = [m for m, s in zip(members, sizes, strict=True) if s != low]
        self.taken = 0  # low[:taken] have moved up a level since low was listed

    def deal(self, count: int) -> list[int]:
        head, ranked, rounds, partial = self.advance(count)
        return head + ranked * rounds + ranked[:partial]

    def deal_array(self, count: int) -> np.ndarray:
        """``deal`` as an array (large deals: repeated in numpy rather than in a list)."""
        return dealt_rounds(*self.advance(count))

    def advance(self, count: int) -> tuple[list[int], list[int], int, int]:
        """Deal ``count``: the members taking one first (``head``), then the ``ranked`` members
        ``rounds`` times over and the first ``partial`` of them once more."""
        low, taken = self.low, self.taken
        lower = len(low) - taken
        if count < lower:
            self.taken = taken + count
            return low[taken : taken + count], [], 0, 0
        rest = low[taken:]
        if count == lower:  # everyone on one level again
            self.low, self.high, self.taken = self.members, [], 0
            self.level += 1
            return rest, [], 0, 0
        ranked = rest + (sorted(self.high + low[:taken]) if taken else self.high)
        rounds, partial = divmod(count - lower, len(ranked))
        self.level += 1 + rounds
        if partial:
            self.low, self.high = sorted(ranked[partial:]), sorted(ranked[:partial])
        else:
            self.low, self.high = self.members, []
        self.taken = 0
        return rest, ranked, rounds, partial

    def sizes(self) -> tuple[list[int], list[int]]:
        """The members still below (at ``level``) and then the rest (a level up), with their
        sizes now."""
        below = self.low[self.taken :]
        lower = set(below)
        above = [m for m in self.members if m not in lower] if len(below) != len(self.members) else []
        return below + above, [self.level] * len(below) + [self.level + 1] * len(above)


def dealt_rounds(head: Sequence[int] | np.ndarray, ranked: Sequence[int] | np.ndarray, rounds: int, partial: int) -> np.ndarray:
    """``head``, then ``ranked`` ``rounds`` times over, then the first ``partial`` of ``ranked``."""
    row = np.asarray(ranked, dtype=np.int64)
    out = np.empty(len(head) + rounds * len(row) + partial, dtype=np.int64)
    out[: len(head)] = head
    if rounds:
        out[len(head) : len(head) + rounds * len(row)].reshape(rounds, len(row))[:] = row
    out[len(out) - partial :] = row[:partial]
    return out


class ArrayLevelDealer:
    """``LevelDealer`` on arrays, for long subscriber lists: the same state and the same deals,
    each step a few numpy calls instead of list operations per member."""

    def __init__(self, members: np.ndarray, sizes: np.ndarray):
        low = int(sizes.min())
        self.level = low
        self.members = members  # ascending
        if low == int(sizes.max()):
            self.low, self.high = members, members[:0]
        else:
            at_low = sizes == low
            self.low, self.high = members[at_low], members[~at_low]
        self.taken = 0

    def deal(self, count: int) -> np.ndarray:
        return dealt_rounds(*self.advance(count))

    def deal_array(self, count: int) -> np.ndarray:
        return self.deal(count)

    def advance(self, count: int) -> tuple[np.ndarray, np.ndarray, int, int]:
        """As ``LevelDealer.advance``."""
        low, taken = self.low, self.taken
        lower = len(low) - taken
        if count < lower:
            self.taken = taken + count
            return low[taken : taken + count], low[:0], 0, 0
        rest = low[taken:]
        if count == lower:
            self.low, self.high, self.taken = self.members, self.members[:0], 0
            self.level += 1
            return rest, low[:0], 0, 0
        ranked = np.concatenate((rest, np.sort(np.concatenate((self.high, low[:taken]))) if taken else self.high))
        rounds, partial = divmod(count - lower, len(ranked))
        self.level += 1 + rounds
        if partial:
            self.low, self.high = np.sort(ranked[partial:]), np.sort(ranked[:partial])
        else:
            self.low, self.high = self.members, self.members[:0]
        self.taken = 0
        return rest, ranked, rounds, partial

    def sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """As ``LevelDealer.sizes``."""
        below = self.low[self.taken :]
        above = self.members[:0]
        if len(below) != len(self.members):
            keep = np.ones(len(self.members), dtype=bool)
            keep[np.searchsorted(self.members, below)] = False
            above = self.members[keep]
        level = np.full(len(below) + len(above), self.level + 1, dtype=np.int64)
        level[: len(below)] = self.level
        return np.concatenate((below, above)), level


# From this many subscribers a list is dealt to on arrays (``ArrayLevelDealer``).
ARRAY_DEALER_MEMBERS = 128


class _Balancer:
    """UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer over one topic's
    subscribers (local indices, ascending member index), reading live sizes."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes

    def initialize(self) -> int:
        sizes = self.sizes
        self.sorted = sorted(range(len(sizes)), key=sizes.__getitem__)  # stable: ties by index
        n = len(self.sorted)
        self.least_end = 0
        self.least_count = sizes[self.sorted[0]] - 1
        self.next_least = 0
        self.most_start = n
        self.most_end = n
        self.most_count = sizes[self.sorted[-1]] + 1
        self.next_most = n - 1
        return sizes[self.sorted[-1]] - sizes[self.sorted[0]]

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(self.sorted) and self.sizes[self.sorted[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = self.sorted[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = self.sizes[self.sorted[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and self.sizes[self.sorted[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.sorted[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        i = self.next_most + 1
        self.sorted[i], self.sorted[self.most_end - 1] = self.sorted[self.most_end - 1], self.sorted[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1
