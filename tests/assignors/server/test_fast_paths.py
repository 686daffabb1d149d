"""The small-group fast paths of the server-side assignors give the general paths' answers.

``assign_homogeneous`` (one class subscribed to every topic, reading holdings member-major) must
equal ``assign_disjoint_classes`` on the same group; range's equal-size-topics path must equal its
per-topic path; the member-major holdings must match the owner array.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.assignors.server import ServerGroup
from kafka_rebalance.assignors.server.build import resolve_topic_keys
from kafka_rebalance.assignors.server.range import range_ranges
from kafka_rebalance.assignors.server.uniform import (
    assign_disjoint_classes,
    assign_homogeneous,
    first_assignment_disjoint,
    reassign_disjoint_all_held,
    tails,
    uniform_assign,
)
from kafka_rebalance.model import InvalidInput, java_sort_key


@st.composite
def arrays_groups(draw, homogeneous: bool):
    """1-12 members; 1-6 topics of 0-30 partitions (all the same size, sometimes); a random
    current owner per partition (-1 for none); one class, or 1-3 bucketed classes."""
    names = sorted({f"t{i}" for i in range(draw(st.integers(1, 6)))}, key=java_sort_key)
    same = draw(st.booleans())
    size = draw(st.integers(0, 30))
    counts = [size if same else draw(st.integers(0, 30)) for _ in names]
    m = draw(st.integers(1, 12))
    if homogeneous:
        member_class = [0] * m
        lists = [list(range(len(names)))]
    else:
        buckets = draw(st.lists(st.integers(0, 2), min_size=len(names), max_size=len(names)))
        lists = [[t for t, b in enumerate(buckets) if b == c] for c in range(3)]
        member_class = draw(st.lists(st.integers(0, 2), min_size=m, max_size=m))
    total = sum(counts)
    fill = draw(st.sampled_from(["none", "all", "some"]))
    if fill == "none":
        owner = np.full(total, -1, dtype=np.int64)
    else:
        low = 0 if fill == "all" else -1
        owner = np.array(draw(st.lists(st.integers(low, m - 1), min_size=total, max_size=total)), dtype=np.int64)
    ids = [f"member-{draw(st.integers(0, 999))}-{i}" for i in range(m)]
    return ServerGroup.build(names, counts, resolve_topic_keys(names, None), ids, member_class, lists, current_owner=owner)


@given(arrays_groups(homogeneous=True))
def test_homogeneous_fast_path_equals_class_balancing(group: ServerGroup) -> None:
    assert group.is_homogeneous
    fast = assign_homogeneous(group)
    general = assign_disjoint_classes(group, group.topic_class)
    assert np.array_equal(fast, general)
    assert np.array_equal(uniform_assign(group), general)


@given(arrays_groups(homogeneous=False))
def test_held_partitions_are_the_owner_array_member_by_member(group: ServerGroup) -> None:
    indptr, held = group.held_indptr, group.held_partitions
    for member in range(group.num_members):
        mine = held[indptr[member] : indptr[member + 1]]
        assert np.array_equal(mine, np.flatnonzero(group.current_owner == member))


@given(st.booleans(), arrays_groups(homogeneous=False), arrays_groups(homogeneous=True))
def test_range_equal_size_path_equals_per_topic_path(pick_homogeneous, mixed, homogeneous) -> None:
    group = homogeneous if pick_homogeneous else mixed
    shared = range_ranges(group, min_subscriptions_per_shape=0).owner(group)
    default = range_ranges(group).owner(group)
    per_topic = range_ranges(group, max_shared_shapes=-1).owner(group)
    assert np.array_equal(shared, per_topic)
    assert np.array_equal(default, per_topic)


def test_tails_one_each_and_longer() -> None:
    assert tails(np.array([3, 7]), np.array([1, 1])).tolist() == [2, 6]
    assert tails(np.array([3, 7, 9]), np.array([2, 1, 3])).tolist() == [1, 2, 6, 6, 7, 8]


def test_owner_outside_the_members_is_refused() -> None:
    names = ["a"]
    try:
        ServerGroup.build(names, [2], resolve_topic_keys(names, None), ["m0"], [0], [[0]], current_owner=np.array([0, 1]))
    except InvalidInput as error:
        assert "out of range" in str(error)
    else:
        raise AssertionError("an owner index beyond the members must be refused")


@given(arrays_groups(homogeneous=False))
def test_first_assignment_fast_path_equals_class_balancing(group: ServerGroup) -> None:
    if group.topic_class is None or group.held_indptr[-1] != 0:
        return
    general = assign_disjoint_classes(group, group.topic_class)
    assert np.array_equal(first_assignment_disjoint(group), general)
    assert np.array_equal(uniform_assign(group), general)


@given(arrays_groups(homogeneous=False), st.data())
def test_reassignment_fast_path_equals_class_balancing(group: ServerGroup, data) -> None:
    """Start from the group's own target (every subscribed partition held by a subscriber), then
    a member joins one of the classes: both paths agree."""
    if group.topic_class is None:
        return
    target = assign_disjoint_classes(group, group.topic_class)
    joined = ServerGroup.build(
        group.topic_names, group.partition_counts, group.topic_keys, [*group.member_ids, "joiner"],
        np.append(group.member_class, data.draw(st.sampled_from(sorted(set(group.member_class.tolist()))))),
        [group.class_topics[group.class_indptr[c] : group.class_indptr[c + 1]] for c in range(group.num_classes)],
        current_owner=target,
    )
    assert joined.topic_class is not None
    fast = reassign_disjoint_all_held(joined, joined.topic_class)
    general = assign_disjoint_classes(joined, joined.topic_class)
    assert fast is not None
    assert np.array_equal(fast, general)
    assert np.array_equal(uniform_assign(joined), general)
    # A partly held group (the one drawn) either takes the fast path with the same answer or none.
    partial = reassign_disjoint_all_held(group, group.topic_class)
    assert partial is None or np.array_equal(partial, assign_disjoint_classes(group, group.topic_class))
