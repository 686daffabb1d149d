"""Every worked example of the five seed documents (the articles on Kafka rebalancing the project implements), as facts."""

from __future__ import annotations

from tests.assignors.helpers import member, run

ALL4 = ["t0", "t1", "t2", "t3"]


def test_range_three_consumers_one_topic_of_four():
    # seed 000 / 004: A = 4 // 3 = 1, B = 4 % 3 = 1 -> c0 gets two.
    result = run("range", {"t1": 4}, [member(c, ["t1"]) for c in ("c0", "c1", "c2")])
    assert result == {"c0": ["t1-0", "t1-1"], "c1": ["t1-2"], "c2": ["t1-3"]}


def test_range_two_consumers_two_topics_of_four():
    result = run("range", {"t0": 4, "t1": 4}, [member("c0", ["t0", "t1"]), member("c1", ["t0", "t1"])])
    assert result == {"c0": ["t0-0", "t0-1", "t1-0", "t1-1"], "c1": ["t0-2", "t0-3", "t1-2", "t1-3"]}


def test_range_two_consumers_two_topics_of_three_is_uneven():
    result = run("range", {"t0": 3, "t1": 3}, [member("c0", ["t0", "t1"]), member("c1", ["t0", "t1"])])
    assert result == {"c0": ["t0-0", "t0-1", "t1-0", "t1-1"], "c1": ["t0-2", "t1-2"]}


def test_roundrobin_equal_subscriptions():
    result = run("roundrobin", {"t0": 3, "t1": 3}, [member("c0", ["t0", "t1"]), member("c1", ["t0", "t1"])])
    assert result == {"c0": ["t0-0", "t0-2", "t1-1"], "c1": ["t0-1", "t1-0", "t1-2"]}


UNEQUAL_TOPICS = {"t0": 1, "t1": 2, "t2": 3}
UNEQUAL_MEMBERS = [member("c0", ["t0"]), member("c1", ["t0", "t1"]), member("c2", ["t0", "t1", "t2"])]


def test_roundrobin_unequal_subscriptions():
    result = run("roundrobin", UNEQUAL_TOPICS, UNEQUAL_MEMBERS)
    assert result == {"c0": ["t0-0"], "c1": ["t1-0"], "c2": ["t1-1", "t2-0", "t2-1", "t2-2"]}


def test_roundrobin_unequal_after_c0_leaves():
    result = run("roundrobin", UNEQUAL_TOPICS, UNEQUAL_MEMBERS[1:])
    assert result == {"c1": ["t0-0", "t1-1"], "c2": ["t1-0", "t2-0", "t2-1", "t2-2"]}


def test_roundrobin_three_consumers_four_topics_then_c1_removed():
    members = [member(c, ALL4) for c in ("c0", "c1", "c2")]
    topics = dict.fromkeys(ALL4, 2)
    assert run("roundrobin", topics, members) == {
        "c0": ["t0-0", "t1-1", "t3-0"],
        "c1": ["t0-1", "t2-0", "t3-1"],
        "c2": ["t1-0", "t2-1"],
    }
    assert run("roundrobin", topics, [members[0], members[2]]) == {
        "c0": ["t0-0", "t1-0", "t2-0", "t3-0"],
        "c2": ["t0-1", "t1-1", "t2-1", "t3-1"],
    }


def test_roundrobin_two_consumers_topics_a_b_c_follows_kafkas_algorithm():
    """Seed 000's figure (consumer-0 on A,B; consumer-1 on B,C; 3 partitions each). Its prose says
    consumer-0 ends with A0-A2 only, but the RoundRobinAssignor source it quotes (circular
    iterator, skip members not subscribed) hands B1 to consumer-0; Kafka's behaviour wins."""
    result = run(
        "roundrobin",
        {"topic-A": 3, "topic-B": 3, "topic-C": 3},
        [member("consumer-0", ["topic-A", "topic-B"]), member("consumer-1", ["topic-B", "topic-C"])],
    )
    assert result == {
        "consumer-0": ["topic-A-0", "topic-A-1", "topic-A-2", "topic-B-1"],
        "consumer-1": ["topic-B-0", "topic-B-2", "topic-C-0", "topic-C-1", "topic-C-2"],
    }


