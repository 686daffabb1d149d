"""Kafka's server-side ``uniform`` assignor (group-coordinator ``assignor/UniformAssignor``).

Kafka picks one of two builders by subscription type; we pick by a wider test:

- Every topic subscribed by a single subscription class (all members subscribe to the same
  topics, or the group splits into classes with disjoint topics, as in Kafka's bucketed
  benchmark): each class is balanced on its own, and kept as sticky as balance allows. A class
  of ``m`` members and ``p`` partitions ends with ``p // m`` or one more per member (Kafka's
  ``UniformHomogeneousAssignmentBuilder`` target); every member keeps ``min(owned, target)``
  partitions, and the ``p % m`` larger targets go first to members that own more than
  ``p // m``, so no other balanced assignment keeps more partitions in place. (Kafka hands the
  larger targets out in hash-map order and may revoke a partition it could have kept.)
- Otherwise (overlapping, different subscriptions): a faithful port of Kafka's
  ``UniformHeterogeneousAssignmentBuilder``: drop partitions a member no longer subscribes to,
  deal unassigned partitions topic by topic to the least loaded subscribers, then move
  partitions from the most to the least loaded subscribers of each topic, at most 16 passes.
  Topic ties are broken by topic id (``Uuid.compareTo``).

Members are numbered in the order given. (Kafka numbers them in its member map's iteration
order; its own tests fix that order to sorted member ids, and list members so.)

Neither Kafka builder looks at racks (Kafka trunk of Sept 2024), so neither does this one.
"""

from __future__ import annotations

import numpy as np

from kafka_rebalance.assignors.server.group import ServerGroup
from kafka_rebalance.model import UNASSIGNED

# UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT
MAX_BALANCE_PASSES = 16


def uniform_assign(group: ServerGroup) -> np.ndarray:
    """The target owner (member index or -1) of every global partition."""
    if group.is_homogeneous:
        return assign_homogeneous(group)
    if group.topic_class is not None:
        if group.held_indptr[-1] == 0:
            return first_assignment_disjoint(group)
        reassigned = reassign_disjoint_all_held(group, group.topic_class)
        return assign_disjoint_classes(group, group.topic_class) if reassigned is None else reassigned
    return heterogeneous_assign(group)


def assign_homogeneous(group: ServerGroup) -> np.ndarray:
    """``assign_disjoint_classes`` for one class subscribed to every topic, in as few array
    passes as possible: for small groups the fixed cost of each numpy call is the whole cost.
    Reads each member's holdings member-major, so only the dropped partitions are visited."""
    m = group.num_members
    total = len(group.current_owner)
    quota, extras = divmod(total, m)
    members = np.arange(m, dtype=np.int64)
    indptr = group.held_indptr
    held = int(indptr[-1])
    if held == 0:  # first assignment: member i takes the next quota (+1 for the first extras)
        if extras == 0:
            return members.repeat(quota)
        target = np.full(m, quota, dtype=np.int64)
        target[:extras] += 1
        return members.repeat(target)
    owned = indptr[1:] - indptr[:-1]
    if extras:
        # The larger targets go first to members holding more than the quota, in member order.
        target = np.full(m, quota, dtype=np.int64)
        over = owned > quota
        to_owner = over.nonzero()[0][:extras]
        target[to_owner] += 1
        if len(to_owner) < extras:
            target[(~over).nonzero()[0][: extras - len(to_owner)]] += 1
        keep = np.minimum(owned, target)
        deficit = target - keep
        trimmed = (owned > keep).nonzero()[0]
        kept_of_trimmed = keep[trimmed]
    else:
        keep = np.minimum(owned, quota)
        deficit = quota - keep
        trimmed = (owned > quota).nonzero()[0]
        kept_of_trimmed = quota
    result = group.current_owner.copy()
    if len(trimmed):
        # Members above target keep their lowest partitions; the rest go back to the pool.
        dropped = group.held_partitions[tails(indptr[trimmed + 1], owned[trimmed] - kept_of_trimmed)]
        result[dropped] = UNASSIGNED
        if held == total:
            dropped.sort()
            free = dropped
        else:
            free = (result < 0).nonzero()[0]
    else:
        free = (result < 0).nonzero()[0] if held < total else np.zeros(0, dtype=np.int64)
    result[free] = members.repeat(deficit)
    return result


