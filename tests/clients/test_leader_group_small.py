"""The leader's conversions on Python lists for small groups (clients/group.py) build the same
columnar group and write the same per-member lists as the numpy conversions: sparse partition
numbers, topics without metadata, owned partitions that no longer exist or are claimed twice,
static members and racks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.clients import group as leader
from kafka_rebalance.clients.group import MemberInfo, leader_group

TOPICS = ["a", "b-1", "c", "Z"]


@st.composite
def inputs(draw):
    metadata = {
        t: (None if draw(st.integers(0, 5)) == 0 else draw(st.sets(st.integers(0, 12), max_size=10)))
        for t in draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
    }
    members = []
    for i in range(draw(st.integers(0, 6))):
        topics = tuple(draw(st.lists(st.sampled_from([*TOPICS, "gone"]), max_size=4)))
        owned = tuple((t, tuple(draw(st.lists(st.integers(-1, 14), max_size=5)))) for t in draw(st.lists(st.sampled_from([*TOPICS, "gone"]), max_size=3)))
        members.append(MemberInfo(f"m{draw(st.integers(0, 9))}-{i}", topics, owned, draw(st.integers(-1, 3)),
                                  draw(st.sampled_from([None, "s1", "s2"])), draw(st.sampled_from([None, "r1"]))))
    owner_seed = draw(st.integers(0, 2**32))
    return metadata, members, owner_seed


@settings(max_examples=300, deadline=None)
@given(inputs())
def test_small_conversions_equal_numpy_conversions(data) -> None:
    metadata, members, owner_seed = data
    small = leader_group(metadata, members)
    original = leader.SMALL_GROUP_PARTITIONS
    leader.SMALL_GROUP_PARTITIONS = -1
    try:
        big = leader_group(metadata, members)
        rng = np.random.default_rng(owner_seed)
        owner = rng.integers(-1, max(len(members), 1), size=small.group.num_partitions) if members else np.full(small.group.num_partitions, -1)
        per_member_big = big.per_member(owner)
    finally:
        leader.SMALL_GROUP_PARTITIONS = original
    for field in ("topic_names", "member_ids", "group_instance_ids", "member_racks", "partition_racks"):
        assert getattr(small.group, field) == getattr(big.group, field), field
    for field in ("partition_counts", "subscription_indptr", "subscription_topics", "owned_indptr", "owned_partitions", "generations"):
        a, b = getattr(small.group, field), getattr(big.group, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field
    assert [n.tolist() for n in small.numbers] == [n.tolist() for n in big.numbers]
    assert small.per_member(owner) == per_member_big
