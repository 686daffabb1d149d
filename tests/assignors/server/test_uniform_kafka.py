"""Kafka's own uniform-assignor test cases as facts (group-coordinator, trunk of Sept 2024):
``assignor/OptimizedUniformAssignmentBuilderTest.java`` (the homogeneous builder) and
``assignor/UniformHeterogeneousAssignmentBuilderTest.java``.

Each case states Kafka's expected target assignment. Kafka's homogeneous builder deals partitions
in hash-set order, so for uniform we hold Kafka's *properties* on every case: the result is
valid, balanced by Kafka's definition, and keeps at least as many partitions in place as Kafka's
expected answer. Where our builder takes the same path as Kafka's (overlapping subscriptions, the
heterogeneous port), the answer is asserted to be exactly Kafka's.
"""

from __future__ import annotations

import pytest

from kafka_rebalance.assignors.server import server_assign
from tests.assignors.server.helpers import drop_empty, kept_count, m
from tests.assignors.server.properties import assert_balanced, assert_valid

# The test classes' topic ids (Uuid.fromString in both Kafka test files).
TOPIC_IDS = {
    "topic1": "T1-A4s3VTwiI5CTbEp6POw",
    "topic2": "T2-B4s3VTwiI5YHbPp6YUe",
    "topic3": "T3-CU8fVTLCz5YMkLoDQsa",
    "topic4": "T4-Tw9fVTLCz5HbPp6YQsa",
}

H = "OptimizedUniformAssignmentBuilderTest"
X = "UniformHeterogeneousAssignmentBuilderTest"

# (Kafka test, topics, members, Kafka's expected assignment, exact)
CASES = [
    (f"{H}.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks", {"topic1": 3, "topic3": 2},
     [m("A", "topic1 topic3"), m("B", "topic1 topic3")],
     {"A": {"topic1": (0,), "topic3": (0, 1)}, "B": {"topic1": (1, 2)}}, False),
    (f"{H}.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions", {"topic3": 2},
     [m("A", "topic3"), m("B", "topic3"), m("C", "topic3")],
     {"A": {"topic3": (0,)}, "B": {"topic3": (1,)}, "C": {}}, True),
    (f"{H}.testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment", {"topic1": 3, "topic2": 3},
     [m("A", "topic1 topic2", {"topic1": (0, 1), "topic2": (0, 1)}), m("B", "topic1 topic2", {"topic1": (2,), "topic2": (2,)})],
     {"A": {"topic1": (0, 1), "topic2": (0,)}, "B": {"topic1": (2,), "topic2": (1, 2)}}, True),
    (f"{H}.testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics", {"topic1": 6, "topic2": 5},
     [m("A", "topic1 topic2", {"topic1": (0, 2), "topic2": (0,)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1, 2)})],
     {"A": {"topic1": (0, 2, 3), "topic2": (0, 3, 4)}, "B": {"topic1": (1, 4, 5), "topic2": (1, 2)}}, False),
    (f"{H}.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics", {"topic1": 3, "topic2": 3},
     [m("A", "topic1 topic2", {"topic1": (0, 2), "topic2": (0,)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1, 2)}),
      m("C", "topic1 topic2")],
     {"A": {"topic1": (0, 2)}, "B": {"topic1": (1,), "topic2": (1,)}, "C": {"topic2": (0, 2)}}, True),
    (f"{H}.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics", {"topic1": 3, "topic2": 3},
     [m("A", "topic1 topic2", {"topic1": (0,), "topic2": (0,)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1,)})],
     {"A": {"topic1": (0,), "topic2": (0, 2)}, "B": {"topic1": (1, 2), "topic2": (1,)}}, False),
    (f"{H}.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics", {"topic1": 2, "topic2": 2},
     [m("A", "topic2", {"topic1": (0,), "topic2": (0,)}), m("B", "topic2", {"topic1": (1,), "topic2": (1,)})],
     {"A": {"topic2": (0,)}, "B": {"topic2": (1,)}}, True),
    (f"{X}.testFirstAssignmentTwoMembersTwoTopics", {"topic1": 3, "topic3": 6},
     [m("A", "topic1 topic3"), m("B", "topic3")],
     {"A": {"topic1": (0, 1, 2), "topic3": (4,)}, "B": {"topic3": (0, 1, 2, 3, 5)}}, True),
    (f"{X}.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions", {"topic3": 1, "topic1": 2},
     [m("A", "topic3"), m("B", "topic3"), m("C", "topic1")],
     {"A": {"topic3": (0,)}, "B": {}, "C": {"topic1": (0, 1)}}, True),
    (f"{X}.testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment", {"topic1": 6, "topic2": 4, "topic3": 4},
     [m("A", "topic1", {"topic1": (0, 1, 2)}), m("B", "topic1 topic2", {"topic1": (3,), "topic2": (0,)}),
      m("C", "topic1 topic2 topic3", {"topic1": (4, 5), "topic2": (1, 2, 3), "topic3": (0, 1, 2, 3)})],
     {"A": {"topic1": (0, 1, 2, 5)}, "B": {"topic1": (3,), "topic2": (0, 1, 2, 3)}, "C": {"topic1": (4,), "topic3": (0, 1, 2, 3)}}, True),
    (f"{X}.testReassignmentWhenPartitionsAreAddedForTwoMembers", {"topic1": 6, "topic2": 5, "topic3": 3, "topic4": 3},
     [m("A", "topic1 topic3", {"topic1": (0, 1, 2, 3), "topic3": (0, 1)}),
      m("B", "topic1 topic2 topic3 topic4", {"topic2": (0, 1, 2), "topic4": (0, 1, 2)})],
     {"A": {"topic1": (0, 1, 2, 3, 4, 5), "topic3": (0, 1, 2)}, "B": {"topic2": (0, 1, 2, 3, 4), "topic4": (0, 1, 2)}}, True),
    (f"{X}.testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics", {"topic1": 6, "topic2": 7},
     [m("A", "topic1", {"topic1": (0, 2), "topic2": (0,)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1, 2)}),
      m("C", "topic1 topic2")],
     {"A": {"topic1": (0, 2, 3, 4, 5)}, "B": {"topic1": (1,), "topic2": (1, 2, 6)}, "C": {"topic2": (0, 3, 4, 5)}}, True),
    (f"{X}.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics", {"topic1": 3, "topic2": 8, "topic3": 3},
     [m("A", "topic1 topic3", {"topic1": (0, 1, 2), "topic3": (0, 1)}), m("B", "topic2", {"topic2": (3, 4, 5, 6)})],
     {"A": {"topic1": (0, 1, 2), "topic3": (0, 1, 2)}, "B": {"topic2": (0, 1, 2, 3, 4, 5, 6, 7)}}, True),
    (f"{X}.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics", {"topic1": 3, "topic2": 5},
     [m("A", "topic1", {"topic1": (0, 2), "topic2": (1, 3)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (0, 2, 4)})],
     {"A": {"topic1": (0, 1, 2)}, "B": {"topic2": (0, 1, 2, 3, 4)}}, True),
    (f"{X}.testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions", {"topic1": 2, "topic2": 2, "topic3": 2},
     [m("A", "topic1 topic2 topic3", {"topic1": (0, 1), "topic2": (0, 1), "topic3": (0, 1)}), m("B", "topic1 topic2 topic3")],
     {"A": {"topic2": (0,), "topic3": (0, 1)}, "B": {"topic1": (0, 1), "topic2": (1,)}}, False),
    (f"{X}.testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions", {"topic1": 3},
     [m("A", "topic1"), m("B", "")],
     {"A": {"topic1": (0, 1, 2)}, "B": {}}, True),
]