def _class_shares(group: ServerGroup) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For a group whose topics are each subscribed by one class: members per class, the topics
    of classes with members (class by class, ascending) and their sizes, partitions per class,
    and each class's quota and extras."""
    class_members = np.bincount(group.member_class, minlength=group.num_classes)
    entries = class_members[group.class_of_entry] > 0
    topics = group.class_topics[entries]
    lengths = group.partition_counts[topics]
    class_partitions = np.bincount(group.class_of_entry[entries], weights=lengths, minlength=group.num_classes).astype(np.int64)
    quota, extras = np.divmod(class_partitions, np.maximum(class_members, 1))
    return class_members, topics, lengths, class_partitions, quota, extras


def first_assignment_disjoint(group: ServerGroup) -> np.ndarray:
    """``assign_disjoint_classes`` when nobody holds anything, in fewer array calls: each class's
    members, in member order, take consecutive runs of the class's topics' partitions (the
    first ``extras`` of them one more than the quota)."""
    member_class = group.member_class
    class_members, topics, lengths, _, quota, extras = _class_shares(group)
    by_class = _stable_order(member_class, group.num_classes)
    sorted_class = member_class[by_class]
    rank = np.arange(len(by_class), dtype=np.int64) - (class_members.cumsum() - class_members)[sorted_class]
    takers = by_class.repeat(quota[sorted_class] + (rank < extras[sorted_class]))
    result = np.full(len(group.current_owner), UNASSIGNED, dtype=np.int64)
    ends = lengths.cumsum()
    result[(group.topic_offsets[topics] + lengths - ends).repeat(lengths) + np.arange(len(takers), dtype=np.int64)] = takers
    return result


def reassign_disjoint_all_held(group: ServerGroup, topic_class: np.ndarray) -> np.ndarray | None:
    """``assign_disjoint_classes`` when every subscribed partition is held by a subscriber of
    its topic (a group at its previous target, plus joiners holding nothing): reads holdings
    member-major and visits only the dropped partitions. None when that is not the case."""
    m, c = group.num_members, group.num_classes
    member_class = group.member_class
    _, _, _, class_partitions, quota, extras = _class_shares(group)
    indptr, held = group.held_indptr, group.held_partitions
    if int(indptr[-1]) != int(class_partitions.sum()):
        return None
    owned = indptr[1:] - indptr[:-1]
    if not (topic_class[group.partition_topic[held]] == member_class.repeat(owned)).all():
        return None
    member_quota = quota[member_class]
    by_class = np.arange(m, dtype=np.int64) if c == 1 else _stable_order(member_class, c)
    if extras.any():
        over = owned > member_quota
        extra_to_owner = _first_per_class(over, member_class, extras, by_class)
        left = extras - np.bincount(member_class[extra_to_owner], minlength=c)
        extra_to_other = _first_per_class(~over, member_class, left, by_class)
        target = member_quota + (extra_to_owner | extra_to_other)
    else:
        target = member_quota
    keep = np.minimum(owned, target)
    result = group.current_owner.copy()
    trimmed = (owned > keep).nonzero()[0]
    if not len(trimmed):
        return result
    # Members above target keep their lowest partitions; the rest are dealt again, class by
    # class in partition order, to members in (class, member) order.
    excess = owned[trimmed] - keep[trimmed]
    dropped = held[tails(indptr[trimmed + 1], excess)]
    total = len(result)
    free = np.sort(member_class[trimmed.repeat(excess)] * total + dropped) % total if c > 1 else np.sort(dropped)
    result[free] = by_class.repeat((target - keep)[by_class])
    return result


