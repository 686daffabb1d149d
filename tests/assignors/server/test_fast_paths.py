"""The small-group fast paths of the server-side assignors give the general paths' answers.

The array form of Kafka's homogeneous builder must equal the builder's own loops; range's
equal-size-topics path must equal its per-topic path; the member-major holdings must match the
owner array.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.assignors.server import ServerGroup, ServerMember, server_assign, uniform
from kafka_rebalance.assignors.server import group as server_group
from kafka_rebalance.assignors.server.build import resolve_topic_keys, runs_as_tuples
from kafka_rebalance.assignors.server.group import held_iteration_order, member_major
from kafka_rebalance.assignors.server.range import range_ranges
from kafka_rebalance.assignors.server.uniform import heterogeneous_assign, homogeneous_assign, uniform_assign
from kafka_rebalance.model import InvalidInput, capacity_after_puts, capacity_of_copy, java_sort_key


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


def literal_homogeneous(group: ServerGroup) -> np.ndarray:
    """UniformHomogeneousAssignmentBuilder (Kafka 4.1) as written: member by member, topic by
    topic of each member's assignment in iteration order, then the unfilled members in turn."""
    result = np.full(group.num_partitions, -1, dtype=np.int64)
    topics = group.kafka_subscription_sequence.tolist()
    m = group.num_members
    if not m or not topics:
        return result
    offsets, counts = group.topic_offsets, group.partition_counts
    unassigned = [int(offsets[t]) + p for t in topics for p in range(int(counts[t])) if group.current_owner[offsets[t] + p] < 0]
    quota_min, remaining = divmod(sum(int(counts[t]) for t in topics), m)
    unfilled = []
    sequence, holder = group.held_in_iteration_order(np.arange(m, dtype=np.int64))
    indptr = np.searchsorted(holder, np.arange(m + 1))
    for index in range(m):
        quota, extra = quota_min, False
        if remaining > 0:
            quota, extra = quota + 1, True
        held = sequence[indptr[index] : indptr[index + 1]].tolist()
        runs: list[list[int]] = []
        for partition in held:  # a member's partitions of one topic are consecutive
            topic = int(group.partition_topic[partition])
            if runs and int(group.partition_topic[runs[-1][0]]) == topic:
                runs[-1].append(partition)
            else:
                runs.append([partition])
        for run in runs:
            if int(group.partition_topic[run[0]]) not in topics:
                continue
            if len(run) <= quota:
                quota -= len(run)
                result[run] = index
            else:
                for partition in run:
                    if quota > 0:
                        quota -= 1
                        result[partition] = index
                    else:
                        unassigned.append(partition)
        if quota > 0 and extra and m - index > remaining:
            quota, extra = quota - 1, False
        if quota > 0:
            unfilled.append((index, quota))
        if extra:
            remaining -= 1
    position = 0
    for index, quota in unfilled:
        for _ in range(quota):
            if position < len(unassigned):
                result[unassigned[position]] = index
                position += 1
    assert position == len(unassigned)
    return result


@given(arrays_groups(homogeneous=True))
def test_homogeneous_builder_equals_kafkas_loops(group: ServerGroup) -> None:
    """The array form of Kafka's homogeneous builder gives the answer of its loops."""
    assert group.kafka_homogeneous
    assert np.array_equal(homogeneous_assign(group), literal_homogeneous(group))
    assert np.array_equal(uniform_assign(group), literal_homogeneous(group))


