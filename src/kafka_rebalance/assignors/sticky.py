"""StickyAssignor and CooperativeStickyAssignor on columnar arrays.

Goals, in Kafka's order: (1) balance: no member holds two or more partitions more than
another member that could take one of them; (2) stickiness: keep as many partitions with their
previous owner as (1) allows.

How, without per-partition Python objects:
- Topics with the same set of subscribers form a *topic class*; inside a class partitions are
  interchangeable for balance, so balance is decided on counts: ``y[m, k]`` partitions of class
  ``k`` for member ``m``, next to ``x[m, k]``, how many of them ``m`` previously owned.
- Start from the previous ownership, hand out unowned partitions by water-filling (lowest
  count first), class after class, then re-deal each class's unowned partitions against the
  others until that settles (with overlapping subscriptions, one pass leaves most classes
  unbalanced).
- Then repair every class whose holders are 2+ above one of its subscribers. The cheap,
  stickiness-neutral steps come first, and they move load in bulk:
  1. in every class at once, the busiest member holding partitions *new* to it (y > x) hands
     half the load gap of them to the class's idlest member (classes sharing a member wait for
     the next round, so every move is decided on current loads);
  2. a chain: a breadth-first search from the violated class's idlest member (or busiest
     holder) over "member passes a new partition of a shared class on" finds the nearest
     member 2+ away in load, and the chain's tightest link (and half the gap) moves at once;
     the members in between only trade one class for another;
  3. a single new-partition move that lowers the number of violated classes (lets a
     cooperative follow-up land exactly on the previous round's target);
  4. else re-level the class, ties going to the member that keeps a previously owned
     partition, together with every other violated class that shares no member with the
     classes re-levelled in that step.
  Why: with random subscriptions (a class per topic, every member in a dozen classes) one
  re-level shifts a unit into a member of an overlapping class, which re-levels next, and so
  on; one unit per step took 26,178 steps (6 s) at a million partitions. Steps 1-2 carry the
  new partitions along those chains in bulk and step 4 repairs unrelated classes together
  (~1,500 steps, ~0.8 s), and since 1-2 never move a previously owned partition, fewer kept
  ones move (17k instead of 22.6k there). Steps 1, 2 and 4 strictly lower the sum of squared
  loads and step 3 does not raise it while lowering the violated count, so the loop cannot cycle. When
  it ends no single move can improve balance (Kafka's definition of balanced).
- Regain: once balanced, a member holding fewer of a class than it owned gets one back from a
  member for whom it is new, directly or by a swap of two classes, whenever the result is
  still balanced (each repair step is a local choice and can leave a few of these behind).
- Scale: everything above is on counts (members x classes), and "which classes are violated"
  is a handful of numpy reductions over the flat class-membership arrays (``_ClassIndex``), so
  a repair step costs O(memberships), not a Python loop over classes.
- Materialise: each member keeps its first ``min(x, y)`` previously owned partitions of a class;
  the rest of the class is dealt to members with room, lowest count first (ties in Kafka member
  order), which on a fresh group is the round-robin of Kafka's constrained assignor. With
  racks (KIP-881), a member is dealt a free partition with a replica on its own rack first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from kafka_rebalance.assignors.base import ColumnarAssignor, empty_owner
from kafka_rebalance.assignors.sticky_small import (
    is_small,
    redeal_free_units,
    sticky_owner_small,
    water_fill_list,
)
from kafka_rebalance.assignors.userdata import decode_sticky_user_data, encode_sticky_user_data
from kafka_rebalance.model import UNASSIGNED, ColumnarGroup, RebalanceProtocol


class StickyAssignor(ColumnarAssignor):
    """EAGER consumers revoke everything before rejoining, so, as in Kafka, this assignor keeps
    the last assignment it received and sends it with its generation as subscription user data,
    and the leader reads previous ownership from there (assignors/userdata.py)."""

    name = "sticky"

    def __init__(self) -> None:
        self._last_assignment: tuple[str, ...] = ()
        self._last_generation = -1

    def on_assignment(self, partitions: Sequence[str], generation: int) -> None:
        self._last_assignment = tuple(partitions)
        self._last_generation = generation

    def subscription_user_data(self, topics: Sequence[str]) -> bytes | None:
        return encode_sticky_user_data(self._last_assignment, self._last_generation)

    def member_data(self, owned: Sequence[str], generation: int, user_data: bytes | None) -> tuple[list[str], int]:
        if not user_data:
            return [], -1
        return decode_sticky_user_data(user_data)

    def assign_columnar(self, group: ColumnarGroup) -> np.ndarray:
        return sticky_owner(group)


class CooperativeStickyAssignor(ColumnarAssignor):
    """Sticky, minus every partition that would move away from a member still claiming it: that
    partition is revoked in this rebalance and assigned in the follow-up one."""

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    # How many times to re-aim the first round at a target its own follow-up would keep. Each
    # probe is one more sticky computation on counts (~0.2 s at a million partitions with random
    # subscriptions, since the bulk repair steps); Kafka's random-subscription case settles after
    # 2-6 probes at 250k-1M partitions. The bound only matters if the targets cycle.
    MAX_REAIMS = 10

    def assign_columnar(self, group: ColumnarGroup) -> np.ndarray:
        owner = sticky_owner(group)
        withhold_transferring(group, owner)
        if _uniform_subscriptions(group):
            # With equal subscriptions the follow-up provably keeps everything given now.
            return owner
        # In irregular groups the sticky answer depends on ownership, so the follow-up (which
        # sees this round's answer as ownership) could aim elsewhere and revoke again. Ask it
        # now, and if it would, adopt its target, still withholding what others claim.
        for _ in range(self.MAX_REAIMS):
            follow_up_target = sticky_owner(with_ownership(group, owner))
            given = owner >= 0
            if (follow_up_target[given] == owner[given]).all():
                break
            owner = follow_up_target
            withhold_transferring(group, owner)
        return owner


def _uniform_subscriptions(group: ColumnarGroup) -> bool:
    counts = np.diff(group.subscription_indptr)
    if len(counts) == 0 or (counts != counts[0]).any():
        return False
    per_member = group.subscription_topics.reshape(len(counts), int(counts[0]))
    return bool((per_member == per_member[0]).all())


def with_ownership(group: ColumnarGroup, owner: np.ndarray) -> ColumnarGroup:
    """The group as its next rebalance sees it: every member owns what ``owner`` gives it, all
    in one generation newer than any claim now."""
    assigned = np.flatnonzero(owner >= 0)
    owners = owner[assigned]
    if group.num_members <= np.iinfo(np.int16).max:
        owners = owners.astype(np.int16)  # numpy's stable sort of int16 is a radix sort
    order = np.argsort(owners, kind="stable")
    counts = np.bincount(owner[assigned], minlength=group.num_members)
    indptr = np.zeros(group.num_members + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    generation = int(group.generations.max(initial=-1)) + 1
    nxt = replace(
        group,
        owned_indptr=indptr,
        owned_partitions=assigned[order],
        generations=np.full(group.num_members, generation, dtype=np.int64),
    )
    # Same topics, members and subscriptions: reuse what was derived from them.
    for name in _OWNERSHIP_FREE_CACHES:
        if name in group.__dict__:
            nxt.__dict__[name] = group.__dict__[name]
    return nxt


_OWNERSHIP_FREE_CACHES = ("topic_offsets", "partition_topic", "member_order", "member_rank", "subscription_member", "topic_subscribers")


def withhold_transferring(group: ColumnarGroup, owner: np.ndarray) -> None:
    """Unassign (in place) every partition whose new owner is not its newest claimant: some other
    member claims it in the same or a newer generation, so it may still be held there and must
    be revoked first. A claim from an older generation than the new owner's own claim is stale
    (that member was rebalanced away from it since), so, as in Kafka, it does not hold the
    partition back."""
    claimants = group.owned_member
    claimed = group.owned_partitions
    if len(claimed) == 0:
        return
    if np.bincount(claimed, minlength=group.num_partitions).max() <= 1:
        # One claim per partition (the usual case): withhold what moves away from its claimant.
        new_owner = owner[claimed]
        owner[claimed[(new_owner != claimants) & (new_owner != UNASSIGNED)]] = UNASSIGNED
        return
    generations = group.generations[claimants]
    lowest = np.iinfo(np.int64).min
    by_owner = owner[claimed] == claimants
    owner_generation = np.full(group.num_partitions, lowest, dtype=np.int64)
    owner_generation[claimed[by_owner]] = generations[by_owner]
    others = ~by_owner
    other_generation = np.full(group.num_partitions, lowest, dtype=np.int64)
    np.maximum.at(other_generation, claimed[others], generations[others])
    contested = np.flatnonzero((other_generation > lowest) & (other_generation >= owner_generation) & (owner != UNASSIGNED))
    owner[contested] = UNASSIGNED


def previous_owners(group: ColumnarGroup) -> np.ndarray:
    """Who owned each partition before, by Kafka's rules: the claimant must still subscribe to the
    topic; of several claimants the highest generation wins; a tie there invalidates the claim."""
    prev = empty_owner(group)
    claimants = group.owned_member
    claimed = group.owned_partitions
    if len(claimed) == 0:
        return prev
    topics = group.partition_topic[claimed].astype(np.int64)
    valid = _subscribes(group, claimants, topics)
    claimants, claimed = claimants[valid], claimed[valid]
    # Usually every partition has one claimant; only contested partitions need the generation sort.
    contested = np.bincount(claimed, minlength=group.num_partitions)[claimed] > 1
    prev[claimed[~contested]] = claimants[~contested]
    claimants, claimed = claimants[contested], claimed[contested]
    if len(claimed) == 0:
        return prev
    generations = group.generations[claimants]
    order = np.lexsort((-generations, claimed))
    claimants, claimed, generations = claimants[order], claimed[order], generations[order]
    first = np.ones(len(claimed), dtype=bool)
    first[1:] = claimed[1:] != claimed[:-1]
    # A partition whose two best claims share a generation has no valid previous owner.
    tied = np.zeros(len(claimed), dtype=bool)
    tied[:-1] = first[:-1] & ~first[1:] & (generations[:-1] == generations[1:])
    winners = first & ~tied
    prev[claimed[winners]] = claimants[winners]
    return prev


def _subscribes(group: ColumnarGroup, members: np.ndarray, topics: np.ndarray) -> np.ndarray:
    """Whether ``members[i]`` subscribes to ``topics[i]``: a member x topic bit matrix when that is
    small (2,000 x 500 is a megabyte), else a search in the sorted (member, topic) pairs."""
    m, t = group.num_members, group.num_topics
    if m * t <= 1 << 26:
        matrix = np.zeros((m, t), dtype=bool)
        matrix[group.subscription_member, group.subscription_topics] = True
        subscribed: np.ndarray = matrix[members, topics]
        return subscribed
    pairs = members * t + topics
    subscribed_pairs = np.sort(group.subscription_member * t + group.subscription_topics)
    if len(subscribed_pairs) == 0:
        return np.zeros(len(pairs), dtype=bool)
    pos = np.searchsorted(subscribed_pairs, pairs)
    pos[pos == len(subscribed_pairs)] = 0
    found: np.ndarray = subscribed_pairs[pos] == pairs
    return found


def _topic_classes(group: ColumnarGroup) -> tuple[np.ndarray, list[np.ndarray]]:
    """Class id per topic (-1 for topics nobody subscribes to or with no partitions) and the
    members of each class in Kafka order."""
    indptr, members = group.topic_subscribers
    sizes = np.diff(indptr)
    active = (sizes > 0) & (group.partition_counts > 0)
    topic_class = np.full(group.num_topics, -1, dtype=np.int64)
    if not active.any():
        return topic_class, []
    rng = np.random.default_rng(0x5EED)
    w1 = rng.integers(1, 2**62, size=group.num_members, dtype=np.int64)
    w2 = rng.integers(1, 2**62, size=group.num_members, dtype=np.int64)
    seg = np.repeat(np.arange(group.num_topics), sizes)
    # Two independent 64-bit sums of random member weights identify a subscriber set
    # (integer overflow wraps, which is fine for a hash).
    s1 = np.zeros(group.num_topics, dtype=np.int64)
    s2 = np.zeros(group.num_topics, dtype=np.int64)
    np.add.at(s1, seg, w1[members])
    np.add.at(s2, seg, w2[members])
    keys = np.stack([sizes, s1, s2], axis=1)[active]
    active_topics = np.flatnonzero(active)
    _, first_index, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    # Number classes by their first topic so the order is stable and readable.
    rank_of_class = np.argsort(np.argsort(active_topics[first_index]))
    topic_class[active_topics] = rank_of_class[inverse]
    # rank_of_class numbers the classes 0..n-1: in that order, each class's members are those
    # of its first topic.
    first_topics = sorted(zip(rank_of_class.tolist(), active_topics[first_index].tolist(), strict=True))
    class_members = [members[indptr[t] : indptr[t + 1]] for _, t in first_topics]
    return topic_class, class_members


def water_fill(base: np.ndarray, n: int, priority: np.ndarray | None = None) -> np.ndarray:
    """Split ``n`` units over members with current loads ``base`` so the loads are as level as
    possible (lowest first). The last, partial level goes to the highest ``priority``, then to
    the earliest position. Returns the units per member."""
    k = len(base)
    add = np.zeros(k, dtype=np.int64)
    if n <= 0 or k == 0:
        return add
    s = np.sort(base)
    prefix = np.cumsum(s)  # prefix[j - 1]: total of the j lowest
    cost = _one_to(k) * s - prefix  # units needed to lift the j lowest to the j-th lowest load
    count = int(np.searchsorted(cost, n, side="right"))  # >= 1, as cost[0] == 0 < n
    level = (n + int(prefix[count - 1])) // count
    lifted: np.ndarray = np.maximum(level - base, 0)
    remainder = n - int(lifted.sum())
    if remainder:
        at_level = np.flatnonzero(base <= level)
        if priority is None:  # ties by position, and at_level is ascending
            chosen = at_level[:remainder]
        else:
            chosen = at_level[np.lexsort((at_level, -priority[at_level]))[:remainder]]
        lifted[chosen] += 1
    return lifted


_ONE_TO_CACHE = np.arange(1, 1 << 12, dtype=np.int64)


def _one_to(k: int) -> np.ndarray:
    """``np.arange(1, k + 1)``, a view of a cached array when it is short enough."""
    if k < len(_ONE_TO_CACHE):
        return _ONE_TO_CACHE[:k]
    return np.arange(1, k + 1, dtype=np.int64)




def sticky_owner(group: ColumnarGroup) -> np.ndarray:
    """The owner (member index, or -1) of every partition. Small groups take the same steps on
    Python lists (assignors/sticky_small.py), where numpy's per-call cost would dominate."""
    if is_small(group):
        return sticky_owner_small(group)
    return sticky_owner_columnar(group)


