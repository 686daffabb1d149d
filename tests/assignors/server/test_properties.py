"""Invariants of the server-side assignors on random consumer groups (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.assignors.server import (
    ServerMember,
    build_server_group,
    server_assign,
    target_assignment,
)
from kafka_rebalance.assignors.server.uniform import (
    ArrayLevelDealer,
    LevelDealer,
    heterogeneous_assign,
    kept_owner_and_sizes,
    least_loaded_sequence,
)
from kafka_rebalance.model import java_sort_key
from tests.assignors.server.helpers import kept_count
from tests.assignors.server.properties import assert_balanced, assert_valid

TOPICS = ["a", "b", "c", "d", "e"]


@st.composite
def groups(draw, disjoint: bool = False):
    """Topics with 0-9 partitions; 1-7 members with random (or, if ``disjoint``, bucketed)
    subscriptions; a random current assignment, partly to members no longer subscribed."""
    topics = {t: draw(st.integers(0, 9)) for t in TOPICS[: draw(st.integers(1, len(TOPICS)))]}
    names = list(topics)
    n = draw(st.integers(1, 7))
    if disjoint:
        buckets = draw(st.lists(st.integers(0, 2), min_size=len(names), max_size=len(names)))
        choice = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
        subscriptions = [tuple(t for t, b in zip(names, buckets, strict=True) if b == c) for c in choice]
    else:
        subscriptions = [tuple(draw(st.lists(st.sampled_from(names + ["gone"]), unique=True, max_size=4))) for _ in range(n)]
    ids = draw(st.lists(st.text("ABCxyz", min_size=1, max_size=3), min_size=n, max_size=n, unique=True))
    holders = {mid: {} for mid in ids}
    for topic, count in topics.items():
        for p in range(count):
            h = draw(st.integers(-1, n - 1))
            if h >= 0:
                holders[ids[h]].setdefault(topic, []).append(p)
    instance = [draw(st.one_of(st.none(), st.sampled_from(["i1", "i2", "i3", "i4", "i5", "i6", "i7"]))) for _ in range(n)]
    used: set[str] = set()
    members = []
    for i, mid in enumerate(ids):
        iid = instance[i] if instance[i] not in used else None
        if iid:
            used.add(iid)
        members.append(ServerMember(mid, subscriptions[i], {t: tuple(p) for t, p in holders[mid].items()}, instance_id=iid))
    return topics, members


def reference_range(topics, members):
    """Kafka's RangeAssignor.assignHeterogeneousGroup, step for step over dicts: members sorted
    (static by instance id first, then member id); each takes its next range of each topic."""
    def key(mm):
        return (0, java_sort_key(mm.instance_id)) if mm.instance_id else (1, java_sort_key(mm.member_id))

    ordered = sorted(members, key=key)
    subscribers = {t: sum(t in mm.subscribed_topics for mm in members) for t in topics}
    state = {t: [0, topics[t] // max(subscribers[t], 1), topics[t] % max(subscribers[t], 1)] for t in topics}
    result = {mm.member_id: {} for mm in members}
    for mm in ordered:
        for t in mm.subscribed_topics:
            if t not in topics:
                continue
            start, quota, extra = state[t]
            if extra > 0:
                quota += 1
                state[t][2] -= 1
            end = min(start + quota, topics[t])
            state[t][0] = end
            if start < end:
                result[mm.member_id][t] = tuple(range(start, end))
    return result


@given(groups())
def test_range_matches_kafkas_algorithm(group):
    topics, members = group
    assert server_assign("range", topics, members) == reference_range(topics, members)


@given(groups())
def test_uniform_is_valid_and_balanced(group):
    topics, members = group
    got = server_assign("uniform", topics, members)
    assert_valid(topics, members, got)
    assert_balanced(topics, members, got)


@given(groups(disjoint=True))
def test_uniform_keeps_as_many_as_balance_allows(group):
    """With one subscription class per topic, each class ends with q or q+1 per member, and no
    balanced assignment keeps more: sum(min(owned, q)) + min(extras, members owning more than q)."""
    topics, members = group
    got = server_assign("uniform", topics, members)
    assert_valid(topics, members, got)
    assert_balanced(topics, members, got)
    bound = 0
    for subscription in {frozenset(t for t in mm.subscribed_topics if t in topics) for mm in members}:
        cls = [mm for mm in members if frozenset(t for t in mm.subscribed_topics if t in topics) == subscription]
        total = sum(topics[t] for t in subscription)
        q, e = divmod(total, len(cls))
        owned = [sum(len(p) for t, p in mm.assigned.items() if t in subscription) for mm in cls]
        bound += sum(min(o, q) for o in owned) + min(e, sum(o > q for o in owned))
    assert kept_count(members, got) == bound
    # ... which is at least what Kafka's heterogeneous builder keeps on the same group.
    group_arrays = build_server_group(topics, members)
    kafka = target_assignment(group_arrays, heterogeneous_assign(group_arrays))
    assert kept_count(members, got) >= kept_count(members, kafka)


@given(groups())
def test_uniform_after_one_member_joins_moves_only_what_balance_needs(group):
    """The benchmark's incremental shape: assign, then a new member joins with the subscription
    of an existing one; what every member kept is still valid and balanced."""
    topics, members = group
    first = server_assign("uniform", topics, members)
    rejoined = [ServerMember(mm.member_id, mm.subscribed_topics, first[mm.member_id], mm.instance_id) for mm in members]
    rejoined.append(ServerMember("newMember", members[-1].subscribed_topics, {}))
    second = server_assign("uniform", topics, rejoined)
    assert_valid(topics, rejoined, second)
    assert_balanced(topics, rejoined, second)
    # A stable group stays put: assigning again changes nothing.
    again = [ServerMember(mm.member_id, mm.subscribed_topics, second[mm.member_id], mm.instance_id) for mm in rejoined]
    assert server_assign("uniform", topics, again) == second


@given(st.lists(st.integers(0, 6), min_size=1, max_size=8), st.integers(0, 25))
def test_least_loaded_sequence_is_kafkas_balancer(sizes, count):
    """least_loaded_sequence equals calling MemberAssignmentBalancer.nextLeastLoadedMember
    ``count`` times (UniformHeterogeneousAssignmentBuilder), simulated call by call."""
    live = list(sizes)
    order = sorted(range(len(live)), key=lambda i: (live[i], i))
    end, level, nxt, expected = 0, live[order[0]] - 1, 0, []
    for _ in range(count):
        if nxt >= end:
            level += 1
            while end < len(order) and live[order[end]] == level:
                end += 1
            nxt = 0
        member = order[nxt]
        nxt += 1
        expected.append(member)
        live[member] += 1
    got = least_loaded_sequence(np.arange(len(sizes)), np.array(sizes), count)
    assert got.tolist() == expected


@given(st.lists(st.integers(0, 1), min_size=1, max_size=9), st.integers(0, 3),
       st.lists(st.integers(0, 30), max_size=12), st.booleans())
def test_level_dealer_deals_as_least_loaded_sequence_call_after_call(levels, base, counts, on_arrays):
    """The heterogeneous builder's dealers (on Python lists, and on arrays for long lists) give,
    deal after deal, what least_loaded_sequence gives on the sizes as they stand (sizes start
    within one)."""
    members = list(range(0, 3 * len(levels), 3))  # ascending, not 0..n-1
    sizes = np.zeros(members[-1] + 1, dtype=np.int64)
    sizes[members] = [base + x for x in levels]
    dealer = (ArrayLevelDealer(np.array(members), sizes[members].copy()) if on_arrays
              else LevelDealer(members, sizes[members].tolist()))
    for i, count in enumerate(counts):
        expected = least_loaded_sequence(np.array(members), sizes, count)
        got = dealer.deal(count) if i % 2 else dealer.deal_array(count)  # both forms
        assert list(got) == expected.tolist()
        np.add.at(sizes, expected, 1)
        listed, now = dealer.sizes()
        assert sorted(listed) == members and sizes[listed].tolist() == list(now)


@given(groups())
def test_revocation_drops_unsubscribed_topics_only(group):
    topics, members = group
    arrays = build_server_group(topics, members)
    kept, sizes = kept_owner_and_sizes(arrays)
    assert sizes.tolist() == np.bincount(kept[kept >= 0], minlength=len(members)).tolist()
    for mm_index, mm in enumerate(members):
        for t, parts in mm.assigned.items():
            for p in parts:
                g = int(arrays.topic_offsets[arrays.topic_names.index(t)]) + p
                if arrays.current_owner[g] == mm_index:
                    assert (kept[g] == mm_index) == (t in mm.subscribed_topics)


def test_classes_without_members_subscribe_to_nothing():
    """A ServerGroup built from arrays may list a subscription class no member has; its topics
    are then unsubscribed, not a reason to take the heterogeneous path or to lose partitions."""
    from kafka_rebalance.assignors.server import ServerGroup, server_assign_columnar
    from kafka_rebalance.assignors.server.build import resolve_topic_keys

    names = ["a", "b"]
    group = ServerGroup.build(names, [4, 3], resolve_topic_keys(names, None), ["m0", "m1"], [0, 0], [[0], [0, 1]])
    assert group.topic_class.tolist() == [0, -1]
    for assignor in ("uniform", "range"):
        owner = server_assign_columnar(assignor, group)
        assert sorted(owner[:4].tolist()) == [0, 0, 1, 1] and owner[4:].tolist() == [-1, -1, -1]


@given(groups(), st.booleans())
def test_range_paths_agree(group, per_topic):
    """The shared-shape path of range_ranges and the per-topic one give the same owners."""
    from kafka_rebalance.assignors.server.range import range_ranges

    topics, members = group
    arrays = build_server_group(topics, members)
    owner = range_ranges(arrays, max_shared_shapes=-1 if per_topic else 10**6).owner(arrays)
    assert target_assignment(arrays, owner) == reference_range(topics, members)


@given(st.lists(st.integers(0, 5), min_size=1, max_size=12), st.data())
def test_topics_of_searches_as_the_partition_topic_map_reads(counts, data):
    """A few partitions' topics found by search equal the full map's, empty topics between."""
    from kafka_rebalance.assignors.server import ServerGroup
    from kafka_rebalance.assignors.server.build import resolve_topic_keys

    names = sorted((f"t{i:02d}" for i in range(len(counts))), key=java_sort_key)
    group = ServerGroup.build(names, counts, resolve_topic_keys(names, None), ["m"], [0], [[0]])
    total = sum(counts)
    picked = np.array(data.draw(st.lists(st.integers(0, max(total - 1, 0)), max_size=3 if total else 0)), dtype=np.int64)
    searched = group.topics_of(picked)  # before the map exists, and with few partitions: a search
    assert searched.tolist() == group.partition_topic[picked].tolist()
