"""Kafka's own uniform-assignor test cases as facts, answered exactly (Kafka 4.1, group-coordinator
``assignor/OptimizedUniformAssignmentBuilderTest.java`` (the homogeneous builder; renamed
``UniformHomogeneousAssignmentBuilderTest`` on trunk, same cases),
``assignor/UniformHeterogeneousAssignmentBuilderTest.java`` and, on trunk,
``assignor/CommonAssignorTests.java``).

Each case states Kafka's expected target assignment, and ours must equal it. Kafka's tests fix
the orders its builders iterate in: members in a ``TreeMap`` (sorted ids, which is also the order
a broker's ``HashMap`` gives ``A``, ``B``, ``C``), a member's assignment in a ``HashMap``
(``mkAssignment``: our ``coordinator`` order) or a ``LinkedHashMap`` (``mkOrderedAssignment``:
our ``given`` order). Where a test forces a subscription type that a broker would not pick for
those subscriptions, the fact forces it too.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from kafka_rebalance.assignors.server import (
    ServerMember,
    build_server_group,
    server_assign,
    target_assignment,
)
from kafka_rebalance.assignors.server.uniform import uniform_assign
from tests.assignors.server.helpers import drop_empty, m
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

Assignment = dict[str, dict[str, tuple[int, ...]]]


def uniform(topics: dict[str, int], members: list[ServerMember], order: str = "coordinator",
            homogeneous: bool | None = None) -> Assignment:
    """Our uniform answer; ``homogeneous`` forces the subscription type a Kafka test passes."""
    group = build_server_group(topics, members, TOPIC_IDS, order)
    if homogeneous is not None:
        group = dataclasses.replace(group, same_subscriptions=homogeneous)
    return drop_empty(target_assignment(group, uniform_assign(group)))


# (Kafka test, topics, members, iteration order, forced type, Kafka's expected assignment)
CASES = [
    (f"{H}.testOneMemberNoTopicSubscription", {"topic1": 3}, [m("A", "")], "coordinator", None, {"A": {}}),
    # Kafka's builder throws for a topic missing from metadata; a broker resolves subscriptions
    # against its metadata image first (TopicIds), so the builder sees no topic at all.
    (f"{H}.testOneMemberSubscribedToNonexistentTopic", {"topic1": 3}, [m("A", "topic2")], "coordinator", None, {"A": {}}),
    (f"{H}.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks", {"topic1": 3, "topic3": 2},
     [m("A", "topic1 topic3"), m("B", "topic1 topic3")], "coordinator", None,
     {"A": {"topic3": (0, 1)}, "B": {"topic1": (0, 1, 2)}}),
    (f"{H}.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions", {"topic3": 2},
     [m("A", "topic3"), m("B", "topic3"), m("C", "topic3")], "coordinator", None,
     {"A": {}, "B": {"topic3": (0,)}, "C": {"topic3": (1,)}}),
    (f"{H}.testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment", {"topic1": 3, "topic2": 3},
     [m("A", "topic1 topic2", {"topic1": (0, 1), "topic2": (0, 1)}), m("B", "topic1 topic2", {"topic1": (2,), "topic2": (2,)})],
     "given", None, {"A": {"topic1": (0, 1), "topic2": (0,)}, "B": {"topic1": (2,), "topic2": (1, 2)}}),
    (f"{H}.testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics", {"topic1": 6, "topic2": 5},
     [m("A", "topic1 topic2", {"topic1": (0, 2), "topic2": (0,)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1, 2)})],
     "given", None, {"A": {"topic1": (0, 2), "topic2": (0, 3, 4)}, "B": {"topic1": (1, 3, 4, 5), "topic2": (1, 2)}}),
    (f"{H}.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics", {"topic1": 3, "topic2": 3},
     [m("A", "topic1 topic2", {"topic1": (0, 2), "topic2": (0,)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1, 2)}),
      m("C", "topic1 topic2")],
     "given", None, {"A": {"topic1": (0, 2)}, "B": {"topic1": (1,), "topic2": (1,)}, "C": {"topic2": (0, 2)}}),
    (f"{H}.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics", {"topic1": 3, "topic2": 3},
     [m("A", "topic1 topic2", {"topic1": (0,), "topic2": (0,)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1,)})],
     "coordinator", None, {"A": {"topic1": (0,), "topic2": (0, 2)}, "B": {"topic1": (1, 2), "topic2": (1,)}}),
    (f"{H}.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics", {"topic1": 2, "topic2": 2},
     [m("A", "topic2", {"topic1": (0,), "topic2": (0,)}), m("B", "topic2", {"topic1": (1,), "topic2": (1,)})],
     "coordinator", None, {"A": {"topic2": (0,)}, "B": {"topic2": (1,)}}),
    # The test forces HOMOGENEOUS although B and C also name topic2 (missing from metadata).
    (f"{H}.testReassignmentStickinessWhenAlreadyBalanced", {"topic1": 5},
     [m("A", "topic1", {"topic1": (0, 3)}), m("B", "topic1 topic2", {"topic1": (1,)}), m("C", "topic1 topic2", {"topic1": (2, 4)})],
     "coordinator", True, {"A": {"topic1": (0, 3)}, "B": {"topic1": (1,)}, "C": {"topic1": (2, 4)}}),
    (f"{X}.testTwoMembersNoTopicSubscription", {"topic1": 3}, [m("A", ""), m("B", "")], "given", False, {"A": {}, "B": {}}),
    (f"{X}.testTwoMembersSubscribedToNonexistentTopics", {"topic1": 3}, [m("A", "topic3"), m("B", "topic2")], "given", False,
     {"A": {}, "B": {}}),
    (f"{X}.testFirstAssignmentTwoMembersTwoTopics", {"topic1": 3, "topic3": 6},
     [m("A", "topic1 topic3"), m("B", "topic3")], "given", False,
     {"A": {"topic1": (0, 1, 2), "topic3": (4,)}, "B": {"topic3": (0, 1, 2, 3, 5)}}),
    (f"{X}.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions", {"topic3": 1, "topic1": 2},
     [m("A", "topic3"), m("B", "topic3"), m("C", "topic1")], "given", False,
     {"A": {"topic3": (0,)}, "B": {}, "C": {"topic1": (0, 1)}}),
    (f"{X}.testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment", {"topic1": 6, "topic2": 4, "topic3": 4},
     [m("A", "topic1", {"topic1": (0, 1, 2)}), m("B", "topic1 topic2", {"topic1": (3,), "topic2": (0,)}),
      m("C", "topic1 topic2 topic3", {"topic1": (4, 5), "topic2": (1, 2, 3), "topic3": (0, 1, 2, 3)})], "given", False,
     {"A": {"topic1": (0, 1, 2, 5)}, "B": {"topic1": (3,), "topic2": (0, 1, 2, 3)}, "C": {"topic1": (4,), "topic3": (0, 1, 2, 3)}}),
    (f"{X}.testReassignmentWhenPartitionsAreAddedForTwoMembers", {"topic1": 6, "topic2": 5, "topic3": 3, "topic4": 3},
     [m("A", "topic1 topic3", {"topic1": (0, 1, 2, 3), "topic3": (0, 1)}),
      m("B", "topic1 topic2 topic3 topic4", {"topic2": (0, 1, 2), "topic4": (0, 1, 2)})], "given", False,
     {"A": {"topic1": (0, 1, 2, 3, 4, 5), "topic3": (0, 1, 2)}, "B": {"topic2": (0, 1, 2, 3, 4), "topic4": (0, 1, 2)}}),
    (f"{X}.testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics", {"topic1": 6, "topic2": 7},
     [m("A", "topic1", {"topic1": (0, 2), "topic2": (0,)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (1, 2)}),
      m("C", "topic1 topic2")], "given", False,
     {"A": {"topic1": (0, 2, 3, 4, 5)}, "B": {"topic1": (1,), "topic2": (1, 2, 6)}, "C": {"topic2": (0, 3, 4, 5)}}),
    (f"{X}.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics",
     {"topic1": 3, "topic2": 8, "topic3": 3},
     [m("A", "topic1 topic3", {"topic1": (0, 1, 2), "topic3": (0, 1)}), m("B", "topic2", {"topic2": (3, 4, 5, 6)})], "given", False,
     {"A": {"topic1": (0, 1, 2), "topic3": (0, 1, 2)}, "B": {"topic2": (0, 1, 2, 3, 4, 5, 6, 7)}}),
    (f"{X}.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics", {"topic1": 3, "topic2": 5},
     [m("A", "topic1", {"topic1": (0, 2), "topic2": (1, 3)}), m("B", "topic1 topic2", {"topic1": (1,), "topic2": (0, 2, 4)})],
     "given", False, {"A": {"topic1": (0, 1, 2)}, "B": {"topic2": (0, 1, 2, 3, 4)}}),
    # The test forces HETEROGENEOUS although A and B subscribe to the same topics.
    (f"{X}.testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions", {"topic1": 2, "topic2": 2, "topic3": 2},
     [m("A", "topic1 topic2 topic3", {"topic1": (0, 1), "topic2": (0, 1), "topic3": (0, 1)}), m("B", "topic1 topic2 topic3")],
     "given", False, {"A": {"topic2": (0,), "topic3": (0, 1)}, "B": {"topic1": (0, 1), "topic2": (1,)}}),
    (f"{X}.testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions", {"topic1": 3},
     [m("A", "topic1"), m("B", "")], "given", False, {"A": {"topic1": (0, 1, 2)}, "B": {}}),
]


@pytest.mark.parametrize(("kafka_test", "topics", "members", "order", "homogeneous", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_uniform_gives_kafkas_answer(kafka_test, topics, members, order, homogeneous, expected):
    assert uniform(topics, members, order, homogeneous) == expected


def test_subscription_type_is_picked_like_a_broker():
    """A broker picks HOMOGENEOUS when every member names the same topics, else HETEROGENEOUS
    (``ModernGroup.subscriptionType``); the forced cases above agree with the unforced answer
    wherever the broker's pick is the test's."""
    for kafka_test, topics, members, order, homogeneous, expected in CASES:
        same = len({frozenset(mb.subscribed_topics) for mb in members}) == 1
        if homogeneous is None or homogeneous == same:
            got = drop_empty(server_assign("uniform", topics, members, topic_ids=TOPIC_IDS, iteration_order=order))
            assert got == expected, kafka_test


def test_validity_and_balance_for_large_sample_set():
    """OptimizedUniformAssignmentBuilderTest.testValidityAndBalanceForLargeSampleSet: 100 topics of 3
    partitions, 49 members subscribed to all of them."""
    topics = {f"topic-{i}": 3 for i in range(1, 101)}
    members = [m(f"member{i}", " ".join(topics)) for i in range(1, 50)]
    got = server_assign("uniform", topics, members)
    assert_valid(topics, members, got)
    assert_balanced(topics, members, got)


# CommonAssignorTests (trunk): three topics of 2, 5 and 7 partitions; members A, B, C subscribed
# to all three; random topic ids there, two fixed sets of ids here.
COMMON_TOPICS = {"topic1": 2, "topic2": 5, "topic3": 7}
OTHER_IDS = {"topic1": "AAAAAAAAAAAAAAAAAAAAAA", "topic2": "_____________________w", "topic3": "q1wRkTbkQsKx4gqWzYq0hg"}


@pytest.mark.parametrize("ids", [TOPIC_IDS, OTHER_IDS])
@pytest.mark.parametrize("homogeneous", [True, False])
def test_reassignment_stickiness(ids, homogeneous):
    """CommonAssignorTests.testReassignmentStickiness (via UniformHomogeneousAssignmentBuilderTest
    and UniformHeterogeneousAssignmentBuilderTest): once balanced, running the assignor again with
    the members in any of the six orders changes nothing. Also testAssignmentReuse: every member
    keeps exactly its assignment."""
    members = [m(x, "topic1 topic2 topic3") for x in "ABC"]

    def run(listed: list[ServerMember]) -> Assignment:
        group = build_server_group(COMMON_TOPICS, listed, ids, "given")
        group = dataclasses.replace(group, same_subscriptions=homogeneous)
        return target_assignment(group, uniform_assign(group))

    first = run(members)
    for order in itertools.permutations(range(3)):
        again = [dataclasses.replace(members[i], assigned=first[members[i].member_id]) for i in order]
        assert run(again) == first