def sticky_owner_columnar(group: ColumnarGroup) -> np.ndarray:
    """``sticky_owner`` on arrays, at any size."""
    owner = empty_owner(group)
    if group.num_members == 0 or group.num_partitions == 0:
        return owner
    topic_class, class_members = _topic_classes(group)
    num_classes = len(class_members)
    if num_classes == 0:
        return owner
    partition_class = topic_class[group.partition_topic]
    class_size = np.bincount(partition_class[partition_class >= 0], minlength=num_classes).astype(np.int64)
    prev = previous_owners(group)
    m_count = group.num_members

    had = prev >= 0
    held = np.bincount(prev[had] * num_classes + partition_class[had], minlength=m_count * num_classes)
    x = held.reshape(m_count, num_classes).astype(np.int64)
    y = x.copy()
    load = y.sum(axis=1)

    # Most constrained classes first, as Kafka hands out partitions with fewest consumers first.
    by_constraint = sorted(range(num_classes), key=lambda c: (len(class_members[c]), c))
    free_units = np.zeros_like(y)
    for c in by_constraint:
        members = class_members[c]
        free = int(class_size[c] - y[members, c].sum())
        add = water_fill(load[members], free)
        y[members, c] += add
        load[members] += add
        free_units[members, c] = add
    if num_classes > 1:
        _spread_free_units(by_constraint, class_members, free_units, y, load)

    index = _ClassIndex(class_members, m_count)
    by_constraint_array = np.asarray(by_constraint, dtype=np.int64)
    while True:
        if _push_new_units_directly(index, by_constraint_array, x, y, load):
            continue
        violated = index.violated(y, load)
        violated_count = int(np.count_nonzero(violated))
        if not violated_count:
            break
        c = int(by_constraint_array[np.argmax(violated[by_constraint_array])])
        members = class_members[c]
        starved = int(members[np.argmin(load[members])])
        if _push_new_units_along_chain(starved, index, x, y, load, towards_start=True):
            continue
        holders = members[y[members, c] > 0]
        overloaded = int(holders[np.argmax(load[holders])])
        if _push_new_units_along_chain(overloaded, index, x, y, load, towards_start=False):
            continue
        if _rebalance_with_new_units(c, index, x, y, load, violated, violated_count):
            continue
        # Re-level c and, in the same step, every other violated class (constraint order) that
        # shares no member with those re-levelled so far: their re-levels cannot interact.
        touched = np.zeros(m_count, dtype=bool)
        others = [int(k) for k in by_constraint_array[violated[by_constraint_array]] if k != c]
        for k in [c, *others]:
            members = class_members[k]
            if touched[members].any():
                continue
            touched[members] = True
            _relevel(k, members, class_size, x, y, load)

    _regain_previous_owners(index, x, y, load)
    keep = np.minimum(x, y)
    return _materialise(group, prev, partition_class, class_members, keep, y, owner)


