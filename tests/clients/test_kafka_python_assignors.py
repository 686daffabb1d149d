"""Our kafka-python drop-in assignors, at the leader, without a broker.

Facts ported from kafka-python's test/consumer/test_assignors.py (which itself ports Kafka's
StickyAssignorTest / AbstractStickyAssignorTest): inputs and expected outputs restated here, so
they run whether or not kafka-python's suite is at hand (test_kafka_python_peer_suite.py runs it).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

pytest.importorskip("kafka")

from kafka.coordinator.assignors.abstract import RebalanceProtocol  # noqa: E402
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KPCooperative  # noqa: E402
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KPSticky  # noqa: E402
from kafka.protocol.consumer import JoinGroupResponse  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription  # noqa: E402
from kafka.structs import TopicPartition  # noqa: E402
from small_groups import changed_groups  # noqa: E402 (benchmarks/, the same 2,000 groups it times)

from kafka_rebalance.assignors.userdata import UserDataFormat, sticky_user_data_format  # noqa: E402
from kafka_rebalance.clients.kafka_python import (  # noqa: E402
    CooperativeStickyPartitionAssignor,
    RangePartitionAssignor,
    RoundRobinPartitionAssignor,
    StickyPartitionAssignor,
)
from kafka_rebalance.protocol.wire import decode_subscription  # noqa: E402


class Cluster:
    """What the assignors read of kafka-python's ClusterMetadata."""

    def __init__(self, partitions: dict[str, set[int]]):
        self.partitions = partitions

    def partitions_for_topic(self, topic):
        return self.partitions.get(topic)

    def topics(self):
        return set(self.partitions)


def members(metadata: dict) -> list:
    return [JoinGroupResponse.JoinGroupResponseMember(member_id=m, metadata=md) for m, md in metadata.items()]


def as_dict(assignment) -> dict[str, list[tuple[str, list[int]]]]:
    return {m: [(t, list(ps)) for t, ps in a.assigned_partitions] for m, a in assignment.items()}


def test_names_versions_and_protocols_match_kafka_python():
    assert [a.name for a in (RangePartitionAssignor, RoundRobinPartitionAssignor)] == ["range", "roundrobin"]
    assert StickyPartitionAssignor().name == "sticky"
    assert CooperativeStickyPartitionAssignor().name == "cooperative-sticky"
    assert StickyPartitionAssignor().supported_protocols() == KPSticky().supported_protocols() == [RebalanceProtocol.EAGER]
    assert CooperativeStickyPartitionAssignor().supported_protocols() == KPCooperative().supported_protocols()


def test_roundrobin_and_range_two_topics():
    """kafka-python test_assignor_roundrobin / test_assignor_range (Kafka's RoundRobinAssignorTest
    and RangeAssignorTest, two consumers, two topics of three partitions)."""
    cluster = Cluster({"t0": {0, 1, 2}, "t1": {0, 1, 2}})
    rr = RoundRobinPartitionAssignor
    got = rr.assign(cluster, members({"C0": rr.metadata({"t0", "t1"}), "C1": rr.metadata({"t0", "t1"})}))
    assert as_dict(got) == {"C0": [("t0", [0, 2]), ("t1", [1])], "C1": [("t0", [1]), ("t1", [0, 2])]}
    assert got["C0"] == ConsumerProtocolAssignment(0, [("t0", [0, 2]), ("t1", [1])], b"")
    rng = RangePartitionAssignor
    got = rng.assign(cluster, members({"C0": rng.metadata({"t0", "t1"}), "C1": rng.metadata({"t0", "t1"})}))
    assert as_dict(got) == {"C0": [("t0", [0, 1]), ("t1", [0, 1])], "C1": [("t0", [2]), ("t1", [2])]}