@given(arrays_groups(homogeneous=True), st.permutations(range(12)), st.booleans())
def test_homogeneous_builder_walks_an_iteration_order_without_renumbering(group: ServerGroup, shuffled, sorted_held) -> None:
    """Members numbered otherwise than Kafka iterates them (``iteration_order``, as the
    coordinator's group extended by joiners is): the answer of the group renumbered into that
    order, mapped back; with the holdings given member by member too, or not."""
    order = np.array([i for i in shuffled if i < group.num_members], dtype=np.int64)
    if sorted_held:
        group = dataclasses.replace(group, held_given=group.held_partitions)
    walked = dataclasses.replace(group, iteration_order=order)
    renumbered, back = walked.in_iteration_order()
    expected = homogeneous_assign(renumbered)
    if back is not None:
        expected = np.where(expected >= 0, back[expected], -1)
    assert np.array_equal(uniform_assign(walked), expected)


@given(arrays_groups(homogeneous=False))
def test_held_partitions_are_the_owner_array_member_by_member(group: ServerGroup) -> None:
    indptr, held = group.held_indptr, group.held_partitions
    for member in range(group.num_members):
        mine = held[indptr[member] : indptr[member + 1]]
        assert np.array_equal(mine, np.flatnonzero(group.current_owner == member))


@given(arrays_groups(homogeneous=False), st.data())
def test_held_by_a_few_members_is_read_from_the_owner_array_as_from_the_sorted_holdings(group: ServerGroup, data) -> None:
    """A few members' holdings picked out of the owner array (no sort of everyone's) are the
    slices of ``held_partitions``."""
    members = np.array(sorted(data.draw(st.sets(st.integers(0, max(group.num_members - 1, 0)), max_size=12))
                              if group.num_members else []), dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server_group, "HELD_PICK_RATIO", 0)  # always picked, however many members
        picked = dataclasses.replace(group, held_given=None).held_by(members)
    indptr, held = member_major(group.current_owner, group.num_members)
    expected = [held[indptr[m] : indptr[m + 1]] for m in members.tolist()]
    assert np.array_equal(picked, np.concatenate(expected) if expected else np.zeros(0, dtype=np.int64))


@given(st.booleans(), arrays_groups(homogeneous=False), arrays_groups(homogeneous=True))
def test_range_equal_size_path_equals_per_topic_path(pick_homogeneous, mixed, homogeneous) -> None:
    group = homogeneous if pick_homogeneous else mixed
    shared = range_ranges(group, min_ranges_per_shared_shape=0).owner(group)
    default = range_ranges(group).owner(group)
    per_topic = range_ranges(group, max_shared_shapes=-1).owner(group)
    assert np.array_equal(shared, per_topic)
    assert np.array_equal(default, per_topic)


def test_owner_outside_the_members_is_refused() -> None:
    names = ["a"]
    try:
        ServerGroup.build(names, [2], resolve_topic_keys(names, None), ["m0"], [0], [[0]], current_owner=np.array([0, 1]))
    except InvalidInput as error:
        assert "out of range" in str(error)
    else:
        raise AssertionError("an owner index beyond the members must be refused")