def _relevel(c: int, members: npt.NDArray[np.int64], class_size: npt.NDArray[np.int64], x: npt.NDArray[np.int64], y: npt.NDArray[np.int64], load: npt.NDArray[np.int64]) -> None:
    held = y[members, c]
    base = load[members] - held
    n = int(class_size[c])
    # Ties for the last level go to a member that keeps a partition it owned, then to one
    # that already held it in this computation (fewer changes), then Kafka order.
    if len(members) <= _SMALL_CLASS:  # the same on lists, cheaper for small classes
        base_list, held_list, owned_list = base.tolist(), held.tolist(), x[members, c].tolist()
        plain_list = water_fill_list(base_list, n)
        priority_list = [2 * (o > p) + (h > p) for o, h, p in zip(owned_list, held_list, plain_list, strict=True)]
        new = np.asarray(water_fill_list(base_list, n, priority_list), dtype=np.int64)
    else:
        plain = water_fill(base, n)
        priority = 2 * (x[members, c] > plain) + (held > plain)
        new = water_fill(base, n, priority)
    y[members, c] = new
    load[members] = base + new


class _ClassIndex:
    """The classes' member lists as flat arrays, so that "which classes are violated" (a holder of
    the class has 2+ more partitions than one of its subscribers) is a few numpy reductions over
    all memberships instead of a Python loop over classes. The repair loop asks it once per step,
    and asks it in bulk for the effect of every candidate move, so a step costs O(memberships)
    in numpy whatever the number of classes (Kafka's random-subscription test has one per topic)."""

    # Load of a class with no holder: far below any real load, so "max holder load" never wins.
    NO_HOLDER = np.iinfo(np.int64).min // 4

    def __init__(self, class_members: list[np.ndarray], m_count: int):
        self.class_members = class_members
        self.num_classes = len(class_members)
        self.sizes = np.array([len(m) for m in class_members], dtype=np.int64)
        self.indptr = _offsets(self.sizes)
        self.members = np.concatenate(class_members).astype(np.int64)
        self.entry_class = np.repeat(np.arange(self.num_classes, dtype=np.int64), self.sizes)
        # Member -> its classes, ascending (a stable sort of class-ordered entries keeps that).
        order = np.argsort(self.members, kind="stable")
        self.member_indptr = np.searchsorted(self.members[order], np.arange(m_count + 1))
        self.member_sizes = np.diff(self.member_indptr)
        self.member_class_flat = self.entry_class[order]
        # Position of each entry's (member, class) cell in a C-ordered members x classes array:
        # ``counts.take(self.cell)`` is ``counts[self.members, self.entry_class]``, faster.
        self.cell = self.members * self.num_classes + self.entry_class
        self._x: np.ndarray | None = None
        self._x_entry = np.zeros(0, dtype=np.int64)

    def holds_new(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``y > x`` per membership entry. ``x`` (previous ownership) never changes during a
        computation, so its entries are gathered once."""
        if self._x is not x:
            self._x, self._x_entry = x, self.per_entry(x)
        return self.per_entry(y) > self._x_entry

    def per_entry(self, counts: np.ndarray) -> np.ndarray:
        """``counts[m, k]`` for every membership entry (``counts`` is members x classes)."""
        return counts.take(self.cell)

    def violated(self, y: np.ndarray, load: np.ndarray) -> np.ndarray:
        """Boolean per class."""
        loads = load[self.members]
        held = self.per_entry(y) > 0
        return self._violated(loads, held, self.indptr[:-1])

    def _violated(self, loads: np.ndarray, held: np.ndarray, starts: np.ndarray) -> np.ndarray:
        lowest = np.minimum.reduceat(loads, starts)
        highest_holder = np.maximum.reduceat(np.where(held, loads, self.NO_HOLDER), starts)
        return highest_holder - lowest >= 2

    def classes_of(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(i, class) for every class of ``members[i]``, i ascending, classes ascending."""
        i = _ragged_owner(self.member_sizes[members])
        return i, self.member_class_flat[self.member_indptr[members][i] + _ragged_index(self.member_sizes[members])]

    def entries_of(self, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(i, entry) for every membership entry of ``classes[i]``, in class then Kafka order."""
        lengths = self.sizes[classes]
        i = _ragged_owner(lengths)
        return i, self.indptr[classes][i] + _ragged_index(lengths)

    def violated_after_moves(
        self, moves: np.ndarray, y: np.ndarray, load: np.ndarray, violated: np.ndarray, violated_count: int
    ) -> np.ndarray:
        """For each single-unit move (donor, receiver, class) — rows of ``moves`` — how many classes
        would be violated after it. Only the classes of the donor and of the receiver can change
        (their loads change, and the moved class has both among its subscribers)."""
        donor_move, donor_class = self.classes_of(moves[:, 0])
        receiver_move, receiver_class = self.classes_of(moves[:, 1])
        pairs = np.unique(np.concatenate((donor_move, receiver_move)) * self.num_classes + np.concatenate((donor_class, receiver_class)))
        pm, pc = pairs // self.num_classes, pairs % self.num_classes
        entry_pair, entry = self.entries_of(pc)
        pair_starts = _offsets(self.sizes[pc])[:-1]
        member = self.members[entry]
        cls = pc[entry_pair]
        move = pm[entry_pair]
        is_donor = member == moves[move, 0]
        is_receiver = member == moves[move, 1]
        in_moved_class = cls == moves[move, 2]
        loads = load[member] - is_donor + is_receiver
        held = (y[member, cls] - (is_donor & in_moved_class) + (is_receiver & in_moved_class)) > 0
        now = self._violated(loads, held, pair_starts).astype(np.int64) - violated[pc]
        return violated_count + np.bincount(pm, weights=now, minlength=len(moves)).astype(np.int64)


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Positions where a run of equal values starts in a sorted array: for sorted input,
    ``np.unique(values, return_index=True)[1]``."""
    starts = np.ones(len(values), dtype=bool)
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    return np.flatnonzero(starts)


def _offsets(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def _ragged_owner(lengths: np.ndarray) -> np.ndarray:
    """For concatenated runs of the given lengths: the run of each element."""
    return np.repeat(np.arange(len(lengths)), lengths)


def _ragged_index(lengths: np.ndarray) -> np.ndarray:
    """For concatenated runs of the given lengths: each element's position inside its run."""
    starts = _offsets(lengths)[:-1]
    position: np.ndarray = np.arange(int(lengths.sum())) - np.repeat(starts, lengths)
    return position


def _top_per_run(run: np.ndarray, key: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the first ``limit`` elements of each run (runs ascending) by ``key`` ascending,
    ties by position: what ``a[np.argsort(key, kind="stable")][:limit]`` does for one run."""
    order = np.lexsort((np.arange(len(run)), key, run))
    r = run[order]
    first = np.searchsorted(r, r, side="left")
    top: np.ndarray = order[np.arange(len(r)) - first < limit]
    return top


def _regain_previous_owners(index: _ClassIndex, x: npt.NDArray[np.int64], y: npt.NDArray[np.int64], load: npt.NDArray[np.int64], max_rounds: int = 100) -> None:
    """Once balanced: hand a partition back to a member that owned more of its class than it now
    gets (x > y), from a member holding one new to it (y > x), whenever the result is still
    balanced. Each such move keeps one more partition with its previous owner, so this only
    ever adds stickiness; the repair steps above choose among equally balanced answers by local
    rules and can leave a few of these behind. Per round, each class's most loaded new holder
    offers to each member short of its previous count, candidates are checked all at once, and
    the acceptable ones touching disjoint classes are applied together."""
    no_violation = np.zeros(index.num_classes, dtype=bool)
    for _ in range(max_rounds):
        new_units = index.per_entry(y) - index.per_entry(x)
        short, has_new = new_units < 0, new_units > 0
        if not short.any() or not has_new.any():
            return
        loads = load[index.members]
        best_load = np.maximum.reduceat(np.where(has_new, loads, index.NO_HOLDER), index.indptr[:-1])
        giver_entry = np.flatnonzero(has_new & (loads == best_load[index.entry_class]))
        giver_class, first = np.unique(index.entry_class[giver_entry], return_index=True)
        giver_of_class = np.full(index.num_classes, -1, dtype=np.int64)
        giver_of_class[giver_class] = index.members[giver_entry[first]]
        taker_entry = np.flatnonzero(short & (giver_of_class[index.entry_class] >= 0))
        if len(taker_entry) == 0:
            return
        k = index.entry_class[taker_entry]
        moves = np.stack((giver_of_class[k], index.members[taker_entry], k), axis=1)
        swapped = _regain_by_swaps(index, moves, x, y, load)
        moves = moves[load[moves[:, 0]] >= load[moves[:, 1]]]
        if len(moves):
            moves = moves[index.violated_after_moves(moves, y, load, no_violation, 0) == 0]
        touched = np.zeros(index.num_classes, dtype=bool)
        for donor, receiver, k in moves.tolist():
            if not (y[donor, k] > x[donor, k] and x[receiver, k] > y[receiver, k]):
                continue  # a swap above used it up
            # Moves touching disjoint classes cannot unbalance each other's classes.
            classes = index.classes_of(np.array([donor, receiver]))[1]
            if touched[classes].any():
                continue
            touched[classes] = True
            y[donor, k] -= 1
            y[receiver, k] += 1
            load[donor] -= 1
            load[receiver] += 1
        if not swapped and not touched.any():
            return


def _regain_by_swaps(index: _ClassIndex, offers: np.ndarray, x: npt.NDArray[np.int64], y: npt.NDArray[np.int64], load: npt.NDArray[np.int64]) -> bool:
    """For each offer (giver, taker, class k) of ``_regain_previous_owners``: the taker gives back
    a partition of another class k2 new to it that the giver subscribes to, so no load changes
    and only who holds k and k2 does; that is still balanced when the new holder of each is at
    most 1 above the class's least loaded member. Returns whether anything was swapped."""
    giver, taker, k = offers[:, 0], offers[:, 1], offers[:, 2]
    run, k2 = index.classes_of(taker)
    g, t, k = giver[run], taker[run], k[run]
    subscribes = np.zeros_like(y, dtype=bool)
    subscribes[index.members, index.entry_class] = True
    ok = (k2 != k) & (g != t) & subscribes[g, k2] & (y[t, k2] > x[t, k2])
    g, t, k, k2 = g[ok], t[ok], k[ok], k2[ok]
    if len(g) == 0:
        return False
    lowest = np.minimum.reduceat(load[index.members], index.indptr[:-1])
    # Double gains (the giver was also short of k2) first.
    order = np.argsort(~(x[g, k2] > y[g, k2]), kind="stable")
    swapped = False
    for a, b, c, c2 in np.stack((g, t, k, k2), axis=1)[order].tolist():
        # Re-check against the counts as earlier swaps left them (loads never change here).
        if not (y[a, c] > x[a, c] and x[b, c] > y[b, c] and y[b, c2] > x[b, c2]):
            continue
        if (y[a, c2] == 0 and load[a] > lowest[c2] + 1) or (y[b, c] == 0 and load[b] > lowest[c] + 1):
            continue
        y[a, c] -= 1
        y[b, c] += 1
        y[b, c2] -= 1
        y[a, c2] += 1
        swapped = True
    return swapped


def _push_new_units_directly(index: _ClassIndex, by_constraint: np.ndarray, x: npt.NDArray[np.int64], y: npt.NDArray[np.int64], load: npt.NDArray[np.int64]) -> bool:
    """Bulk repair step for the simplest chains, in every class at once: in each class, the most
    loaded member holding partitions new to it (y > x) gives as many of them as half the gap
    allows to the class's least loaded member, when that gap is 2 or more. Classes are taken in
    constraint order and skipped when they share a giver or taker with a class already moving,
    so each move sees the loads it was decided on (as if done one after the other). Returns
    whether anything moved."""
    loads = load[index.members]
    lowest = np.minimum.reduceat(loads, index.indptr[:-1])
    new_here = index.holds_new(y, x)
    highest = np.maximum.reduceat(np.where(new_here, loads, index.NO_HOLDER), index.indptr[:-1])
    movable = highest - lowest >= 2
    if not movable.any():
        return False
    entry_movable = movable[index.entry_class]
    # The first (Kafka order) giver at the highest load and taker at the lowest, per class.
    # (Entries are in class order, so a class's first hit is where the class number changes.)
    giver_entry = np.flatnonzero(entry_movable & new_here & (loads == highest[index.entry_class]))
    giver_classes = index.entry_class[giver_entry]
    first = _run_starts(giver_classes)
    giver_class = giver_classes[first]
    giver = index.members[giver_entry[first]]
    taker_entry = np.flatnonzero(entry_movable & (loads == lowest[index.entry_class]))
    taker = index.members[taker_entry[_run_starts(index.entry_class[taker_entry])]]
    # giver_class is ascending; visit in constraint order.
    position = np.full(index.num_classes, -1, dtype=np.int64)
    position[giver_class] = np.arange(len(giver_class))
    busy: set[int] = set()
    moved = False
    for i in position[by_constraint[movable[by_constraint]]].tolist():
        g, t, k = int(giver[i]), int(taker[i]), int(giver_class[i])
        if g in busy or t in busy:
            continue
        busy.update((g, t))
        units = min(int(y[g, k] - x[g, k]), (int(load[g]) - int(load[t])) // 2)
        y[g, k] -= units
        y[t, k] += units
        load[g] -= units
        load[t] += units
        moved = True
    return moved


def _push_new_units_along_chain(
    start: int, index: _ClassIndex, x: npt.NDArray[np.int64], y: npt.NDArray[np.int64], load: npt.NDArray[np.int64], towards_start: bool
) -> bool:
    """Bulk repair step: move load between ``start`` and a member whose load differs from it by
    2 or more, along the shortest chain of members that hand on partitions of their classes
    (``towards_start``: the far end gives, each member on the way passes a partition on towards
    ``start``, which gains; else ``start`` gives and the far end gains). Only the two ends change
    load; the members in between give one class and take another. Every hand-over is of a
    partition that is new to its giver (y > x), so no previously owned partition moves and
    stickiness is untouched. As many units as the chain's tightest hand-over and half the load
    gap allow go at once: this is what replaces thousands of one-unit steps across overlapping
    classes. It strictly lowers the sum of squared loads, so the repair loop cannot cycle on it.
    The chain is found by a breadth-first search over members, level by level in numpy; the far
    end is the most (resp. least) loaded qualifying member of the first level that has one."""
    m_count = len(load)
    members, entry_class = index.members, index.entry_class
    class_starts = index.indptr[:-1]
    # There are only as many membership entries as (member, class) pairs (6,749 in the random
    # benchmark at a million partitions), so each level is a handful of numpy passes over all of
    # them: cheaper than gathering the frontier's ragged class lists and de-duplicating them
    # with sorts, and it picks the same parents (lowest frontier member per class, lowest class
    # per newly reached member, as the first occurrences in frontier then class order did).
    new_entry = index.holds_new(y, x)
    parent = np.full(m_count, -1, dtype=np.int64)
    via_class = np.full(m_count, -1, dtype=np.int64)
    seen = np.zeros(m_count, dtype=bool)
    seen[start] = True
    # A class is expanded once: all its members are reachable from where it was first reached.
    class_seen = np.zeros(index.num_classes, dtype=bool)
    in_frontier = np.zeros(m_count, dtype=bool)
    in_frontier[start] = True
    while True:
        # Classes reached now, each from its lowest-numbered frontier member (the frontier is
        # in ascending member order).
        reach = in_frontier[members] & ~class_seen[entry_class]
        if not towards_start:  # frontier members give: only classes where they hold new units
            reach &= new_entry
        near_of_class = np.minimum.reduceat(np.where(reach, members, m_count), class_starts)
        new_class = near_of_class < m_count
        if not new_class.any():
            return False
        class_seen |= new_class
        # Their unseen members, each via its lowest-numbered newly reached class.
        take = new_class[entry_class] & ~seen[members]
        if towards_start:  # the other member gives to the frontier member
            take &= new_entry
        at = np.flatnonzero(take)
        if len(at) == 0:
            return False
        first_class = np.full(m_count, index.num_classes, dtype=np.int64)
        np.minimum.at(first_class, members[at], entry_class[at])
        other = np.flatnonzero(first_class < index.num_classes)
        k = first_class[other]
        seen[other] = True
        parent[other] = near_of_class[k]
        via_class[other] = k
        gap = load[other] - load[start] if towards_start else load[start] - load[other]
        if int(gap.max()) >= 2:
            end = int(other[np.argmax(gap)])
            _push_chain(start, end, parent, via_class, x, y, load, towards_start)
            return True
        in_frontier = first_class < index.num_classes  # == the members in ``other``


def _push_chain(
    start: int, end: int, parent: npt.NDArray[np.int64], via_class: npt.NDArray[np.int64], x: npt.NDArray[np.int64], y: npt.NDArray[np.int64], load: npt.NDArray[np.int64], towards_start: bool
) -> None:
    chain = [end]
    while chain[-1] != start:
        chain.append(int(parent[chain[-1]]))
    far_side = np.asarray(chain[:-1], dtype=np.int64)  # each linked to its parent by via_class
    near_side = parent[far_side]
    k = via_class[far_side]
    givers, takers = (far_side, near_side) if towards_start else (near_side, far_side)
    room = int((y[givers, k] - x[givers, k]).min())
    units = min(room, abs(int(load[end]) - int(load[start])) // 2)
    np.add.at(y, (givers, k), -units)
    np.add.at(y, (takers, k), units)
    if towards_start:
        load[end] -= units
        load[start] += units
    else:
        load[start] -= units
        load[end] += units


def _rebalance_with_new_units(
    c: int, index: _ClassIndex, x: npt.NDArray[np.int64], y: npt.NDArray[np.int64], load: npt.NDArray[np.int64], violated: npt.NDArray[np.bool_], violated_count: int
) -> bool:
    """Try to end the violation of class ``c`` without losing stickiness, by moving one partition
    that its holder got only in this computation (not one it owned before): either into the
    class's least-loaded subscriber from a busier member, or out of the class's most-loaded
    holder to a less busy member. Of the candidate moves (per class, the four busiest donors or
    the four idlest receivers), the one leaving the fewest violated classes wins (the first such
    in candidate order), and only if that is fewer than now, so this cannot cycle. This is what
    lets a cooperative follow-up rebalance complete the previous round's target instead of
    revoking again because a tie fell differently."""
    members = index.class_members[c]
    starved = int(members[np.argmin(load[members])])
    holders = members[y[members, c] > 0]
    overloaded = int(holders[np.argmax(load[holders])])

    # Into the starved member: from subscribers of its classes holding fresh units, busiest first.
    ks = index.member_class_flat[index.member_indptr[starved] : index.member_indptr[starved + 1]]
    run, entry = index.entries_of(ks)
    subscribers, k = index.members[entry], ks[run]
    fresh = (y[subscribers, k] - x[subscribers, k] > 0) & (load[subscribers] > load[starved]) & (subscribers != starved)
    run, subscribers, k = run[fresh], subscribers[fresh], k[fresh]
    top = _top_per_run(run, -load[subscribers], 4)
    into = np.stack((subscribers[top], np.full(len(top), starved), k[top]), axis=1)

    # Out of the overloaded holder: in its classes where it holds fresh units, idlest receivers first.
    ks = index.member_class_flat[index.member_indptr[overloaded] : index.member_indptr[overloaded + 1]]
    ks = ks[y[overloaded, ks] > x[overloaded, ks]]
    run, entry = index.entries_of(ks)
    subscribers, k = index.members[entry], ks[run]
    ok = (load[subscribers] < load[overloaded]) & (subscribers != overloaded)
    run, subscribers, k = run[ok], subscribers[ok], k[ok]
    top = _top_per_run(run, load[subscribers], 4)
    out_of = np.stack((np.full(len(top), overloaded), subscribers[top], k[top]), axis=1)

    moves = np.concatenate((into, out_of)).astype(np.int64)
    if len(moves) == 0:
        return False
    remaining = index.violated_after_moves(moves, y, load, violated, violated_count)
    best = int(np.argmin(remaining))  # the first of the fewest
    if remaining[best] >= violated_count:
        return False
    donor, receiver, k = moves[best].tolist()
    y[donor, k] -= 1
    y[receiver, k] += 1
    load[donor] -= 1
    load[receiver] += 1
    return True


def _spread_free_units(
    by_constraint: Sequence[int], class_members: Sequence[np.ndarray], free_units: npt.NDArray[np.int64], y: npt.NDArray[np.int64], load: npt.NDArray[np.int64], max_sweeps: int = 50
) -> None:
    """Re-deal each class's free (previously unowned) units given where every other class's units
    went, sweep after sweep, until a sweep changes nothing. One pass in constraint order levels a
    class only against the classes dealt before it; with overlapping subscriptions (one class per
    topic) that leaves most classes unbalanced and the repair loop below would fix them one unit
    at a time. Each re-deal minimises the sum of squared loads over that class's free units (block
    coordinate descent on a convex objective), so the sweeps settle fast. Owned units never move
    here: stickiness is decided by the repair loop alone."""
    # Re-dealing keeps a class's total of free units, so a class with none never changes: leave
    # it out (after a cooperative round nearly every partition is owned, and most classes are).
    free_total = free_units.sum(axis=0)
    classes = [c for c in by_constraint if free_total[c] > 0]
    if not classes:
        return
    # Thousands of re-deals of a dozen members each: on Python lists, where numpy's per-call cost
    # would dominate; the arrays are written back once at the end.
    members_of = {c: class_members[c].tolist() for c in classes}
    free_of = {c: free_units[class_members[c], c].tolist() for c in classes}
    total_of = {c: int(free_total[c]) for c in classes}
    loads = load.tolist()
    redealt = redeal_free_units(classes, members_of, free_of, total_of, loads, _water_fill_either, max_sweeps)
    for c in redealt:
        dealt_members = class_members[c]
        dealt = np.asarray(free_of[c], dtype=np.int64)
        y[dealt_members, c] += dealt - free_units[dealt_members, c]
        free_units[dealt_members, c] = dealt
    load[:] = loads


# Up to this many members, ``water_fill_list`` beats ``water_fill``'s numpy calls.
_SMALL_CLASS = 64


def _water_fill_either(base: list[int], n: int) -> list[int]:
    if len(base) <= _SMALL_CLASS:
        return water_fill_list(base, n)
    filled: list[int] = water_fill(np.asarray(base, dtype=np.int64), n).tolist()
    return filled


def _materialise(
    group: ColumnarGroup,
    prev: npt.NDArray[np.int64],
    partition_class: npt.NDArray[np.int64],
    class_members: Sequence[np.ndarray],
    keep: npt.NDArray[np.int64],
    y: npt.NDArray[np.int64],
    owner: npt.NDArray[np.int64],
) -> np.ndarray:
    """Counts -> owners. Orderings are done by sorting one combined int64 key whose parts are the
    sort keys (outermost first) and whose last part is the payload; the keys are unique, so this
    is the same order as a stable lexsort, and numpy sorts int64 an order of magnitude faster."""
    num_classes = len(class_members)
    num_partitions = group.num_partitions
    m_count = group.num_members
    older = older_claimants(group, prev)
    # Kept: the first keep[m, c] previously owned partitions of class c, in partition order.
    claimed = np.flatnonzero(prev >= 0)
    if int(keep.sum()) == len(claimed):  # everything claimed stays (the common case)
        owner[claimed] = prev[claimed]
    else:
        cell = prev[claimed] * num_classes + partition_class[claimed]
        # A member keeping only some of its partitions lets go first of those an older
        # generation's owner also claims, so that owner can take them back (Kafka's prevAssignment).
        contested = (older >= 0)[claimed].astype(np.int64)
        if m_count * num_classes * num_partitions * 2 < 1 << 62:
            key = np.sort((cell * 2 + contested) * num_partitions + claimed)
            cell, claimed = key // (2 * num_partitions), key % num_partitions
        else:
            order = np.lexsort((claimed, contested, cell))
            cell, claimed = cell[order], claimed[order]
        starts = np.flatnonzero(np.concatenate(([True], cell[1:] != cell[:-1])))
        run_start = np.repeat(starts, np.diff(np.append(starts, len(cell))))
        rank_in_cell = np.arange(len(cell)) - run_start
        kept = rank_in_cell < keep.reshape(-1)[cell]
        owner[claimed[kept]] = prev[claimed[kept]]

    # Free partitions of each class, in (class, partition) order.
    free = np.flatnonzero((owner == UNASSIGNED) & (partition_class >= 0))
    if num_classes > 1 and num_classes * num_partitions < 1 << 62:
        free = np.sort(partition_class[free] * num_partitions + free) % num_partitions
    elif num_classes > 1:
        free = free[np.argsort(partition_class[free], kind="stable")]

    # Slots: one per missing partition, ordered by (class, load level, Kafka member order).
    deficit = (y - keep).reshape(-1)
    cells = np.flatnonzero(deficit > 0)
    if len(cells) == 0:
        return owner
    counts = deficit[cells]
    slot_cell = np.repeat(cells, counts)
    slot_member = slot_cell // num_classes
    slot_class = slot_cell % num_classes
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
    step = np.arange(len(slot_cell)) - np.repeat(offsets, counts)
    kept_load = keep.sum(axis=1)
    level = kept_load[slot_member] + step
    if len(slot_member) != len(free):
        raise AssertionError("sticky: free partitions and open slots disagree")
    levels = int(level.max()) + 1
    if num_classes * levels * m_count < 1 << 62:
        key = np.sort((slot_class * levels + level) * m_count + group.member_rank[slot_member])
        receivers = group.member_order[key % m_count]
    else:
        receivers = slot_member[np.lexsort((group.member_rank[slot_member], level, slot_class))]
    if _uses_racks(group):
        receivers = _match_racks(group, free, receivers, partition_class)
    if (older[free] >= 0).any():
        receivers = _return_to_older_owners(free, receivers, older[free], partition_class)
    owner[free] = receivers
    return owner


def older_claimants(group: ColumnarGroup, prev: np.ndarray) -> np.ndarray:
    """Per partition, the subscribed claimant of the highest generation other than its previous
    owner (-1 for none): Kafka's prevAssignment, the owner before last, whom a partition that
    has to move anyway goes back to."""
    older = empty_owner(group)
    claimants = group.owned_member
    claimed = group.owned_partitions
    if len(claimed) == 0:
        return older
    other = claimants != prev[claimed]  # usually none: one claim per partition
    if not other.any():
        return older
    claimants, claimed = claimants[other], claimed[other]
    keep = _subscribes(group, claimants, group.partition_topic[claimed].astype(np.int64))
    claimants, claimed = claimants[keep], claimed[keep]
    if len(claimed) == 0:
        return older
    order = np.lexsort((group.generations[claimants], claimed))  # last per partition: highest generation
    claimants, claimed = claimants[order], claimed[order]
    older[claimed] = claimants  # fancy assignment keeps the last write per index
    return older


def _return_to_older_owners(free: np.ndarray, receivers: np.ndarray, wanted: np.ndarray, partition_class: np.ndarray) -> np.ndarray:
    """Within each class, swap receivers so a free partition goes to its older owner when that
    member receives a partition of the class anyway: counts, hence balance, are unchanged."""
    result = receivers.copy()
    classes = partition_class[free]
    pinned = np.zeros(len(free), dtype=bool)
    for i in np.flatnonzero(wanted >= 0).tolist():
        member = int(wanted[i])
        if result[i] == member:
            pinned[i] = True
            continue
        candidates = np.flatnonzero((result == member) & (classes == classes[i]) & ~pinned)
        if len(candidates):
            j = int(candidates[0])
            result[i], result[j] = result[j], result[i]
            pinned[i] = True
    return result


def _uses_racks(group: ColumnarGroup) -> bool:
    return any(r is not None for r in group.member_racks) and any(r is not None for r in group.partition_racks)


def _match_racks(group: ColumnarGroup, free: np.ndarray, receivers: np.ndarray, partition_class: np.ndarray) -> np.ndarray:
    """KIP-881: within each class, hand a member a free partition with a replica on its rack when
    one is left, before dealing the rest in order. Only free partitions move this way: kept
    partitions stay put (stickiness first) and the counts per member do not change (balance)."""
    result = receivers.copy()
    classes = partition_class[free]
    cuts = np.flatnonzero(np.diff(classes)) + 1
    for segment in np.split(np.arange(len(free)), cuts):
        partitions = free[segment].tolist()
        members = receivers[segment].tolist()
        by_rack: dict[str, list[int]] = {}
        for i, p in enumerate(partitions):
            for rack in _replica_racks(group, p):
                by_rack.setdefault(rack, []).append(i)
        cursor = dict.fromkeys(by_rack, 0)
        used = [False] * len(partitions)
        chosen: list[int | None] = [None] * len(members)
        for j, m in enumerate(members):
            rack = group.member_racks[m]
            if rack is None or rack not in by_rack:
                continue
            queue = by_rack[rack]
            while cursor[rack] < len(queue) and used[queue[cursor[rack]]]:
                cursor[rack] += 1
            if cursor[rack] < len(queue):
                used[queue[cursor[rack]]] = True
                chosen[j] = queue[cursor[rack]]
        leftovers = iter(i for i in range(len(partitions)) if not used[i])
        for j, m in enumerate(members):
            picked = chosen[j]
            result[segment[picked if picked is not None else next(leftovers)]] = m
    return result


def _replica_racks(group: ColumnarGroup, partition: int) -> tuple[str, ...]:
    topic = int(group.partition_topic[partition])
    racks = group.partition_racks[topic]
    return () if racks is None else racks[partition - int(group.topic_offsets[topic])]