def test_sparse_partition_numbers():
    """Partitions {0, 2, 5, 9}: assigned in numeric order, owned numbers read back."""
    cluster = Cluster({"t": {9, 0, 5, 2}})
    rng = RangePartitionAssignor
    got = as_dict(rng.assign(cluster, members({"A": rng.metadata({"t"}), "B": rng.metadata({"t"})})))
    assert got == {"A": [("t", [0, 2])], "B": [("t", [5, 9])]}
    sticky = StickyPartitionAssignor()
    meta = {
        "A": sticky._metadata({"t"}, [TopicPartition("t", 9), TopicPartition("t", 5), TopicPartition("t", 7)], 3),
        "B": sticky._metadata({"t"}, [], 3),
    }
    got = as_dict(sticky.assign(cluster, members(meta)))
    # A keeps 5 and 9 (7 no longer exists); B takes the two free ones.
    assert got == {"A": [("t", [5, 9])], "B": [("t", [0, 2])]}


def test_sticky_three_topics_nested_subscriptions():
    """kafka-python test_sticky_assignor2 (Kafka's StickyAssignorTest.testStickiness...):
    C0 {t0}, C1 {t0,t1}, C2 {t0,t1,t2}; t0..t2 have 1, 2, 3 partitions; then C0 leaves."""
    cluster = Cluster({"t0": {0}, "t1": {0, 1}, "t2": {0, 1, 2}})
    a = StickyPartitionAssignor()
    subs = {"C0": {"t0"}, "C1": {"t0", "t1"}, "C2": {"t0", "t1", "t2"}}
    first = a.assign(cluster, members({m: a._metadata(t, []) for m, t in subs.items()}))
    assert as_dict(first) == {"C0": [("t0", [0])], "C1": [("t1", [0, 1])], "C2": [("t2", [0, 1, 2])]}
    del subs["C0"]
    second = a.assign(cluster, members({m: a._metadata(t, first[m].partitions()) for m, t in subs.items()}))
    assert as_dict(second) == {"C1": [("t0", [0]), ("t1", [0, 1])], "C2": [("t2", [0, 1, 2])]}


def test_sticky_four_topics_one_leaves():
    """kafka-python test_sticky_assignor1: three consumers on four two-partition topics, fresh,
    then C1 leaves (expected outputs as kafka-python's and Kafka's)."""
    cluster = Cluster({t: {0, 1} for t in ("t0", "t1", "t2", "t3")})
    a = StickyPartitionAssignor()
    subs = {c: {"t0", "t1", "t2", "t3"} for c in ("C0", "C1", "C2")}
    first = a.assign(cluster, members({m: a._metadata(t, []) for m, t in subs.items()}))
    assert as_dict(first) == {
        "C0": [("t0", [0]), ("t1", [1]), ("t3", [0])],
        "C1": [("t0", [1]), ("t2", [0]), ("t3", [1])],
        "C2": [("t1", [0]), ("t2", [1])],
    }
    del subs["C1"]
    second = a.assign(cluster, members({m: a._metadata(t, first[m].partitions()) for m, t in subs.items()}))
    assert as_dict(second) == {
        "C0": [("t0", [0]), ("t1", [1]), ("t2", [0]), ("t3", [0])],
        "C2": [("t0", [1]), ("t1", [0]), ("t2", [1]), ("t3", [1])],
    }


def test_older_generation_owners_take_back_what_must_move():
    """kafka-python test_assignment_with_multiple_generations2 (Kafka's
    AbstractStickyAssignorTest.testAssignmentWithMultipleGenerations2): C2 took all six in
    generation 2 while C1 and C3 still claim their generation-1 pairs; balancing gives each
    pair back to its generation-1 owner."""
    cluster = Cluster({"t": set(range(6))})
    a = StickyPartitionAssignor()
    meta = {
        "C1": a._metadata({"t"}, [TopicPartition("t", p) for p in (0, 3)], 1),
        "C2": a._metadata({"t"}, [TopicPartition("t", p) for p in range(6)], 2),
        "C3": a._metadata({"t"}, [TopicPartition("t", p) for p in (2, 5)], 1),
    }
    got = as_dict(a.assign(cluster, members(meta)))
    assert got == {"C1": [("t", [0, 3])], "C2": [("t", [1, 4])], "C3": [("t", [2, 5])]}
    assert a._latest_partition_movements.are_sticky()