def tails(ends: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``ends[i] - lengths[i] .. ends[i] - 1`` for every i (all lengths positive), one after
    the other."""
    count = int(lengths.sum())
    if count == len(lengths):  # one each: the usual incremental case, members one above target
        return ends - 1
    indices: np.ndarray = (ends - lengths.cumsum()).repeat(lengths) + np.arange(count, dtype=np.int64)
    return indices


def heterogeneous_assign(group: ServerGroup, owner: np.ndarray | None = None) -> np.ndarray:
    """Kafka's heterogeneous builder on any group (``uniform_assign`` uses it only where
    subscriptions overlap); ``owner`` is the current owner array after revocation."""
    return _HeterogeneousBuilder(group, kept_current_owner(group) if owner is None else owner).build()


def kept_current_owner(group: ServerGroup) -> np.ndarray:
    """The current owner of every partition, or -1 where its owner no longer subscribes to its
    topic (Kafka's builders revoke those first)."""
    owner = group.current_owner.copy()
    held = np.flatnonzero(owner >= 0)
    if len(held):
        gone = ~group.is_subscribed(owner[held], group.partition_topic[held])
        owner[held[gone]] = UNASSIGNED
    return owner


def _first_per_class(eligible: np.ndarray, member_class: np.ndarray, allowance: np.ndarray, by_class: np.ndarray) -> np.ndarray:
    """Among members in ``by_class`` order (grouped by class), mark the first ``allowance[c]``
    eligible members of each class."""
    if len(allowance) == 1:
        first: np.ndarray = eligible & (np.cumsum(eligible) <= allowance[0])
        return first
    eligible_sorted = eligible[by_class]
    cls_sorted = member_class[by_class]
    running = np.cumsum(eligible_sorted)
    class_start = np.searchsorted(cls_sorted, cls_sorted)  # first position of each member's class
    before = np.where(class_start > 0, running[class_start - 1], 0)
    nth = running - before  # 1-based count of eligible members so far within the class
    chosen_sorted = eligible_sorted & (nth <= allowance[cls_sorted])
    chosen = np.zeros(len(eligible), dtype=bool)
    chosen[by_class] = chosen_sorted
    return chosen


def _stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """Stable argsort of small non-negative integers (< ``bound``): numpy's radix sort when the
    keys fit in 16 bits, linear in their number."""
    if bound <= 32767:  # int16
        keys = keys.astype(np.int16)
    return np.argsort(keys, kind="stable")


def assign_disjoint_classes(group: ServerGroup, topic_class: np.ndarray) -> np.ndarray:
    """Each class balanced on its own, keeping as many partitions in place as balance allows.

    Every step is a pass over arrays; only partitions of members above their target are sorted.
    """
    m, c = group.num_members, group.num_classes
    counts = group.partition_counts
    subscribed = topic_class >= 0
    class_partitions = np.bincount(topic_class[subscribed], weights=counts[subscribed], minlength=c).astype(np.int64)
    class_members = np.bincount(group.member_class, minlength=c)
    quota = class_partitions // np.maximum(class_members, 1)
    extras = class_partitions % np.maximum(class_members, 1)

    owner = group.current_owner
    first_assignment = group.held_indptr[-1] == 0
    if first_assignment:
        partition_class, valid, owned = None, None, np.zeros(m, dtype=np.int64)
    elif c == 1 and subscribed.all():
        # One class subscribed to every topic (the usual homogeneous group): any holder is valid.
        partition_class = None
        valid = owner >= 0
        owned = group.held_indptr[1:] - group.held_indptr[:-1]
    else:
        # A holder keeps a partition only if its class subscribes to the partition's topic.
        # Index -1 (no holder) reads the sentinel class -2, which no partition has.
        partition_class = np.repeat(topic_class, counts)
        valid = np.append(group.member_class, -2)[owner] == partition_class
        owned = np.bincount(owner[valid], minlength=m)

    member_quota = quota[group.member_class]
    by_class = np.arange(m, dtype=np.int64) if c == 1 else _stable_order(group.member_class, c)
    over = owned > member_quota
    extra_to_owner = _first_per_class(over, group.member_class, extras, by_class)
    left = extras - np.bincount(group.member_class[extra_to_owner], minlength=c)
    extra_to_other = _first_per_class(~over, group.member_class, left, by_class)
    target = member_quota + (extra_to_owner | extra_to_other)
    keep = np.minimum(owned, target)

    deficit = (target - keep)[by_class]
    takers = np.repeat(by_class, deficit)
    if first_assignment:
        # The pool is every partition of a subscribed topic, topics grouped by class.
        topics = np.flatnonzero(subscribed)
        if c > 1:
            topics = topics[_stable_order(topic_class[topics], c)]
        elif len(topics) == group.num_topics:
            return takers
        lengths = counts[topics]
        run_start = np.cumsum(lengths) - lengths
        free = np.repeat(group.topic_offsets[topics] - run_start, lengths) + np.arange(int(lengths.sum()))
        result = np.full(group.num_partitions, UNASSIGNED, dtype=np.int64)
        result[free] = takers
        return result
    assert valid is not None  # set on every path but the first assignment's

    trimmed = owned > keep
    if trimmed.any():
        # Members above target keep their lowest partitions; the rest go back to the pool.
        candidates = np.flatnonzero(valid & np.append(trimmed, False)[owner])
        holders = owner[candidates]
        order = np.argsort(holders, kind="stable")
        first = np.searchsorted(holders[order], holders[order])
        dropped = candidates[order][np.arange(len(order)) - first >= keep[holders[order]]]
        valid[dropped] = False
    result = np.where(valid, owner, UNASSIGNED)

    # Deal the pool, class by class in partition order, to members in (class, member id) order.
    free = np.flatnonzero(~valid if partition_class is None else ~valid & (partition_class >= 0))
    if c > 1:
        assert partition_class is not None  # several classes: the last branch above
        free = free[_stable_order(partition_class[free], c)]
    assert len(takers) == len(free), "deficits must cover the free partitions exactly"
    result[free] = takers
    return result


class _HeterogeneousBuilder:
    """UniformHeterogeneousAssignmentBuilder, ported step for step (members by index)."""

    def __init__(self, group: ServerGroup, owner: np.ndarray):
        self.group = group
        self.owner = owner.copy()
        list_of_topic, indptr, members = group.subscriber_lists(np.arange(group.num_members, dtype=np.int64))
        self.subscriber_list = list_of_topic
        self.subscriber_indptr = indptr
        self.subscriber_members = members  # ascending within each list
        self.subscriber_count = np.diff(indptr)[list_of_topic]
        self.sizes = np.bincount(self.owner[self.owner >= 0], minlength=group.num_members)

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
        offsets = self.group.topic_offsets
        free_by_topic = np.bincount(self.group.partition_topic[self.owner < 0], minlength=self.group.num_topics)
        topics = subscribed[free_by_topic[subscribed] > 0]
        for topic in self.sort_topics(topics).tolist():
            lo, hi = offsets[topic], offsets[topic + 1]
            free = lo + np.flatnonzero(self.owner[lo:hi] < 0)
            takers = least_loaded_sequence(self.subscribers(topic), self.sizes, len(free))
            self.owner[free] = takers
            self.sizes += np.bincount(takers, minlength=len(self.sizes))

    def balance(self, topics: np.ndarray) -> None:
        if not len(topics):
            return
        ordered = self.sort_topics(topics).tolist()
        last_rebalanced = -1
        for _ in range(MAX_BALANCE_PASSES):
            for index, topic in enumerate(ordered):
                if index == last_rebalanced:
                    return
                if self.balance_topic(topic) > 0 or last_rebalanced == -1:
                    last_rebalanced = index

    def balance_topic(self, topic: int) -> int:
        members = self.subscribers(topic)
        member_sizes = self.sizes[members]
        if member_sizes.max() - member_sizes.min() <= 1:
            return 0
        lo, hi = self.group.topic_offsets[topic], self.group.topic_offsets[topic + 1]
        owners = self.owner[lo:hi]
        local_owner = np.searchsorted(members, owners)  # subscribers are ascending
        sizes = member_sizes.tolist()
        balancer = _Balancer(sizes)
        balancer.initialize()
        partitions = np.lexsort((np.arange(hi - lo), local_owner))
        sorted_owner = local_owner[partitions]
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, o in enumerate(sorted_owner.tolist()):
            start.setdefault(o, i)
            end[o] = i + 1
        partition_list = partitions.tolist()
        new_owner = local_owner.tolist()
        moved = 0
        while not balancer.is_balanced():
            most = -1
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            end[most] -= 1
            partition = partition_list[end[most]]
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            sizes[new_owner[partition]] -= 1
            sizes[least] += 1
            new_owner[partition] = least
            moved += 1
        if moved:
            self.owner[lo:hi] = members[np.array(new_owner, dtype=np.int64)]
            self.sizes[members] = sizes
        return moved


def least_loaded_sequence(members: np.ndarray, sizes: np.ndarray, count: int) -> np.ndarray:
    """The members Kafka's ``MemberAssignmentBalancer.nextLeastLoadedMember`` returns, ``count``
    times: members sorted by (size, index); level by level, every member at or below the level
    takes one partition, in that order. Computed in closed form instead of one call at a time."""
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    member_sizes = sizes[members]
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


class _Balancer:
    """UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer over one topic's
    subscribers (local indices, ascending member index), reading live sizes."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes

    def initialize(self) -> int:
        sizes = self.sizes
        self.sorted = sorted(range(len(sizes)), key=lambda i: (sizes[i], i))
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
