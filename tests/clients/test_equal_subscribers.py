"""Members with identical subscriptions end within one partition of each other whenever some
valid assignment achieves that, in the classic sticky and cooperative-sticky assignors, and
keep at least as many partitions in place as kafka-python's sticky assignor keeps (on its own
user data) where it balances them too. A brute-force reference decides what is achievable on
small groups."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("kafka")

from kafka.cluster import ClusterMetadata  # noqa: E402
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KPSticky  # noqa: E402
from kafka.structs import TopicPartition  # noqa: E402

from kafka_rebalance.clients.kafka_python import CooperativeStickyPartitionAssignor, StickyPartitionAssignor  # noqa: E402
from tests.clients.test_kafka_python_assignors import Cluster, members  # noqa: E402

del ClusterMetadata


def class_spread(assignment: dict[str, set[TopicPartition]], subs: dict[str, frozenset[str]]) -> int:
    """The largest difference in partition counts between two members of one subscription."""
    sizes: dict[frozenset[str], list[int]] = {}
    for member, topics in subs.items():
        sizes.setdefault(topics, []).append(len(assignment[member]))
    return max((max(v) - min(v) for v in sizes.values()), default=0)


def equal_balance_achievable(partitions: dict[str, set[int]], subs: dict[str, frozenset[str]]) -> bool:
    """Brute force: is there an assignment of every subscribed partition to one of its
    subscribers in which members of each subscription are within one of each other?"""
    names = sorted(subs)
    cells = [(t, p) for t in sorted(partitions) for p in sorted(partitions[t]) if any(t in s for s in subs.values())]
    choices = [[m for m in names if t in subs[m]] for t, _ in cells]
    for pick in itertools.product(*choices):
        counts = dict.fromkeys(names, 0)
        for m in pick:
            counts[m] += 1
        by_class: dict[frozenset[str], list[int]] = {}
        for m in names:
            by_class.setdefault(subs[m], []).append(counts[m])
        if all(max(v) - min(v) <= 1 for v in by_class.values()):
            return True
    return False


@st.composite
def groups(draw):
    """2-4 members over 1-3 topics of 0-4 partitions (at most 7 in all, for the brute force);
    each member subscribes to 1-3 topics, often the same ones; each partition is held by one
    of the members (or by none), as the previous generation left it."""
    topics = [f"t{i}" for i in range(draw(st.integers(1, 3)))]
    counts = draw(st.lists(st.integers(0, 4), min_size=len(topics), max_size=len(topics)).filter(lambda c: sum(c) <= 7))
    partitions = {t: set(range(c)) for t, c in zip(topics, counts, strict=True)}
    names = [f"C{i}" for i in range(draw(st.integers(2, 4)))]
    pool = [frozenset(s) for r in range(1, len(topics) + 1) for s in itertools.combinations(topics, r)]
    shared = draw(st.sampled_from(pool))
    subs = {m: (shared if draw(st.booleans()) else draw(st.sampled_from(pool))) for m in names}
    previous: dict[str, list[TopicPartition]] = {m: [] for m in names}
    for t in topics:
        for p in range(len(partitions[t])):
            holder = draw(st.sampled_from([None, *names]))
            if holder is not None:
                previous[holder].append(TopicPartition(t, p))
    return partitions, subs, previous


@settings(max_examples=300, deadline=None)
@given(groups(), st.sampled_from([StickyPartitionAssignor, CooperativeStickyPartitionAssignor]))
def test_equal_subscribers_balanced_and_kept_as_kafka_python_keeps(group, kind) -> None:
    partitions, subs, previous = group
    cluster = Cluster(partitions)
    metadata = {m: KPSticky._metadata(set(t), previous[m], 1) for m, t in subs.items()}
    ours = {m: set(a.partitions()) for m, a in kind().assign(cluster, members(metadata)).items()}
    theirs = {m: set(a.partitions()) for m, a in KPSticky().assign(cluster, members(metadata)).items()}
    if equal_balance_achievable(partitions, subs):
        assert class_spread(ours, subs) <= 1, (ours, theirs)
    if kind is StickyPartitionAssignor and class_spread(theirs, subs) <= 1:
        kept_ours = sum(len(ours[m] & set(previous[m])) for m in subs)
        kept_theirs = sum(len(theirs[m] & set(previous[m])) for m in subs)
        assert kept_ours >= kept_theirs, (ours, theirs)