def test_cooperative_keeps_partition_with_newest_owner_despite_stale_claim():
    """A partition claimed by its generation-5 owner and, stale, by a generation-3 member stays
    with the newest owner in this round (Kafka's CooperativeStickyAssignor counts it neither
    added nor revoked); a same-generation double claim is withheld."""
    cluster = Cluster({"t": {0, 1, 2, 3}})

    def sub(owned, generation):
        return ConsumerProtocolSubscription(
            version=3, topics=["t"], user_data=None, generation_id=generation, rack_id=None,
            owned_partitions=[ConsumerProtocolSubscription.TopicPartition(topic="t", partitions=owned)],
        )

    a = CooperativeStickyPartitionAssignor()
    got = as_dict(a.assign(cluster, members({"A": sub([0, 1], 5), "B": sub([1, 2, 3], 3)})))
    assert got["A"] == [("t", [0, 1])]
    assert got["B"] == [("t", [2, 3])]
    got = as_dict(a.assign(cluster, members({"A": sub([0, 1], 5), "B": sub([1, 2, 3], 5)})))
    owned_now = [p for pairs in got.values() for _, ps in pairs for p in ps]
    assert 1 not in owned_now  # both claim it in one generation: revoked first, as in Kafka


def test_cooperative_subscription_is_java_v3():
    a = CooperativeStickyPartitionAssignor(rack="r1")
    a.member_assignment = [TopicPartition("t", 2), TopicPartition("t", 0)]
    a.generation = 7
    sub = decode_subscription(a.metadata({"t"}).encode())
    assert (sub.version, sub.owned_partitions, sub.generation_id, sub.rack_id) == (3, (("t", (0, 2)),), 7, "r1")
    assert sub.user_data == (7).to_bytes(4, "big")  # Java's cooperative-sticky user data


def _kp_members(assignor_cls, subs, previous, generation):
    return {m: assignor_cls._metadata(t, previous.get(m, []), generation) for m, t in subs.items()}


@pytest.mark.parametrize("leader", ["ours", "kafka-python"])
def test_rolling_upgrade_keeps_stickiness_whoever_leads(leader):
    """Half the members on kafka-python's StickyPartitionAssignor, half on ours: whichever kind
    leads reads every member's user data, so nothing owned moves when nothing needs to."""
    cluster = Cluster({"t": set(range(12)), "u": set(range(6))})
    subs = {f"C{i}": {"t", "u"} for i in range(6)}
    first = StickyPartitionAssignor().assign(cluster, members({m: StickyPartitionAssignor._metadata(t, []) for m, t in subs.items()}))
    previous = {m: a.partitions() for m, a in first.items()}
    meta = {}
    for i, (m, topics) in enumerate(subs.items()):
        kind = KPSticky if i % 2 else StickyPartitionAssignor
        meta[m] = kind._metadata(topics, previous[m], 1)
    assert sticky_user_data_format(meta["C0"].user_data) is UserDataFormat.KAFKA_PYTHON
    meta["C6"] = KPSticky._metadata({"t", "u"}, [], -1)  # a new member joins
    assignor = StickyPartitionAssignor() if leader == "ours" else KPSticky()
    got = assignor.assign(cluster, members(meta))
    kept = sum(len(set(got[m].partitions()) & set(previous[m])) for m in subs)
    counts = sorted(len(a.partitions()) for a in got.values())
    assert counts[-1] - counts[0] <= 1
    assert kept == 18 - len(got["C6"].partitions())  # only the new member's share moves


def test_java_user_data_is_read_too():
    """A Java (or librdkafka) StickyAssignor member's user data, no version prefix."""
    cluster = Cluster({"t": set(range(4))})
    java = StickyPartitionAssignor(user_data_format="java")
    meta = {
        "J": java._metadata({"t"}, [TopicPartition("t", 3), TopicPartition("t", 1)], 4, "java"),
        "P": StickyPartitionAssignor._metadata({"t"}, [TopicPartition("t", 0)], 4),
    }
    assert sticky_user_data_format(meta["J"].user_data) is UserDataFormat.JAVA
    got = as_dict(java.assign(cluster, members(meta)))
    assert got == {"J": [("t", [1, 3])], "P": [("t", [0, 2])]}