@pytest.mark.parametrize(("kafka_test", "topics", "members", "expected", "exact"), CASES, ids=[c[0].split(".")[1] for c in CASES])
def test_uniform_holds_kafka_case(kafka_test, topics, members, expected, exact):
    """Valid, balanced, and at least as sticky as Kafka's answer; equal to it where ``exact``."""
    got = server_assign("uniform", topics, members, topic_ids=TOPIC_IDS)
    for answer in (expected, got):  # Kafka's own answer passes the same checks
        assert_valid(topics, members, answer)
        assert_balanced(topics, members, answer)
    assert kept_count(members, got) >= kept_count(members, expected)
    if exact:
        assert drop_empty(got) == expected


def test_no_subscriptions_assigns_nothing():
    """OptimizedUniformAssignmentBuilderTest.testOneMemberNoTopicSubscription and
    UniformHeterogeneousAssignmentBuilderTest.testTwoMembersNoTopicSubscription: nothing assigned."""
    assert server_assign("uniform", {"topic1": 3}, [m("A", "")]) == {"A": {}}
    assert server_assign("uniform", {"topic1": 3}, [m("A", ""), m("B", "")]) == {"A": {}, "B": {}}


def test_nonexistent_topics_are_skipped():
    """OptimizedUniformAssignmentBuilderTest.testOneMemberSubscribedToNonexistentTopic and
    UniformHeterogeneousAssignmentBuilderTest.testTwoMembersSubscribedToNonexistentTopics: Kafka's
    assignor throws, but the coordinator drops topics missing from metadata before calling it."""
    assert server_assign("uniform", {"topic1": 3}, [m("A", "topic2")]) == {"A": {}}
    assert server_assign("uniform", {"topic1": 3}, [m("A", "topic3"), m("B", "topic2")]) == {"A": {}, "B": {}}


def test_validity_and_balance_for_large_sample_set():
    """OptimizedUniformAssignmentBuilderTest.testValidityAndBalanceForLargeSampleSet: 99 topics of 3
    partitions, 49 members subscribed to all of them."""
    topics = {f"topic-{i}": 3 for i in range(1, 100)}
    members = [m(f"member{i}", " ".join(topics)) for i in range(1, 50)]
    got = server_assign("uniform", topics, members)
    assert_valid(topics, members, got)
    assert_balanced(topics, members, got)
