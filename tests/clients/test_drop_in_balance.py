"""The drop-in sticky assignors against kafka-python's own, on random groups (issue 34): ours is
never less balanced among members with identical subscriptions (max minus min within each
subscription class, summed over the classes) unless it keeps more partitions where they were.
Both sides read the same members' metadata, written the way kafka-python's own assignor
writes it (sticky: user data v1; cooperative-sticky: owned partitions in the subscription).
Cooperative assignments are compared where the group settles: after the follow-up rebalances
that hand out what earlier ones withheld (which member a withheld partition is meant for is a
tie Java's CooperativeStickyAssignor breaks by member order, so one round alone may be less
even on either side)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("kafka")

from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KPCooperative  # noqa: E402
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KPSticky  # noqa: E402
from kafka.structs import TopicPartition  # noqa: E402

from kafka_rebalance.clients.kafka_python import CooperativeStickyPartitionAssignor, StickyPartitionAssignor  # noqa: E402
from tests.clients.test_kafka_python_assignors import Cluster, members  # noqa: E402

FOLLOW_UPS = 4
PAIRS = {"sticky": (StickyPartitionAssignor, KPSticky), "cooperative-sticky": (CooperativeStickyPartitionAssignor, KPCooperative)}


def summed_spread(assignment: dict[str, set[TopicPartition]], subs: dict[str, frozenset[str]]) -> int:
    """Per subscription class, the largest count minus the smallest; summed over the classes."""
    sizes: dict[frozenset[str], list[int]] = {}
    for member, topics in subs.items():
        sizes.setdefault(topics, []).append(len(assignment.get(member, ())))
    return sum(max(v) - min(v) for v in sizes.values())


def kept(assignment: dict[str, set[TopicPartition]], previous: dict[str, list[TopicPartition]]) -> int:
    return sum(len(assignment.get(m, set()) & set(ps)) for m, ps in previous.items())


@st.composite
def groups(draw):
    """2-8 members over 1-4 topics of 1-12 partitions, all of one subscription;
    each partition held by one member (or none) as the previous generation left it, restricted
    to its subscribers, as a real previous generation would be."""
    topics = [f"t{i}" for i in range(draw(st.integers(1, 4)))]
    partitions = {t: set(range(draw(st.integers(1, 12)))) for t in topics}
    names = [f"C{i}" for i in range(draw(st.integers(2, 8)))]
    pool = [frozenset(s) for r in range(1, len(topics) + 1) for s in itertools.combinations(topics, r)]
    shared = draw(st.sampled_from(pool))
    subs = dict.fromkeys(names, shared)
    previous: dict[str, list[TopicPartition]] = {m: [] for m in names}
    for t in topics:
        subscribers = [m for m in names if t in subs[m]]
        for p in sorted(partitions[t]):
            holder = draw(st.sampled_from([None, *subscribers]))
            if holder is not None:
                previous[holder].append(TopicPartition(t, p))
    return partitions, subs, previous


def _metadata(kind: str, subs: dict[str, frozenset[str]], previous: dict[str, list[TopicPartition]]) -> dict:
    if kind == "sticky":
        return {m: KPSticky._metadata(set(t), previous[m], 1) for m, t in subs.items()}
    out = {}
    for m, t in subs.items():
        theirs = KPCooperative()
        theirs.member_assignment = previous[m]
        out[m] = theirs.metadata(set(t))
    return out


def _settled(cls, cluster, subs: dict[str, frozenset[str]], first: dict[str, set[TopicPartition]]) -> dict[str, set[TopicPartition]]:
    """Cooperative follow-up rebalances, each from the assignment before, until nothing changes."""
    current = first
    for _ in range(FOLLOW_UPS):
        metadata = _metadata("cooperative-sticky", subs, {m: sorted(ps) for m, ps in current.items()})
        following = {m: set(a.partitions()) for m, a in cls().assign(cluster, members(metadata)).items()}
        if following == current:
            break
        current = following
    return current


@settings(max_examples=300, deadline=None)
@given(groups(), st.sampled_from(sorted(PAIRS)))
def test_ours_is_as_balanced_as_kafka_pythons_unless_it_keeps_more(group, kind) -> None:
    """One subscription for all: the property holds. With mixed subscriptions it does not (see
    the xfail below): Kafka's general sticky algorithm stops at pairwise balance (no member could
    take a partition from one with two more), which leaves the summed spread to member order."""
    partitions, subs, previous = group
    ours_cls, theirs_cls = PAIRS[kind]
    cluster = Cluster(partitions)
    metadata = _metadata(kind, subs, previous)
    ours = {m: set(a.partitions()) for m, a in ours_cls().assign(cluster, members(metadata)).items()}
    theirs = {m: set(a.partitions()) for m, a in theirs_cls().assign(cluster, members(metadata)).items()}
    if kind == "cooperative-sticky":
        ours, theirs = _settled(ours_cls, cluster, subs, ours), _settled(theirs_cls, cluster, subs, theirs)
    if summed_spread(ours, subs) > summed_spread(theirs, subs):
        assert kept(ours, previous) > kept(theirs, previous), (subs, previous, ours, theirs)


@pytest.mark.xfail(strict=True, reason="open: with mixed subscriptions ours may stop at a less even "
                   "pairwise-balanced assignment than kafka-python's (its own sticky does too, elsewhere)")
def test_mixed_cooperative_subscriptions_settle_less_evenly_than_kafka_pythons() -> None:
    """Found by the property above on mixed subscriptions (eager sticky has such cases too): C0 {t0, t2} owns t0-3, t2-3, t2-4 and
    five members are new. Both sides settle on assignments Kafka's general sticky algorithm calls
    balanced (no member could take a partition from one with two more) keeping 2 partitions in
    place, but ours settles at C0/C4/C5 = 2/2/1 and C1/C2/C3 = 2/2/1 (summed spread 2), kafka-
    python's at 2/2/2 and 2/1/1 (1)."""
    tp = TopicPartition
    partitions = {"t0": set(range(5)), "t1": {0}, "t2": set(range(5))}
    both, t0 = frozenset({"t0", "t2"}), frozenset({"t0"})
    subs = {"C0": both, "C1": t0, "C2": t0, "C3": t0, "C4": both, "C5": both}
    previous = {m: [] for m in subs} | {"C0": [tp("t0", 3), tp("t2", 3), tp("t2", 4)]}
    cluster = Cluster(partitions)
    settled = {}
    for side, cls in zip(("ours", "theirs"), PAIRS["cooperative-sticky"], strict=True):
        first = {m: set(a.partitions()) for m, a in cls().assign(cluster, members(_metadata("cooperative-sticky", subs, previous))).items()}
        settled[side] = _settled(cls, cluster, subs, first)
    assert kept(settled["ours"], previous) == kept(settled["theirs"], previous) == 2
    assert summed_spread(settled["ours"], subs) <= summed_spread(settled["theirs"], subs)