def test_sticky_three_consumers_four_topics_then_c1_removed():
    topics = dict.fromkeys(ALL4, 2)
    first = run("sticky", topics, [member(c, ALL4) for c in ("c0", "c1", "c2")])
    assert first == {
        "c0": ["t0-0", "t1-1", "t3-0"],
        "c1": ["t0-1", "t2-0", "t3-1"],
        "c2": ["t1-0", "t2-1"],
    }
    second = run("sticky", topics, [member("c0", ALL4, first["c0"], 1), member("c2", ALL4, first["c2"], 1)])
    # All five partitions c0 and c2 held stay put; c1's three are split to keep 4/4.
    assert second == {"c0": ["t0-0", "t1-1", "t2-0", "t3-0"], "c2": ["t0-1", "t1-0", "t2-1", "t3-1"]}


def test_sticky_unequal_subscriptions_then_c0_removed():
    first = run("sticky", UNEQUAL_TOPICS, UNEQUAL_MEMBERS)
    assert first == {"c0": ["t0-0"], "c1": ["t1-0", "t1-1"], "c2": ["t2-0", "t2-1", "t2-2"]}
    second = run(
        "sticky",
        UNEQUAL_TOPICS,
        [member("c1", ["t0", "t1"], first["c1"], 1), member("c2", ["t0", "t1", "t2"], first["c2"], 1)],
    )
    assert second == {"c1": ["t0-0", "t1-0", "t1-1"], "c2": ["t2-0", "t2-1", "t2-2"]}


def test_cooperative_consumer3_joins_two_rebalances():
    """Seed 000: consumer1 (t0p0, t0p2), consumer2 (t0p1); consumer3 joins. The first rebalance
    only revokes p2 from consumer1; the follow-up gives it to consumer3."""
    topics = {"t0": 3}
    members = [
        member("consumer1", ["t0"], ["t0-0", "t0-2"], 1),
        member("consumer2", ["t0"], ["t0-1"], 1),
        member("consumer3", ["t0"]),
    ]
    result = run("cooperative-sticky", topics, members)
    assert result == {"consumer1": ["t0-0"], "consumer2": ["t0-1"], "consumer3": []}
    follow_up = [
        member("consumer1", ["t0"], result["consumer1"], 2),
        member("consumer2", ["t0"], result["consumer2"], 2),
        member("consumer3", ["t0"], [], 2),
    ]
    assert run("cooperative-sticky", topics, follow_up) == {"consumer1": ["t0-0"], "consumer2": ["t0-1"], "consumer3": ["t0-2"]}


def test_eager_sticky_moves_p2_in_one_rebalance():
    members = [
        member("consumer1", ["t0"], ["t0-0", "t0-2"], 1),
        member("consumer2", ["t0"], ["t0-1"], 1),
        member("consumer3", ["t0"]),
    ]
    assert run("sticky", {"t0": 3}, members) == {"consumer1": ["t0-0"], "consumer2": ["t0-1"], "consumer3": ["t0-2"]}


def test_sticky_deals_rack_local_partitions_first():
    topics = {"t": {"partitions": 4, "racks": [["r1"], ["r0"], ["r1"], ["r0"]]}}
    members = [member("c0", ["t"], rack="r0"), member("c1", ["t"], rack="r1")]
    for strategy in ("sticky", "cooperative-sticky"):
        assert run(strategy, topics, members) == {"c0": ["t-1", "t-3"], "c1": ["t-0", "t-2"]}
    # Stickiness comes first: an owned partition stays even off-rack.
    owned = [member("c0", ["t"], ["t-0"], 1, rack="r0"), member("c1", ["t"], [], 1, rack="r1")]
    assert run("sticky", topics, owned)["c0"][0] == "t-0"
