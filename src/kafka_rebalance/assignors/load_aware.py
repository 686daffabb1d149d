"""LoadAwareAssignor (``load-aware``): sticky's count balance, then the heaviest member's load.

Every assignor Kafka ships balances partition *counts*; with skewed traffic a member holding two
hot partitions lags while its neighbours idle. This one reads a load per partition
(``ColumnarGroup.partition_loads``: records/s, bytes/s, any unit) and, on top of the sticky
engine (``sticky_owner``, ``previous_owners``, ``withhold_transferring``), lowers the heaviest
member's load:

1. Counts: the previous assignment when it still covers every subscribed partition within the
   count bound (so a group whose loads did not change moves nothing), else sticky's answer.
   Without loads, or with equal ones, the answer *is* sticky's (cooperative-sticky's).
2. Partitions that have no previous owner here (new members' shares, a leaver's partitions)
   cost no stickiness: they are dealt again by load inside the same (member, topic) counts,
   heaviest partition to lightest member, round after round; then polished by step 3 limited
   to them.
3. Local search on the heaviest member: move one of its partitions to a lighter member, or swap
   one for a lighter partition of a lighter member, whichever lowers the pair's larger load
   most (a move before a swap on ties). Counts stay within ``max_count_skew`` among members
   with identical subscriptions; only subscribers receive. It stops when the heaviest member
   cannot be lightened; each step strictly lowers the sum of squared loads, so it ends.
4. Stickiness: the moves of previously owned partitions are kept only if together they lower
   the heaviest load by at least ``min_gain`` (a fraction of it); then every moved partition
   (or swapped pair) that can go back to its owner without raising the heaviest load again
   goes back, so what moves is needed.

Under COOPERATIVE, a partition still claimed by another member is withheld (revoked first,
assigned in the follow-up rebalance), and, as cooperative-sticky does, the first round is
re-aimed at a target its own follow-up would keep, so the follow-up does not revoke again.

Scale: member loads and counts are arrays; per step only the heaviest member's partitions and
those of a few of the lightest members are looked at (numpy over a few hundred partitions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kafka_rebalance.assignors.base import ColumnarAssignor, PartitionAssignor
from kafka_rebalance.assignors.checks import subscribed_partitions
from kafka_rebalance.assignors.sticky import (
    CooperativeStickyAssignor,
    previous_owners,
    sticky_owner,
    with_ownership,
    withhold_transferring,
)
from kafka_rebalance.assignors.userdata import (
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from kafka_rebalance.model import ColumnarGroup, InvalidInput, RebalanceProtocol

OPTION_NAMES = ("max_count_skew", "min_gain", "rebalance_protocol")


@dataclass(frozen=True)
class LoadAwareOptions:
    """``strategy_options`` of ``load-aware``.

    - ``max_count_skew``: how far partition counts may differ among members with identical
      subscriptions (1: as even as sticky's; larger lets counts differ to even out load);
    - ``min_gain``: an owner keeps its partitions unless moving them lowers the heaviest
      member's load by at least this fraction;
    - ``rebalance_protocol``: ``COOPERATIVE`` (default) withholds a partition still claimed by
      another member until the follow-up rebalance; ``EAGER`` gives the whole target at once.
    """

    max_count_skew: int = 1
    min_gain: float = 0.1
    rebalance_protocol: RebalanceProtocol = RebalanceProtocol.COOPERATIVE

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> LoadAwareOptions:
        unknown = sorted(set(options) - set(OPTION_NAMES))
        if unknown:
            raise InvalidInput(f"strategy_options.{unknown[0]}", f"unknown option for load-aware (known: {', '.join(OPTION_NAMES)})")
        skew = options.get("max_count_skew", 1)
        if not isinstance(skew, int) or isinstance(skew, bool) or skew < 1:
            raise InvalidInput("strategy_options.max_count_skew", f"expected an integer >= 1, got {skew!r}")
        gain = options.get("min_gain", 0.1)
        if not isinstance(gain, int | float) or isinstance(gain, bool) or not 0 <= gain < 1:
            raise InvalidInput("strategy_options.min_gain", f"expected a number in [0, 1), got {gain!r}")
        protocol = options.get("rebalance_protocol", "COOPERATIVE")
        names = {p.value for p in RebalanceProtocol}
        if not isinstance(protocol, str) or protocol.upper() not in names:
            raise InvalidInput("strategy_options.rebalance_protocol", f"expected EAGER or COOPERATIVE, got {protocol!r}")
        return cls(skew, float(gain), RebalanceProtocol(protocol.upper()))


class LoadAwareAssignor(ColumnarAssignor):
    """``load-aware``: see the module's docstring. Previous ownership comes from the members'
    owned partitions (COOPERATIVE) or, as the eager StickyAssignor keeps it, from the last
    assignment in the subscription's user data (EAGER)."""

    name = "load-aware"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
    # As cooperative-sticky: bound on re-aiming the first round (only matters if targets cycle).
    MAX_REAIMS = 5

    def __init__(self, options: LoadAwareOptions | None = None) -> None:
        self.options = options or LoadAwareOptions()
        self._last_assignment: tuple[str, ...] = ()
        self._last_generation = -1

    @property
    def protocol(self) -> RebalanceProtocol:
        return self.options.rebalance_protocol

    def configured(self, options: Mapping[str, Any]) -> PartitionAssignor:
        return LoadAwareAssignor(LoadAwareOptions.parse(options))

    def on_assignment(self, partitions: Sequence[str], generation: int) -> None:
        self._last_assignment = tuple(partitions)
        self._last_generation = generation

    def subscription_user_data(self, topics: Sequence[str]) -> bytes | None:
        if self.protocol is RebalanceProtocol.EAGER:
            return encode_sticky_user_data(self._last_assignment, self._last_generation)
        return encode_cooperative_user_data(self._last_generation)

    def member_data(self, owned: Sequence[str], generation: int, user_data: bytes | None) -> tuple[list[str], int]:
        if owned or self.protocol is RebalanceProtocol.COOPERATIVE:
            return list(owned), generation
        return load_aware_member_data(user_data)

    def assign_columnar(self, group: ColumnarGroup) -> np.ndarray:
        cooperative = self.protocol is RebalanceProtocol.COOPERATIVE
        if not has_load_signal(group):
            return CooperativeStickyAssignor().assign_columnar(group) if cooperative else sticky_owner(group)
        skew, gain = self.options.max_count_skew, self.options.min_gain
        owner = load_aware_owner(group, skew, gain)
        if not cooperative:
            return owner
        target = owner.copy()
        withhold_transferring(group, owner)
        if ((target >= 0) & (owner < 0)).sum() == 0:
            return owner  # nothing revoked, so no follow-up rebalance to aim at
        for _ in range(self.MAX_REAIMS):
            follow_up = load_aware_owner(with_ownership(group, owner), skew, gain)
            given = owner >= 0
            if (follow_up[given] == owner[given]).all():
                break
            owner = follow_up
            withhold_transferring(group, owner)
        return owner


def load_aware_member_data(user_data: bytes | None) -> tuple[list[str], int]:
    """An EAGER member's previous assignment from its user data (any sticky form); nothing when
    absent or unreadable, as Kafka's StickyAssignor treats it."""
    if not user_data:
        return [], -1
    try:
        return decode_sticky_user_data(user_data)
    except InvalidInput:
        return [], -1


def has_load_signal(group: ColumnarGroup) -> bool:
    """Whether the group's loads could change anything: given, and not all equal over the
    partitions someone subscribes to."""
    loads = group.partition_loads
    if loads is None or group.num_partitions == 0 or group.num_members == 0:
        return False
    subscribed = loads[subscribed_partitions(group)]
    return len(subscribed) > 0 and bool(subscribed.max() > subscribed.min())


def load_aware_owner(group: ColumnarGroup, max_count_skew: int = 1, min_gain: float = 0.1) -> np.ndarray:
    """The full (EAGER) target: every subscribed partition assigned."""
    loads = group.partition_loads
    if loads is None:
        return sticky_owner(group)
    prev = previous_owners(group)
    classes = SubscriptionClasses.of(group)
    owner = _count_base(group, prev, classes, max_count_skew)
    assigned = owner >= 0
    free = assigned & (owner != prev)
    deal_by_load(group, owner, free, loads)
    space = LoadSpace(group, owner, loads, classes, max_count_skew)
    space.improve(free)
    settled = owner.copy()
    before = space.heaviest()
    # No assignment beats the heaviest partition, nor the mean member load: when even that
    # would not gain min_gain, nothing previously owned moves, and there is nothing to search.
    best_possible = max(float(loads[assigned].max(initial=0.0)), float(loads[assigned].sum()) / group.num_members)
    if before - best_possible < min_gain * before or before <= 0:
        return settled
    space.improve(assigned)
    # Then finer steps, a bounded number: where one member's excess is spread over hundreds of
    # partitions, each swap gains little (a million partitions, lognormal loads: 1.14 of the
    # lower bound after the coarse steps, 1.007 after these).
    space.improve(assigned, step_gain=LoadSpace.STEP_GAIN / 10, max_steps=group.num_members)
    after = space.heaviest()
    if before - after < min_gain * before or after >= before:
        return settled
    space.undo_needless(settled, after)
    # The search above aims at the lowest heaviest load, not at the fewest moves: knowing that
    # load now, aim at it directly (fewest partitions per step) and keep whichever moved less.
    # Worth it where each move is a large share of a load; with hundreds of moves it would take
    # a step for each, for a saving of a few.
    if (space.owner != settled).sum() > LoadSpace.DIRECT_AIM_MAX_MOVES:
        return space.owner
    direct = LoadSpace(group, settled.copy(), loads, classes, max_count_skew)
    if direct.fit_under(after, assigned):
        direct.undo_needless(settled, after)
        if (direct.owner != settled).sum() < (space.owner != settled).sum():
            return direct.owner
    return space.owner


def _count_base(group: ColumnarGroup, prev: np.ndarray, classes: SubscriptionClasses, max_count_skew: int) -> np.ndarray:
    """The previous assignment when it is complete and within the count bound (so unchanged
    loads move nothing, even where sticky would re-level counts the bound allows), else
    sticky's answer (counts as even as Kafka's balance)."""
    subscribed = subscribed_partitions(group)
    if (prev[subscribed] >= 0).all():
        counts = np.bincount(prev[prev >= 0], minlength=group.num_members)
        if classes.skew_ok(counts, max_count_skew):
            return prev.copy()
    return sticky_owner(group)


@dataclass(frozen=True)
class SubscriptionClasses:
    """Members with identical subscriptions: the sets inside which counts are bounded."""

    of_member: np.ndarray  # class id per member
    members: tuple[np.ndarray, ...]  # members of each class, ascending

    @classmethod
    def of(cls, group: ColumnarGroup) -> SubscriptionClasses:
        ids: dict[bytes, int] = {}
        of_member = np.empty(group.num_members, dtype=np.int64)
        indptr, topics = group.subscription_indptr.tolist(), group.subscription_topics.astype(np.int32)
        for m in range(group.num_members):
            of_member[m] = ids.setdefault(topics[indptr[m] : indptr[m + 1]].tobytes(), len(ids))
        order = np.argsort(of_member, kind="stable")
        cuts = np.flatnonzero(np.diff(of_member[order])) + 1
        return cls(of_member, tuple(np.split(order, cuts)) if len(order) else ())

    def skew_ok(self, counts: np.ndarray, bound: int) -> bool:
        return all(int(np.ptp(counts[m])) <= bound for m in self.members if len(m))


def deal_by_load(group: ColumnarGroup, owner: np.ndarray, free: np.ndarray, loads: np.ndarray, exact_rounds: int = 64) -> None:
    """Re-deal the ``free`` partitions (in place) inside the counts ``owner`` gives each member
    per topic: topic by topic (hottest first), in rounds, the heaviest free partition to the
    member with the lightest load so far that still has room. After ``exact_rounds`` rounds of
    a topic (its tail is light) the members keep their order and the rest is dealt in one go."""
    idx = np.flatnonzero(free)
    if len(idx) == 0:
        return
    m_count = group.num_members
    fixed = (owner >= 0) & ~free
    # (bincount of nothing is int64 even with weights: say float.)
    load = np.bincount(owner[fixed], weights=loads[fixed], minlength=m_count).astype(np.float64)
    # By topic, then load descending: two argsorts (a float lexsort of a million keys costs
    # seconds); the second is stable, a radix sort on int16 topics.
    idx = idx[np.argsort(-loads[idx])]
    topics = group.partition_topic[idx]
    idx = idx[np.argsort(topics.astype(np.int16) if group.num_topics <= np.iinfo(np.int16).max else topics, kind="stable")]
    topic = group.partition_topic[idx]
    starts = np.flatnonzero(np.concatenate(([True], topic[1:] != topic[:-1])))
    ends = np.append(starts[1:], len(idx))
    hottest_first = np.argsort(-loads[idx[starts]], kind="stable")
    for a, b in zip(starts[hottest_first].tolist(), ends[hottest_first].tolist(), strict=True):
        partitions = idx[a:b]
        slots = np.bincount(owner[partitions], minlength=m_count)
        members = np.flatnonzero(slots)
        room = slots[members]
        w = loads[partitions]
        dealt = np.empty(len(partitions), dtype=np.int64)
        at = 0
        for _ in range(exact_rounds):
            active = room > 0
            if not active.any():
                break
            receivers = members[active]
            receivers = receivers[np.lexsort((receivers, load[receivers]))]
            take = len(receivers)
            dealt[at : at + take] = receivers
            np.add.at(load, receivers, w[at : at + take])  # receivers are distinct: add.at is exact
            room[active] -= 1
            at += take
        if at < len(partitions):
            # Slot (member, round) ordered by round, then by the members' load order now.
            rank = np.empty(m_count, dtype=np.int64)
            rank[members[np.lexsort((members, load[members]))]] = np.arange(len(members))
            slot_member = np.repeat(members, room)
            slot_round = np.arange(len(slot_member)) - np.repeat(np.cumsum(room) - room, room)
            rest = slot_member[np.lexsort((rank[slot_member], slot_round))]
            dealt[at:] = rest
            np.add.at(load, rest, w[at:])
        owner[partitions] = dealt


# A candidate step: (key, partition given, partition taken back or -1, receiver); lowest key wins.
_Step = tuple[tuple[float, ...], int, int, int]
# A candidate chain: (key, partition h gives r, partition r passes on, r, the member it goes to).
_Chain = tuple[tuple[float, ...], int, int, int, int]


class LoadSpace:
    """An assignment under local search: the owner array (changed in place), member loads and
    counts, and each member's partitions sorted by load (built once, patched as they move)."""

    RECEIVERS = 8  # lightest members tried per step (and as many with room for one more)
    DIRECT_AIM_MAX_MOVES = 256
    MAX_STEPS_PER_MEMBER = 200

    def __init__(self, group: ColumnarGroup, owner: np.ndarray, loads: np.ndarray, classes: SubscriptionClasses, max_count_skew: int):
        self.group = group
        self.owner = owner
        self.w = loads
        self.classes = classes
        self.skew = max_count_skew
        m_count = group.num_members
        assigned = np.flatnonzero(owner >= 0)
        self.load = np.bincount(owner[assigned], weights=loads[assigned], minlength=m_count).astype(np.float64)
        self.count = np.bincount(owner[assigned], minlength=m_count).astype(np.int64)
        owners = owner[assigned]
        if m_count <= np.iinfo(np.int16).max:
            owners = owners.astype(np.int16)  # numpy's stable sort of int16 is a radix sort
        # Each member's partitions, ascending; sorted by load only when first looked at.
        self._by_member = assigned[np.argsort(owners, kind="stable")]
        self._indptr = np.zeros(m_count + 1, dtype=np.int64)
        np.cumsum(self.count, out=self._indptr[1:])
        self._patched: dict[int, np.ndarray] = {}
        self.homogeneous = len(classes.members) == 1
        self._matrix: np.ndarray | None = None
        self._pairs: np.ndarray | None = None
        if not self.homogeneous:
            if m_count * group.num_topics <= 1 << 26:
                self._matrix = np.zeros((m_count, group.num_topics), dtype=bool)
                self._matrix[group.subscription_member, group.subscription_topics] = True
            else:
                self._pairs = np.sort(group.subscription_member * group.num_topics + group.subscription_topics)
        self._neighbours: dict[int, np.ndarray] = {}
        # Per class: count value -> how many of its members hold that many partitions.
        self._histograms: list[dict[int, int]] = []
        for members in classes.members:
            values, times = np.unique(self.count[members], return_counts=True)
            self._histograms.append(dict(zip(values.tolist(), times.tolist(), strict=True)))
        total = float(self.load.sum())
        # Loads are floats: a step must gain more than rounding can invent.
        self.eps = 1e-9 * total if total > 0 else 0.0

    # A step must lower the heaviest member's load by at least this fraction of it: finer
    # levelling is noise next to any measured load, and would take a step per member.
    STEP_GAIN = 1e-3

    def _worth(self, value: float, heavy: float) -> bool:
        return value < heavy - max(self.eps, self.STEP_GAIN * heavy)

    def heaviest(self) -> float:
        return float(self.load.max()) if len(self.load) else 0.0

    def parts(self, m: int) -> np.ndarray:
        """Member m's partitions, by load ascending (ties by partition)."""
        got = self._patched.get(m)
        if got is None:
            got = self._by_member[self._indptr[m] : self._indptr[m + 1]]
            got = got[np.argsort(self.w[got], kind="stable")]
            self._patched[m] = got
        return got

    def _subscribes(self, m: int, partitions: np.ndarray) -> np.ndarray:
        topics = self.group.partition_topic[partitions]
        if self.homogeneous:
            return np.ones(len(partitions), dtype=bool)
        if self._matrix is not None:
            return np.asarray(self._matrix[m, topics])
        assert self._pairs is not None
        keys = m * self.group.num_topics + topics.astype(np.int64)
        pos = np.minimum(np.searchsorted(self._pairs, keys), len(self._pairs) - 1)
        return np.asarray(self._pairs[pos] == keys)

    def _neighbours_of(self, m: int) -> np.ndarray:
        """Members sharing a subscribed topic with m's class (every member if homogeneous)."""
        c = int(self.classes.of_member[m])
        got = self._neighbours.get(c)
        if got is None:
            if self.homogeneous:
                got = np.arange(self.group.num_members)
            else:
                mine = self.group.subscribed_topics(m)
                if self._matrix is not None:
                    got = np.flatnonzero(self._matrix[:, mine].any(axis=1))
                else:
                    sub = np.isin(self.group.subscription_topics, mine)
                    got = np.unique(self.group.subscription_member[sub])
            self._neighbours[c] = got
        return got

    def _movable_parts(self, m: int, movable: np.ndarray) -> np.ndarray:
        """Member m's partitions that may move and carry load (moving a zero gains nothing)."""
        mine = self.parts(m)
        mine = mine[movable[mine]]
        return np.asarray(mine[self.w[mine] > 0])

    def _count_ok(self, giver: int, taker: int) -> bool:
        """Whether one partition may pass from giver to taker within the count bound: on each
        class's histogram of counts (a handful of distinct values), not on its members."""
        of = self.classes.of_member
        cg, ct = int(of[giver]), int(of[taker])
        for c in {cg, ct}:
            change: dict[int, int] = {}
            if c == cg:
                n = int(self.count[giver])
                change[n] = change.get(n, 0) - 1
                change[n - 1] = change.get(n - 1, 0) + 1
            if c == ct:
                n = int(self.count[taker])
                change[n] = change.get(n, 0) - 1
                change[n + 1] = change.get(n + 1, 0) + 1
            histogram = self._histograms[c]
            present = [v for v in histogram.keys() | change.keys() if histogram.get(v, 0) + change.get(v, 0) > 0]
            if max(present) - min(present) > self.skew:
                return False
        return True

    def improve(self, movable: np.ndarray, step_gain: float | None = None, max_steps: int | None = None) -> int:
        """Lighten the heaviest member until it cannot be (by ``step_gain`` of its load a step;
        at most ``max_steps``); only ``movable`` partitions move. Returns the steps taken."""
        steps = 0
        limit = self.MAX_STEPS_PER_MEMBER * max(self.group.num_members, 1) if max_steps is None else max_steps
        coarse = self.STEP_GAIN
        if step_gain is not None:
            self.STEP_GAIN = step_gain
        try:
            while steps < limit:
                h = int(np.argmax(self.load))
                if not (self._step(h, movable) or self._chain_step(h, movable) or self._resplit(h, movable)):
                    break
                steps += 1
        finally:
            self.STEP_GAIN = coarse
        return steps

    def fit_under(self, cap: float, movable: np.ndarray) -> bool:
        """Bring every member to ``cap`` or under with few moves: the heaviest member first, each
        step the fewest partitions (a move before a swap) that keep the partner under the cap,
        preferring steps that finish the member. Whether it got there."""
        limit = self.MAX_STEPS_PER_MEMBER * max(self.group.num_members, 1)
        for _ in range(limit):
            h = int(np.argmax(self.load))
            if self.load[h] <= cap + self.eps:
                return True
            step = self._best_step(h, movable, cap)
            # Chains are tried where each partition is a large share of a load (a member holds
            # few), which is where they save moves; on large groups they would cost a search
            # over pairs of partners at every step.
            few = len(self.parts(h)) <= self.RESPLIT_MAX[2] * 4
            chain = self._best_chain(h, movable, cap) if few and (step is None or step[0][0] > 0) else None
            if step is None and chain is None:
                return False
            if chain is not None and (step is None or chain[0] < step[0]):
                self._apply_chain(chain)
            else:
                assert step is not None
                self._apply(h, step)
        return False

    def _step(self, h: int, movable: np.ndarray) -> bool:
        best = self._best_step(h, movable, None)
        if best is None:
            return False
        self._apply(h, best)
        return True

    def _apply(self, h: int, step: _Step) -> None:
        _, p, q, r = step
        self.move(p, r)
        if q >= 0:
            self.move(q, h)

    def _best_step(self, h: int, movable: np.ndarray, cap: float | None) -> _Step | None:
        """The best move or swap out of the heaviest member h. Without ``cap``: the one that
        lowers the larger of the two loads most. With ``cap``: partners stay under it, and the
        step that brings h under it with the fewest partitions wins (else the fewest that lower h)."""
        heavy = self.load[h]
        mine = self._movable_parts(h, movable)
        if len(mine) == 0:
            return None
        near = self._neighbours_of(h)
        near = near[(self.load[near] < heavy - self.eps) & (near != h)]
        if len(near) == 0:
            return None
        lightest = near[np.lexsort((near, self.load[near]))].tolist()
        # Swaps keep counts, moves need room: the lightest few, and the lightest few with room.
        with_room = [r for r in lightest[: self.RECEIVERS * 8] if self._count_ok(h, r)][: self.RECEIVERS]
        candidates = list(dict.fromkeys([*lightest[: self.RECEIVERS], *with_room]))
        can_take = set(with_room)
        excess = heavy - cap if cap is not None else 0.0
        best: _Step | None = None
        for r in candidates:
            gap = heavy - self.load[r]
            give = mine[self._subscribes(r, mine)]
            if len(give) == 0:
                continue
            wg = self.w[give]
            if r in can_take:
                if cap is None:
                    i = int(np.searchsorted(wg, gap / 2))
                    j = np.array([x for x in (i - 1, i) if 0 <= x < len(give)], dtype=np.int64)
                else:
                    j = np.arange(len(give))
                best = self._pick(best, heavy, heavy - wg[j], self.load[r] + wg[j], 1, give[j], None, r, cap)
            theirs = self.parts(r)
            theirs = theirs[movable[theirs]]
            theirs = theirs[self._subscribes(h, theirs)]
            if len(theirs) == 0:
                continue
            wt = self.w[theirs]
            at = np.searchsorted(wt, wg - gap / 2)
            tries = [at - 1, at]
            if cap is not None:  # the heaviest partner partition that still lets h finish
                tries.append(np.searchsorted(wt, wg - excess, side="right") - 1)
            for j in tries:
                j = np.clip(j, 0, len(theirs) - 1)
                d = wg - wt[j]
                ok = (d > self.eps) & (d < gap - self.eps)
                if ok.any():
                    best = self._pick(best, heavy, (heavy - d)[ok], (self.load[r] + d)[ok], 2, give[ok], theirs[j][ok], r, cap)
        return best

    def _pick(self, best: _Step | None, heavy: float, h_new: np.ndarray, r_new: np.ndarray, cost: int, give: np.ndarray,
              take: np.ndarray | None, r: int, cap: float | None) -> _Step | None:
        """The better of ``best`` and the best acceptable of these candidate steps (arrays of
        h's and r's loads after each): keys compare as tuples, lowest wins."""
        if len(h_new) == 0:
            return best
        top = np.maximum(h_new, r_new)
        costs = np.full(len(top), float(cost))
        if cap is None:
            ok = top < heavy - max(self.eps, self.STEP_GAIN * heavy)
            keys = np.stack((top, costs), axis=1)
        else:
            ok = (r_new <= cap + self.eps) & (h_new < heavy - self.eps)
            keys = np.stack(((h_new > cap + self.eps).astype(np.float64), costs, top), axis=1)
        if not ok.any():
            return best
        rows = np.flatnonzero(ok)
        i = int(rows[np.lexsort(keys[rows].T[::-1])[0]])
        key = tuple(keys[i].tolist())
        if best is None or key < best[0]:
            return (key, int(give[i]), -1 if take is None else int(take[i]), r)
        return best

    def _chain_step(self, h: int, movable: np.ndarray) -> bool:
        chain = self._best_chain(h, movable, None)
        if chain is None:
            return False
        self._apply_chain(chain)
        return True

    def _apply_chain(self, chain: _Chain) -> None:
        _, p, q, r, s = chain
        self.move(q, s)
        self.move(p, r)

    def _best_chain(self, h: int, movable: np.ndarray, cap: float | None) -> _Chain | None:
        """When no partner can take from the heaviest member directly (its partners are busy,
        or the lighter members do not subscribe to its topics): h passes a partition p to r,
        which passes a partition q on to a lighter s. Counts: h one fewer, s one more, r
        unchanged. Without ``cap``: the chain that lowers the largest of the three loads most,
        if below h's. With ``cap``: r and s stay under it, chains that bring h under it first."""
        heavy = self.load[h]
        mine = self._movable_parts(h, movable)
        if len(mine) == 0:
            return None
        near = self._neighbours_of(h)
        near = near[near != h]
        best: _Chain | None = None
        for r in near[np.lexsort((near, self.load[near]))][: self.RECEIVERS].tolist():
            give = mine[self._subscribes(r, mine)]
            if len(give) == 0:
                continue
            wg = self.w[give]
            onward = self._neighbours_of(r)
            onward = onward[(onward != h) & (onward != r) & (self.load[onward] < heavy - self.eps)]
            onward = onward[np.lexsort((onward, self.load[onward]))].tolist()
            takers = [s for s in onward[: self.RECEIVERS * 8] if self._count_ok(h, s)][: self.RECEIVERS]
            theirs = self.parts(r)
            theirs = theirs[movable[theirs]]
            for s in takers:
                passed = theirs[self._subscribes(s, theirs)]
                wq = self.w[passed]
                fits = passed[(self.load[s] + wq < heavy - self.eps) & (wq > 0)]
                if len(fits) == 0:
                    continue
                wq = self.w[fits]
                # For each q, the p that levels h and r best (r ends at load[r] + w_p - w_q);
                # with a cap, also the lightest p that brings h under it.
                at = np.searchsorted(wg, (heavy - self.load[r] + wq) / 2)
                tries = [at - 1, at]
                if cap is not None:
                    tries.append(np.full(len(wq), np.searchsorted(wg, heavy - cap - self.eps)))
                for j in tries:
                    j = np.clip(j, 0, len(give) - 1)
                    h_new, r_new, s_new = heavy - wg[j], self.load[r] + wg[j] - wq, self.load[s] + wq
                    top = np.maximum(np.maximum(h_new, r_new), s_new)
                    if cap is None:
                        ok = top < heavy - max(self.eps, self.STEP_GAIN * heavy)
                        keys = np.stack((top, np.full(len(top), 3.0)), axis=1)
                    else:
                        ok = (r_new <= cap + self.eps) & (s_new <= cap + self.eps) & (h_new < heavy - self.eps)
                        keys = np.stack(((h_new > cap + self.eps).astype(np.float64), np.full(len(top), 2.0), top), axis=1)
                    if not ok.any():
                        continue
                    rows = np.flatnonzero(ok)
                    k = int(rows[np.lexsort(keys[rows].T[::-1])[0]])
                    key = tuple(keys[k].tolist())
                    if best is None or key < best[0]:
                        best = (key, int(give[j[k]]), int(fits[k]), r, s)
        return best

    # Every split of the partitions of two (three) members is tried when they hold at most
    # this many: 2^14 (3^9) splits.
    RESPLIT_MAX = {2: 14, 3: 9}

    def _resplit(self, h: int, movable: np.ndarray) -> bool:
        """Last resort for the heaviest member: deal its movable partitions and those of one or
        two lighter partners anew, trying every split (when they hold few enough). This finds
        what single moves and swaps miss (one hot partition for two warm ones, a three-way
        exchange between members of different subscriptions), which matters in small groups;
        large groups have many partners and fine-grained partitions."""
        heavy = self.load[h]
        near = self._neighbours_of(h)
        near = near[(near != h) & (self.load[near] < heavy - self.eps)]
        lightest = near[np.lexsort((near, self.load[near]))].tolist()
        groups: list[tuple[int, ...]] = [(r,) for r in lightest[: self.RECEIVERS]]
        groups += [(r, s) for i, r in enumerate(lightest[:4]) for s in lightest[i + 1 : 4]]
        # A partner's own partners too: h's partitions may only fit where r's can make room.
        for r in lightest[:4]:
            beyond = self._neighbours_of(r)
            beyond = beyond[(beyond != h) & (beyond != r)]
            groups += [(r, int(s)) for s in beyond[np.lexsort((beyond, self.load[beyond]))][:2] if (r, int(s)) not in groups and (int(s), r) not in groups]
        best: tuple[float, int, tuple[int, ...], np.ndarray, np.ndarray] | None = None
        for partners in groups:
            members = (h, *partners)
            held = [self.parts(m)[movable[self.parts(m)]] for m in members]
            both = np.concatenate(held)
            n, k = len(both), len(members)
            if n == 0 or n > self.RESPLIT_MAX[k]:
                continue
            # Row i: the member (position in ``members``) each partition goes to in split i.
            splits = (np.arange(k**n)[:, None] // k ** np.arange(n)) % k
            subscribes = np.stack([self._subscribes(m, both) for m in members])  # (k, n)
            allowed = subscribes[splits, np.arange(n)].all(axis=1)
            counts = np.stack([self.count[m] - len(held[i]) + (splits == i).sum(axis=1) for i, m in enumerate(members)], axis=1)
            allowed &= self._counts_ok(members, counts)
            w = self.w[both]
            loads = np.stack([self.load[m] - float(self.w[held[i]].sum()) + (splits == i) @ w for i, m in enumerate(members)], axis=1)
            value = np.where(allowed, loads.max(axis=1), np.inf)
            home = np.repeat(np.arange(k), [len(x) for x in held])
            moved = (splits != home).sum(axis=1)
            i = int(np.lexsort((moved, value))[0])
            if self._worth(float(value[i]), heavy) and (best is None or (value[i], moved[i]) < (best[0], best[1])):
                best = (float(value[i]), int(moved[i]), members, both, splits[i])
        if best is None:
            return False
        _, _, members, both, split = best
        for p, to in zip(both.tolist(), split.tolist(), strict=True):
            if self.owner[p] != members[to]:
                self.move(p, members[to])
        return True

    def _counts_ok(self, members: tuple[int, ...], counts: np.ndarray) -> np.ndarray:
        """For candidate counts of ``members`` (rows of ``counts``), whether every class they
        belong to stays within the count bound (every other member's count as it is)."""
        ok = np.ones(len(counts), dtype=bool)
        classes = self.classes
        chosen = np.asarray(members)
        for c in {int(classes.of_member[m]) for m in members}:
            in_class = classes.members[c]
            others = self.count[in_class[~np.isin(in_class, chosen)]]
            hi = np.full(len(counts), others.max() if len(others) else np.iinfo(np.int64).min)
            lo = np.full(len(counts), others.min() if len(others) else np.iinfo(np.int64).max)
            for i, m in enumerate(members):
                if classes.of_member[m] == c:
                    hi, lo = np.maximum(hi, counts[:, i]), np.minimum(lo, counts[:, i])
            ok &= hi - lo <= self.skew
        return ok

    def move(self, p: int, to: int) -> None:
        frm = int(self.owner[p])
        w = self.w[p]
        self.owner[p] = to
        self.load[frm] -= w
        self.load[to] += w
        for m, delta in ((frm, -1), (to, 1)):
            histogram = self._histograms[int(self.classes.of_member[m])]
            n = int(self.count[m])
            histogram[n] -= 1
            if not histogram[n]:
                del histogram[n]
            histogram[n + delta] = histogram.get(n + delta, 0) + 1
            self.count[m] = n + delta
        theirs = self.parts(frm)
        self._patched[frm] = theirs[theirs != p]
        mine = self.parts(to)
        i = int(np.searchsorted(self.w[mine], w))
        self._patched[to] = np.insert(mine, i, p)

    def undo_needless(self, settled: np.ndarray, bound: float) -> None:
        """Send moved partitions back to their ``settled`` owner, alone or as swapped pairs,
        wherever that keeps every member at or under ``bound`` and counts within the bound."""
        limit = bound + self.eps
        for _ in range(len(self.owner) + 1):
            changed = np.flatnonzero(self.owner != settled)
            undone = False
            # Heaviest first: each one back saves a move, and heavy ones are the hardest to fit.
            for p in changed[np.argsort(-self.w[changed], kind="stable")].tolist():
                home, here = int(settled[p]), int(self.owner[p])
                if home == here or self.load[home] + self.w[p] > limit or not self._count_ok(here, home):
                    continue
                self.move(p, home)
                undone = True
            changed = np.flatnonzero(self.owner != settled)
            pairs: dict[tuple[int, int], list[int]] = {}
            for p in changed.tolist():
                pairs.setdefault((int(settled[p]), int(self.owner[p])), []).append(p)
            for (home, here), ps in sorted(pairs.items()):
                back = pairs.get((here, home), [])
                for p in ps:
                    for q in back:
                        if self.owner[p] != here or self.owner[q] != home:
                            continue
                        d = self.w[p] - self.w[q]
                        if self.load[home] + d <= limit and self.load[here] - d <= limit:
                            self.move(p, home)
                            self.move(q, here)
                            undone = True
                            break
            if not undone:
                return