@given(arrays_groups(homogeneous=False))
def test_array_dealer_gives_the_list_dealers_answer(group: ServerGroup) -> None:
    """Long subscriber lists are dealt to on arrays: with every list dealt that way, and with
    none, the heterogeneous builder gives the same answer."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(uniform, "ARRAY_DEALER_MEMBERS", 1)
        on_arrays = heterogeneous_assign(group)
        patch.setattr(uniform, "ARRAY_DEALER_MEMBERS", 1 << 62)
        on_lists = heterogeneous_assign(group)
    assert np.array_equal(on_arrays, on_lists)


def java_held_order(member: list[int], topic: list[int], partition: list[int], keys: np.ndarray, hashed: bool) -> list[int]:
    """Each member's ``HashMap<Uuid, HashSet<Integer>>`` filled by puts in the order given, then
    walked as Java walks it: buckets in order, a bucket's keys in insertion order (not
    ``hashed``: LinkedHashMap and LinkedHashSet, insertion order throughout)."""
    def bucket(hash_code: int, capacity: int) -> int:
        h = hash_code & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    order: list[int] = []
    for m in sorted(set(member)):
        entries = [i for i in range(len(member)) if member[i] == m]
        by_topic: dict[int, list[int]] = {}
        for i in entries:
            by_topic.setdefault(topic[i], []).append(i)
        topics = list(by_topic)  # insertion order
        if hashed:
            capacity = capacity_after_puts(len(topics))
            msb_lsb = {t: keys[t].tolist() for t in topics}
            uuid_hash = {t: ((msb ^ lsb) >> 32 ^ (msb ^ lsb)) & 0xFFFFFFFF for t, (msb, lsb) in msb_lsb.items()}
            topics.sort(key=lambda t: bucket(uuid_hash[t], capacity))  # stable: ties as inserted
        for t in topics:
            mine = by_topic[t]
            if hashed:
                capacity = capacity_of_copy(len(mine))
                mine = sorted(mine, key=lambda i: bucket(partition[i], capacity))
            order.extend(mine)
    return order


@given(st.data(), st.booleans(), st.integers(0, 1))
def test_held_iteration_order_is_javas_on_both_paths(data, hashed, array_path) -> None:
    """Both ways of ordering holdings (loops for a few entries, arrays for many) walk each
    member's assignment map as Java does, whatever the input's order."""
    n = data.draw(st.integers(1, 300))
    topics = data.draw(st.integers(1, 12))
    keys = np.array(data.draw(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1)),
                                       min_size=topics, max_size=topics)), dtype=np.int64)
    member = data.draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    if data.draw(st.booleans()):
        member.sort()
    topic = data.draw(st.lists(st.integers(0, topics - 1), min_size=n, max_size=n))
    partition = data.draw(st.lists(st.integers(0, data.draw(st.sampled_from([20, 5000, 2**31 - 1]))), min_size=n, max_size=n))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server_group, "HELD_ORDER_LOOP_ENTRIES", 0 if array_path else 1 << 30)
        ours = held_iteration_order(np.array(member), np.array(topic), np.array(partition), keys, hashed)
    assert ours.tolist() == java_held_order(member, topic, partition, keys, hashed)


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 40)), min_size=1, max_size=200), st.booleans())
def test_runs_as_tuples_cuts_the_numbers_in_order(runs, mostly_single) -> None:
    """Runs of partition numbers become tuples in order, whether nearly all runs are one
    partition (1-tuples shared from a table) or not (each run sliced)."""
    sizes = [1 if mostly_single and i % 20 else size for i, (size, _) in enumerate(runs)]
    numbers = [(first + k) % 41 for size, (_, first) in zip(sizes, runs, strict=True) for k in range(size)]
    expected, position = [], 0
    for size in sizes:
        expected.append(tuple(numbers[position : position + size]))
        position += size
    assert runs_as_tuples(np.array(numbers), np.array(sizes)) == expected


def test_runs_as_tuples_shares_one_tuples_and_slices_the_longer_runs() -> None:
    numbers = np.array([k % 7 for k in range(60)] + [3, 4, 5])
    sizes = np.array([1] * 60 + [3])
    assert runs_as_tuples(numbers, sizes) == [(k % 7,) for k in range(60)] + [(3, 4, 5)]
    assert runs_as_tuples(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)) == []


@pytest.mark.parametrize(("assignor", "expected"), [
    ("uniform", {"m1": {"b": (0, 1)}, "m2": {"a": (0, 1)}}),
    ("range", {"m1": {"a": (0,), "b": (0,)}, "m2": {"a": (1,), "b": (1,)}}),
])
def test_a_topic_listed_without_partitions_in_an_assignment_is_read(assignor, expected) -> None:
    """A run of no partitions beside a run of two (their lengths sum to the number of runs):
    the current assignment is still read partition by partition."""
    members = [ServerMember("m1", ("a", "b"), {"a": (), "b": (0, 1)}), ServerMember("m2", ("a", "b"), {})]
    assert server_assign(assignor, {"a": 2, "b": 2}, members) == expected