def _balance_score(assignment: dict[str, set]) -> int:
    """Kafka's getBalanceScore: the sum over member pairs of the difference in partition counts."""
    counts = sorted(len(v) for v in assignment.values())
    n = len(counts)
    return sum(c * (2 * i - n + 1) for i, c in enumerate(counts))


def _equal_subscriber_spread(assignment: dict[str, set], subs: dict[str, set]) -> int:
    """The largest difference in partition counts between two members of one subscription."""
    sizes: dict[frozenset, list[int]] = {}
    for member, topics in subs.items():
        sizes.setdefault(frozenset(topics), []).append(len(assignment[member]))
    return max(max(v) - min(v) for v in sizes.values())


def _kept(result: dict[str, set], previous: dict[str, list]) -> int:
    return sum(len(result[m] & set(previous.get(m, []))) for m in result)


def test_never_less_balanced_than_kafka_python_without_keeping_more():
    """2,000 seeded random groups, each assigned fresh by kafka-python's sticky assignor, then
    changed (members leave and join, subscriptions change) and reassigned by kafka-python's and
    by ours from the same user data: ours is never less balanced unless it keeps more
    partitions in place, and never keeps fewer in place unless it is better balanced; members
    with identical subscriptions are never two or more partitions apart where kafka-python
    keeps them within one."""
    worse = []
    tally = {"better balanced": 0, "more kept": 0, "same": 0, "compared": 0}
    for case, group in enumerate(changed_groups()):
        cluster, changed, previous, joined = group
        partitions = cluster.partitions
        theirs = {m: set(a.partitions()) for m, a in KPSticky().assign(cluster, joined).items()}
        ours = {m: set(a.partitions()) for m, a in StickyPartitionAssignor().assign(cluster, joined).items()}
        assert set().union(*ours.values()) == {TopicPartition(t, p) for t in {t for s in changed.values() for t in s} for p in partitions[t]}

        ours_score, theirs_score = _balance_score(ours), _balance_score(theirs)
        ours_kept, theirs_kept = _kept(ours, previous), _kept(theirs, previous)
        if (ours_score > theirs_score and ours_kept <= theirs_kept) or (ours_kept < theirs_kept and ours_score >= theirs_score):
            worse.append((case, ours_score, theirs_score, ours_kept, theirs_kept))
        if _equal_subscriber_spread(ours, changed) > 1 >= _equal_subscriber_spread(theirs, changed):
            worse.append((case, "equal subscribers apart", ours, theirs))
        tally["compared"] += 1
        tally["better balanced"] += ours_score < theirs_score
        tally["more kept"] += ours_kept > theirs_kept
        tally["same"] += (ours_score, ours_kept) == (theirs_score, theirs_kept)
    print(f"ours vs kafka-python's sticky: {tally}")
    assert not worse, worse[:5]


def test_movements_detect_a_swap():
    from kafka_rebalance.clients.group import PartitionMovements

    assert PartitionMovements((("t", 0, "A", "B"), ("t", 1, "B", "C"))).are_sticky()
    assert not PartitionMovements((("t", 0, "A", "B"), ("t", 1, "B", "A"))).are_sticky()
    assert PartitionMovements((("t", 0, "A", "B"), ("u", 1, "B", "A"))).are_sticky()


def test_partition_counts_helper_matches_pairs():
    sums = defaultdict(int)
    for pairs in as_dict(RangePartitionAssignor.assign(Cluster({"t": {0, 1, 2}}), members({"A": RangePartitionAssignor.metadata({"t"})}))).values():
        for _, ps in pairs:
            sums["t"] += len(ps)
    assert sums["t"] == 3
