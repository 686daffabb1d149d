"""Kafka's RangeAssignorTest (group-coordinator, ``assignor/RangeAssignorTest.java``, Kafka 4.1;
its cases and expectations are those of Sept 2024 and of trunk) as facts: same inputs, same
expected target assignment; every case of the class, plus trunk's testReassignmentStickiness. Topic names stand for the
test's topic ids (its ``Uuid.randomUuid()`` ids do not affect the range assignor)."""

from __future__ import annotations

from kafka_rebalance.assignors.server import server_assign
from tests.assignors.server.helpers import m


def rng(topics, members):
    return server_assign("range", topics, members)


def test_one_member_no_topic():
    """RangeAssignorTest.testOneMemberNoTopic: the member gets an empty assignment."""
    assert rng({"topic1": 3}, [m("A", "")]) == {"A": {}}


def test_one_member_subscribed_to_nonexistent_topic_gets_nothing():
    """RangeAssignorTest.testOneMemberSubscribedToNonExistentTopic: Kafka's assignor throws, but
    the coordinator resolves subscriptions against the metadata image first, so a missing topic
    never reaches it; we skip the topic, as the classic contract does."""
    assert rng({"topic1": 3}, [m("A", "topic2")]) == {"A": {}}


def test_first_assignment_two_members_two_topics_same_subscriptions():
    """RangeAssignorTest.testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions."""
    got = rng({"topic1": 3, "topic3": 2}, [m("A", "topic1 topic3"), m("B", "topic1 topic3")])
    assert got == {"A": {"topic1": (0, 1), "topic3": (0,)}, "B": {"topic1": (2,), "topic3": (1,)}}


def test_first_assignment_three_members_three_topics_different_subscriptions():
    """RangeAssignorTest.testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions."""
    got = rng(
        {"topic1": 3, "topic2": 3, "topic3": 2},
        [m("A", "topic1 topic2"), m("B", "topic3"), m("C", "topic2 topic3")],
    )
    assert got == {
        "A": {"topic1": (0, 1, 2), "topic2": (0, 1)},
        "B": {"topic3": (0,)},
        "C": {"topic2": (2,), "topic3": (1,)},
    }


def test_first_assignment_num_members_greater_than_num_partitions():
    """RangeAssignorTest.testFirstAssignmentNumMembersGreaterThanNumPartitions."""
    got = rng({"topic1": 3, "topic3": 2}, [m("A", "topic1 topic3"), m("B", "topic1 topic3"), m("C", "topic1 topic3")])
    assert got == {
        "A": {"topic1": (0,), "topic3": (0,)},
        "B": {"topic1": (1,), "topic3": (1,)},
        "C": {"topic1": (2,)},
    }


def test_static_membership():
    """RangeAssignorTest.testStaticMembership: a static member rejoining under a new member id
    with the same instance id gets the same partitions."""
    before = rng({"topic1": 3}, [m("A", "topic1", instance="instanceA"), m("B", "topic1", instance="instanceB")])
    after = rng({"topic1": 3}, [m("B", "topic1", instance="instanceB"), m("memberA1", "topic1", instance="instanceA")])
    assert after["memberA1"] == before["A"]
    assert after["B"] == before["B"]


def test_mixed_static_membership():
    """RangeAssignorTest.testMixedStaticMembership: static members sort first (by instance id),
    so replacing static member A keeps everyone's partitions."""
    topics = {"topic1": 5}
    before = rng(topics, [m("A", "topic1", instance="instanceA"), m("B", "topic1"), m("C", "topic1", instance="instanceC")])
    after = rng(topics, [m("B", "topic1"), m("C", "topic1", instance="instanceC"), m("memberA1", "topic1", instance="instanceA")])
    assert after["memberA1"] == before["A"]
    assert after["B"] == before["B"]
    assert after["C"] == before["C"]
    # The static members come first: instanceA, instanceC, then B.
    assert before == {"A": {"topic1": (0, 1)}, "C": {"topic1": (2, 3)}, "B": {"topic1": (4,)}}


