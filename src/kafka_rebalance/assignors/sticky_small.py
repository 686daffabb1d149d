"""The sticky engine (assignors/sticky.py) on Python lists, for small groups.

Every step of ``sticky.sticky_owner`` costs a few dozen numpy calls of a microsecond or more
each, whatever the group's size; a group of five members and twenty partitions spends nearly all
its time there (2.4 ms a group, against kafka-python's 0.9 ms). This module takes the same
steps, in the same order, with the same tie-breaks, on lists of Python ints: the answer is the
numpy path's, partition for partition (tests/assignors/test_sticky_small.py compares both),
and ``sticky.sticky_owner`` picks it up to ``SMALL_GROUP_CELLS`` members x topics and
``SMALL_GROUP_PARTITIONS`` partitions. Each function names the one of sticky.py it mirrors;
the reasons for each rule are given there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from kafka_rebalance.model import UNASSIGNED, ColumnarGroup

# Up to this many members x topics and partitions, lists beat numpy's per-call cost (at 60
# members x 30 topics and ~400 partitions the two paths take about as long).
SMALL_GROUP_CELLS = 1024
SMALL_GROUP_PARTITIONS = 256

Counts = list[list[int]]


def is_small(group: ColumnarGroup) -> bool:
    """Whether ``sticky_owner_small`` handles the group (racks are left to the numpy path)."""
    return (
        group.num_members * group.num_topics <= SMALL_GROUP_CELLS
        and sum(group.partition_counts.tolist()) <= SMALL_GROUP_PARTITIONS
        and not (any(r is not None for r in group.member_racks) and any(r is not None for r in group.partition_racks))
    )


def water_fill_list(base: list[int], n: int, priority: list[int] | None = None) -> list[int]:
    """``sticky.water_fill(base, n, priority)`` on Python lists."""
    if n <= 0:
        return [0] * len(base)
    # count = how many of the lowest loads can be lifted to the next one within n units.
    total = count = 0
    for j, v in enumerate(sorted(base), 1):
        if j * v - (total + v) > n:
            break
        total += v
        count = j
    level = (n + total) // count
    add = [level - b if b < level else 0 for b in base]
    remainder = n - sum(add)
    if remainder and priority is not None:
        at_level = [i for i, b in enumerate(base) if b <= level]
        at_level.sort(key=lambda i: -priority[i])  # stable: ties keep position order
        for i in at_level[:remainder]:
            add[i] += 1
    elif remainder:
        for i, b in enumerate(base):
            if b <= level:
                add[i] += 1
                remainder -= 1
                if not remainder:
                    break
    return add


class _Small:
    """One computation's state: the group on lists, counts ``x`` (previously owned) and ``y``
    (now) per member and class, and loads."""

    def __init__(self, group: ColumnarGroup):
        self.group = group
        self.m_count = group.num_members
        counts = group.partition_counts.tolist()
        self.topic_of: list[int] = [t for t, n in enumerate(counts) for _ in range(n)]
        self.offsets = [0]
        for n in counts:
            self.offsets.append(self.offsets[-1] + n)
        rank = [0] * self.m_count
        for r, m in enumerate(group.member_order.tolist()):
            rank[m] = r
        self.rank = rank
        indptr = group.subscription_indptr.tolist()
        flat = group.subscription_topics.tolist()
        self.member_topics = [set(flat[indptr[m] : indptr[m + 1]]) for m in range(self.m_count)]
        subscribers: list[list[int]] = [[] for _ in counts]
        for m in range(self.m_count):
            for t in flat[indptr[m] : indptr[m + 1]]:
                subscribers[t].append(m)
        for members in subscribers:
            members.sort(key=rank.__getitem__)
        owned_indptr = group.owned_indptr.tolist()
        owned = group.owned_partitions.tolist()
        self.claims = [(m, p) for m in range(self.m_count) for p in owned[owned_indptr[m] : owned_indptr[m + 1]]]
        self.generations = group.generations.tolist()
        self.topic_classes(subscribers, counts)

    def topic_classes(self, subscribers: list[list[int]], counts: list[int]) -> None:
        """``sticky._topic_classes``: classes numbered by their first topic."""
        class_of_key: dict[tuple[int, ...], int] = {}
        self.topic_class = [-1] * len(counts)
        self.class_members: list[list[int]] = []
        for t, members in enumerate(subscribers):
            if not members or not counts[t]:
                continue
            key = tuple(members)
            c = class_of_key.get(key)
            if c is None:
                c = class_of_key[key] = len(self.class_members)
                self.class_members.append(members)
            self.topic_class[t] = c
        self.num_classes = len(self.class_members)
        self.member_classes: list[list[int]] = [[] for _ in range(self.m_count)]
        for c, members in enumerate(self.class_members):
            for m in members:
                self.member_classes[m].append(c)

    def subscribes(self, m: int, p: int) -> bool:
        return self.topic_of[p] in self.member_topics[m]

    def previous_owners(self) -> list[int]:
        """``sticky.previous_owners``."""
        prev = [UNASSIGNED] * len(self.topic_of)
        by_partition: dict[int, list[int]] = {}
        for m, p in self.claims:
            if self.subscribes(m, p):
                by_partition.setdefault(p, []).append(m)
        gens = self.generations
        for p, claimants in by_partition.items():
            if len(claimants) == 1:
                prev[p] = claimants[0]
                continue
            best = max(gens[m] for m in claimants)
            winners = [m for m in claimants if gens[m] == best]
            if len(winners) == 1:
                prev[p] = winners[0]
        return prev

    def older_claimants(self, prev: list[int]) -> list[int]:
        """``sticky.older_claimants``: of equal generations, the last claim in member order."""
        older = [UNASSIGNED] * len(self.topic_of)
        best: dict[int, int] = {}
        gens = self.generations
        for m, p in self.claims:
            if m != prev[p] and self.subscribes(m, p) and (p not in best or gens[m] >= best[p]):
                best[p] = gens[m]
                older[p] = m
        return older

    # -- violation checks (sticky._ClassIndex) --------------------------------------------------

    def violated(self, c: int, y: Counts, load: list[int]) -> bool:
        members = self.class_members[c]
        lowest = min(load[m] for m in members)
        holders = [load[m] for m in members if y[m][c] > 0]
        return bool(holders) and max(holders) - lowest >= 2

    def violated_after(self, move: tuple[int, int, int], y: Counts, load: list[int]) -> tuple[int, list[int]]:
        """How many of the donor's and receiver's classes are violated after the single-unit
        move (donor, receiver, class), and which classes those are."""
        donor, receiver, k = move
        classes = sorted(set(self.member_classes[donor]) | set(self.member_classes[receiver]))
        y[donor][k] -= 1
        y[receiver][k] += 1
        load[donor] -= 1
        load[receiver] += 1
        count = sum(self.violated(c, y, load) for c in classes)
        y[donor][k] += 1
        y[receiver][k] -= 1
        load[donor] += 1
        load[receiver] -= 1
        return count, classes


def sticky_owner_small(group: ColumnarGroup) -> np.ndarray:
    """``sticky.sticky_owner`` on lists: the same owner array."""
    s = _Small(group)
    owner = [UNASSIGNED] * len(s.topic_of)
    if not owner or s.m_count == 0:
        return np.asarray(owner, dtype=np.int64)
    nc = s.num_classes
    if nc == 0:
        return np.asarray(owner, dtype=np.int64)
    m_count = s.m_count
    partition_class = [s.topic_class[t] for t in s.topic_of]
    class_size = [0] * nc
    for c in partition_class:
        if c >= 0:
            class_size[c] += 1
    prev = s.previous_owners()
    x = [[0] * nc for _ in range(m_count)]
    for p, m in enumerate(prev):
        if m >= 0:
            x[m][partition_class[p]] += 1
    y = [row[:] for row in x]
    load = [sum(row) for row in y]

    class_members = s.class_members
    by_constraint = sorted(range(nc), key=lambda c: (len(class_members[c]), c))
    free_units = [[0] * nc for _ in range(m_count)]
    for c in by_constraint:
        members = class_members[c]
        free = class_size[c] - sum(y[m][c] for m in members)
        add = water_fill_list([load[m] for m in members], free)
        for m, a in zip(members, add, strict=True):
            y[m][c] += a
            load[m] += a
            free_units[m][c] = a
    if nc > 1:
        _spread_free_units(by_constraint, class_members, free_units, y, load)

    while True:
        if _push_new_units_directly(s, by_constraint, x, y, load):
            continue
        violated = [s.violated(c, y, load) for c in range(nc)]
        violated_count = sum(violated)
        if not violated_count:
            break
        c = next(k for k in by_constraint if violated[k])
        members = class_members[c]
        starved = min(members, key=load.__getitem__)
        if _push_new_units_along_chain(s, starved, x, y, load, towards_start=True):
            continue
        overloaded = max((m for m in members if y[m][c] > 0), key=load.__getitem__)
        if _push_new_units_along_chain(s, overloaded, x, y, load, towards_start=False):
            continue
        if _rebalance_with_new_units(s, c, x, y, load, violated, violated_count):
            continue
        touched = [False] * m_count
        for k in [c, *(k for k in by_constraint if violated[k] and k != c)]:
            members = class_members[k]
            if any(touched[m] for m in members):
                continue
            for m in members:
                touched[m] = True
            _relevel(k, members, class_size, x, y, load)

    _regain_previous_owners(s, x, y, load)
    keep = [[min(a, b) for a, b in zip(xr, yr, strict=True)] for xr, yr in zip(x, y, strict=True)]
    return np.asarray(_materialise(s, prev, partition_class, keep, y, owner), dtype=np.int64)


def _spread_free_units(by_constraint: list[int], class_members: list[list[int]], free_units: Counts, y: Counts, load: list[int], max_sweeps: int = 50) -> None:
    """``sticky._spread_free_units``."""
    free_total = [sum(free_units[m][c] for m in class_members[c]) for c in range(len(class_members))]
    classes = [c for c in by_constraint if free_total[c] > 0]
    if not classes:
        return
    free_of = {c: [free_units[m][c] for m in class_members[c]] for c in classes}
    for c in redeal_free_units(classes, class_members, free_of, free_total, load, water_fill_list, max_sweeps):
        for m, n in zip(class_members[c], free_of[c], strict=True):
            y[m][c] += n - free_units[m][c]
            free_units[m][c] = n


def redeal_free_units(
    classes: list[int],
    members_of: Sequence[list[int]] | Mapping[int, list[int]],
    free_of: dict[int, list[int]],
    total_of: Sequence[int] | Mapping[int, int],
    loads: list[int],
    fill: Callable[[list[int], int], list[int]],
    max_sweeps: int,
) -> set[int]:
    """The sweeps of ``sticky._spread_free_units`` on Python lists: re-deal each class's free
    units (``free_of[c]``, one count per member of ``members_of[c]``) by ``fill`` until a sweep
    changes nothing. Updates ``free_of`` and ``loads`` in place; returns the classes re-dealt."""
    # A class whose members' loads did not change since it was last dealt would be dealt the
    # same again: skip it (``changed_at`` and ``dealt_at`` are step stamps).
    changed_at = [0] * len(loads)
    dealt_at = dict.fromkeys(classes, -1)
    redealt: set[int] = set()
    step = 0
    for _ in range(max_sweeps):
        changed = False
        for c in classes:
            members = members_of[c]
            step += 1
            if dealt_at[c] >= max([changed_at[m] for m in members]):
                continue
            dealt_at[c] = step
            old = free_of[c]
            base = [loads[m] - o for m, o in zip(members, old, strict=True)]
            new = fill(base, total_of[c])
            if new != old:
                changed = True
                redealt.add(c)
                free_of[c] = new
                for m, o, n, b in zip(members, old, new, base, strict=True):
                    if n != o:
                        changed_at[m] = step
                        loads[m] = b + n
        if not changed:
            break
    return redealt


def _relevel(c: int, members: list[int], class_size: list[int], x: Counts, y: Counts, load: list[int]) -> None:
    """``sticky._relevel``."""
    held = [y[m][c] for m in members]
    base = [load[m] - h for m, h in zip(members, held, strict=True)]
    n = class_size[c]
    plain = water_fill_list(base, n)
    priority = [2 * (x[m][c] > p) + (h > p) for m, h, p in zip(members, held, plain, strict=True)]
    new = water_fill_list(base, n, priority)
    for m, b, v in zip(members, base, new, strict=True):
        y[m][c] = v
        load[m] = b + v


def _push_new_units_directly(s: _Small, by_constraint: list[int], x: Counts, y: Counts, load: list[int]) -> bool:
    """``sticky._push_new_units_directly``: decided on the loads before any move, applied in
    constraint order to classes whose giver and taker are not yet busy."""
    plans: dict[int, tuple[int, int]] = {}
    for c, members in enumerate(s.class_members):
        lowest = min(load[m] for m in members)
        givers = [m for m in members if y[m][c] > x[m][c]]
        if not givers:
            continue
        highest = max(load[m] for m in givers)
        if highest - lowest < 2:
            continue
        giver = next(m for m in givers if load[m] == highest)
        taker = next(m for m in members if load[m] == lowest)
        plans[c] = (giver, taker)
    if not plans:
        return False
    busy: set[int] = set()
    for k in by_constraint:
        if k not in plans:
            continue
        g, t = plans[k]
        if g in busy or t in busy:
            continue
        busy.update((g, t))
        units = min(y[g][k] - x[g][k], (load[g] - load[t]) // 2)
        y[g][k] -= units
        y[t][k] += units
        load[g] -= units
        load[t] += units
    return True


def _push_new_units_along_chain(s: _Small, start: int, x: Counts, y: Counts, load: list[int], towards_start: bool) -> bool:
    """``sticky._push_new_units_along_chain``: the same breadth-first search (each class
    reached from its lowest-numbered frontier member, each member via its lowest-numbered
    newly reached class)."""
    m_count = s.m_count
    class_members = s.class_members
    parent = [-1] * m_count
    via_class = [-1] * m_count
    seen = [False] * m_count
    seen[start] = True
    class_seen = [False] * s.num_classes
    frontier = {start}
    while True:
        near_of_class: dict[int, int] = {}
        for c, members in enumerate(class_members):
            if class_seen[c]:
                continue
            reached = [m for m in members if m in frontier and (towards_start or y[m][c] > x[m][c])]
            if reached:
                near_of_class[c] = min(reached)
        if not near_of_class:
            return False
        for c in near_of_class:
            class_seen[c] = True
        first_class: dict[int, int] = {}
        for c in sorted(near_of_class):
            for m in class_members[c]:
                if not seen[m] and m not in first_class and (not towards_start or y[m][c] > x[m][c]):
                    first_class[m] = c
        if not first_class:
            return False
        other = sorted(first_class)
        best_gap, end = -1 << 62, -1
        for m in other:
            k = first_class[m]
            seen[m] = True
            parent[m] = near_of_class[k]
            via_class[m] = k
            gap = load[m] - load[start] if towards_start else load[start] - load[m]
            if gap > best_gap:
                best_gap, end = gap, m
        if best_gap >= 2:
            _push_chain(start, end, parent, via_class, x, y, load, towards_start)
            return True
        frontier = set(other)


def _push_chain(start: int, end: int, parent: list[int], via_class: list[int], x: Counts, y: Counts, load: list[int], towards_start: bool) -> None:
    """``sticky._push_chain``."""
    chain = [end]
    while chain[-1] != start:
        chain.append(parent[chain[-1]])
    links = [(m, parent[m], via_class[m]) for m in chain[:-1]]
    steps = [(far, near, k) if towards_start else (near, far, k) for far, near, k in links]
    room = min(y[g][k] - x[g][k] for g, _, k in steps)
    units = min(room, abs(load[end] - load[start]) // 2)
    for g, t, k in steps:
        y[g][k] -= units
        y[t][k] += units
    if towards_start:
        load[end] -= units
        load[start] += units
    else:
        load[start] -= units
        load[end] += units


def _top(candidates: list[tuple[int, int]], limit: int) -> list[int]:
    """``sticky._top_per_run`` for one run: the first ``limit`` by key, ties by position."""
    return [m for _, m in sorted(candidates, key=lambda kv: kv[0])[:limit]]


def _rebalance_with_new_units(s: _Small, c: int, x: Counts, y: Counts, load: list[int], violated: list[bool], violated_count: int) -> bool:
    """``sticky._rebalance_with_new_units``."""
    members = s.class_members[c]
    starved = min(members, key=load.__getitem__)
    overloaded = max((m for m in members if y[m][c] > 0), key=load.__getitem__)
    moves: list[tuple[int, int, int]] = []
    for k in s.member_classes[starved]:
        fresh = [(-load[m], m) for m in s.class_members[k] if y[m][k] - x[m][k] > 0 and load[m] > load[starved] and m != starved]
        moves.extend((m, starved, k) for m in _top(fresh, 4))
    out_of: list[tuple[int, int, int]] = []
    for k in s.member_classes[overloaded]:
        if y[overloaded][k] <= x[overloaded][k]:
            continue
        idle = [(load[m], m) for m in s.class_members[k] if load[m] < load[overloaded] and m != overloaded]
        out_of.extend((overloaded, m, k) for m in _top(idle, 4))
    moves.extend(out_of)
    if not moves:
        return False
    best_remaining, best = violated_count, None
    for move in moves:
        after, classes = s.violated_after(move, y, load)
        remaining = violated_count - sum(violated[k] for k in classes) + after
        if remaining < best_remaining:
            best_remaining, best = remaining, move
    if best is None:
        return False
    donor, receiver, k = best
    y[donor][k] -= 1
    y[receiver][k] += 1
    load[donor] -= 1
    load[receiver] += 1
    return True


def _regain_previous_owners(s: _Small, x: Counts, y: Counts, load: list[int], max_rounds: int = 100) -> None:
    """``sticky._regain_previous_owners``."""
    class_members = s.class_members
    for _ in range(max_rounds):
        short = any(y[m][c] < x[m][c] for c, members in enumerate(class_members) for m in members)
        has_new = any(y[m][c] > x[m][c] for c, members in enumerate(class_members) for m in members)
        if not short or not has_new:
            return
        giver_of_class = [-1] * s.num_classes
        for c, members in enumerate(class_members):
            givers = [m for m in members if y[m][c] > x[m][c]]
            if givers:
                best = max(load[m] for m in givers)
                giver_of_class[c] = next(m for m in givers if load[m] == best)
        offers = [(giver_of_class[c], m, c) for c, members in enumerate(class_members) if giver_of_class[c] >= 0 for m in members if y[m][c] < x[m][c]]
        if not offers:
            return
        swapped = _regain_by_swaps(s, offers, x, y, load)
        moves = [mv for mv in offers if load[mv[0]] >= load[mv[1]]]
        moves = [mv for mv in moves if s.violated_after(mv, y, load)[0] == 0]
        touched = [False] * s.num_classes
        any_touched = False
        for donor, receiver, k in moves:
            if not (y[donor][k] > x[donor][k] and x[receiver][k] > y[receiver][k]):
                continue
            classes = set(s.member_classes[donor]) | set(s.member_classes[receiver])
            if any(touched[c] for c in classes):
                continue
            for c in classes:
                touched[c] = True
            any_touched = True
            y[donor][k] -= 1
            y[receiver][k] += 1
            load[donor] -= 1
            load[receiver] += 1
        if not swapped and not any_touched:
            return


def _regain_by_swaps(s: _Small, offers: list[tuple[int, int, int]], x: Counts, y: Counts, load: list[int]) -> bool:
    """``sticky._regain_by_swaps``."""
    candidates = [
        (g, t, k, k2)
        for g, t, k in offers
        for k2 in s.member_classes[t]
        if k2 != k and g != t and k2 in s.member_classes[g] and y[t][k2] > x[t][k2]
    ]
    if not candidates:
        return False
    lowest = [min(load[m] for m in members) for members in s.class_members]
    candidates.sort(key=lambda e: not (x[e[0]][e[3]] > y[e[0]][e[3]]))  # stable: double gains first
    swapped = False
    for a, b, c, c2 in candidates:
        if not (y[a][c] > x[a][c] and x[b][c] > y[b][c] and y[b][c2] > x[b][c2]):
            continue
        if (y[a][c2] == 0 and load[a] > lowest[c2] + 1) or (y[b][c] == 0 and load[b] > lowest[c] + 1):
            continue
        y[a][c] -= 1
        y[b][c] += 1
        y[b][c2] -= 1
        y[a][c2] += 1
        swapped = True
    return swapped


def _materialise(s: _Small, prev: list[int], partition_class: list[int], keep: Counts, y: Counts, owner: list[int]) -> list[int]:
    """``sticky._materialise``."""
    nc = s.num_classes
    older = s.older_claimants(prev)
    claimed = [p for p, m in enumerate(prev) if m >= 0]
    if sum(map(sum, keep)) == len(claimed):
        for p in claimed:
            owner[p] = prev[p]
    else:
        # Per (member, class) cell: partitions an older owner also claims go first.
        ordered = sorted(claimed, key=lambda p: (prev[p] * nc + partition_class[p], older[p] >= 0, p))
        taken: dict[int, int] = {}
        for p in ordered:
            m, c = prev[p], partition_class[p]
            cell = m * nc + c
            if taken.get(cell, 0) < keep[m][c]:
                taken[cell] = taken.get(cell, 0) + 1
                owner[p] = m
    free = sorted((p for p, m in enumerate(owner) if m == UNASSIGNED and partition_class[p] >= 0), key=lambda p: (partition_class[p], p))
    slots: list[tuple[int, int, int]] = []  # (class, level, rank) per missing partition
    rank = s.rank
    for m in range(s.m_count):
        kept_load = sum(keep[m])
        for c in range(nc):
            slots.extend((c, kept_load + step, rank[m]) for step in range(y[m][c] - keep[m][c]))
    if not slots:
        return owner
    if len(slots) != len(free):
        raise AssertionError("sticky: free partitions and open slots disagree")
    order = s.group.member_order.tolist()
    receivers = [order[r] for _, _, r in sorted(slots)]
    wanted = [older[p] for p in free]
    if any(w >= 0 for w in wanted):
        receivers = _return_to_older_owners(free, receivers, wanted, partition_class)
    for p, m in zip(free, receivers, strict=True):
        owner[p] = m
    return owner


def _return_to_older_owners(free: list[int], receivers: list[int], wanted: list[int], partition_class: list[int]) -> list[int]:
    """``sticky._return_to_older_owners``."""
    result = receivers[:]
    classes = [partition_class[p] for p in free]
    pinned = [False] * len(free)
    for i, member in enumerate(wanted):
        if member < 0:
            continue
        if result[i] == member:
            pinned[i] = True
            continue
        j = next((j for j in range(len(free)) if result[j] == member and classes[j] == classes[i] and not pinned[j]), None)
        if j is not None:
            result[i], result[j] = result[j], result[i]
            pinned[i] = True
    return result