def test_reassignment_num_members_greater_than_num_partitions_when_one_member_added():
    """RangeAssignorTest.testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded."""
    got = rng(
        {"topic1": 2, "topic2": 2},
        [
            m("A", "topic1 topic2", {"topic1": (0,), "topic2": (0,)}),
            m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1,)}),
            m("C", "topic1 topic2"),
        ],
    )
    assert got == {"A": {"topic1": (0,), "topic2": (0,)}, "B": {"topic1": (1,), "topic2": (1,)}, "C": {}}


def test_reassignment_when_one_partition_added_for_two_members_two_topics():
    """RangeAssignorTest.testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics."""
    got = rng(
        {"topic1": 4, "topic2": 4},
        [
            m("A", "topic1 topic2", {"topic1": (0, 1), "topic2": (0, 1)}),
            m("B", "topic1 topic2", {"topic1": (2,), "topic2": (2,)}),
        ],
    )
    assert got == {"A": {"topic1": (0, 1), "topic2": (0, 1)}, "B": {"topic1": (2, 3), "topic2": (2, 3)}}


def test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics():
    """RangeAssignorTest.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    got = rng(
        {"topic1": 3, "topic2": 3},
        [
            m("A", "topic1 topic2", {"topic1": (0, 1), "topic2": (0, 1)}),
            m("B", "topic1 topic2", {"topic1": (2,), "topic2": (2,)}),
            m("C", "topic1 topic2"),
        ],
    )
    assert got == {
        "A": {"topic1": (0,), "topic2": (0,)},
        "B": {"topic1": (1,), "topic2": (1,)},
        "C": {"topic1": (2,), "topic2": (2,)},
    }


def test_reassignment_when_one_member_added_and_one_partition_after_initial_assignment():
    """RangeAssignorTest.testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics."""
    got = rng(
        {"topic1": 4, "topic2": 3},
        [
            m("A", "topic1 topic2", {"topic1": (0, 1), "topic2": (0, 1)}),
            m("B", "topic1 topic2", {"topic1": (2,), "topic2": (2,)}),
            m("C", "topic1"),
        ],
    )
    assert got == {
        "A": {"topic1": (0, 1), "topic2": (0, 1)},
        "B": {"topic1": (2,), "topic2": (2,)},
        "C": {"topic1": (3,)},
    }


def test_reassignment_when_one_member_removed_after_initial_assignment():
    """RangeAssignorTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    got = rng({"topic1": 3, "topic2": 3}, [m("B", "topic1 topic2", {"topic1": (2,), "topic2": (2,)})])
    assert got == {"B": {"topic1": (0, 1, 2), "topic2": (0, 1, 2)}}


def test_reassignment_when_multiple_subscriptions_removed_after_initial_assignment():
    """RangeAssignorTest.testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics."""
    got = rng(
        {"topic1": 3, "topic2": 3, "topic3": 2},
        [
            m("A", "topic1", {"topic1": (0, 1, 2), "topic2": (0,)}),
            m("B", "topic1 topic2 topic3", {"topic2": (1,)}),
            m("C", "topic2", {"topic2": (2,), "topic3": (0, 1)}),
        ],
    )
    assert got == {
        "A": {"topic1": (0, 1)},
        "B": {"topic1": (2,), "topic2": (0, 1), "topic3": (0, 1)},
        "C": {"topic2": (2,)},
    }


def test_reassignment_stickiness():
    """RangeAssignorTest.testReassignmentStickiness (trunk, via CommonAssignorTests): topics of 2,
    5 and 7 partitions, members A, B, C subscribed to all; running again with the first answer as
    the current assignment, the members listed in any order, gives the same answer."""
    import itertools

    topics = {"topic1": 2, "topic2": 5, "topic3": 7}
    members = [m(x, "topic1 topic2 topic3") for x in "ABC"]
    first = rng(topics, members)
    assert first == {
        "A": {"topic1": (0,), "topic2": (0, 1), "topic3": (0, 1, 2)},
        "B": {"topic1": (1,), "topic2": (2, 3), "topic3": (3, 4)},
        "C": {"topic2": (4,), "topic3": (5, 6)},
    }
    for order in itertools.permutations("ABC"):
        again = [m(x, "topic1 topic2 topic3", first[x]) for x in order]
        assert rng(topics, again) == first
