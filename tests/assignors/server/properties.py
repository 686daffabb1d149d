"""Kafka's validity and balance checks for a target assignment (OptimizedUniformAssignmentBuilderTest
.checkValidityAndBalance), over the dict form."""

from __future__ import annotations

from kafka_rebalance.assignors.server import ServerMember


def assert_valid(topics: dict[str, int], members: list[ServerMember], target: dict[str, dict[str, tuple[int, ...]]]) -> None:
    """Every partition goes to a member subscribed to its topic, and to one member only; every
    partition of a subscribed topic is assigned."""
    subscriptions = {mm.member_id: set(mm.subscribed_topics) for mm in members}
    owners: dict[tuple[str, int], str] = {}
    for member, assignment in target.items():
        for topic, parts in assignment.items():
            assert topic in subscriptions[member], f"{member} got {topic} without subscribing"
            for p in parts:
                assert 0 <= p < topics[topic]
                assert (topic, p) not in owners, f"{topic}-{p} assigned twice"
                owners[(topic, p)] = member
    subscribed = set().union(*subscriptions.values()) & set(topics) if subscriptions else set()
    assert len(owners) == sum(topics[t] for t in subscribed), "a subscribed partition is unassigned"


def assert_balanced(topics: dict[str, int], members: list[ServerMember], target: dict[str, dict[str, tuple[int, ...]]]) -> None:
    """No partition can move to another subscriber of its topic that has 2+ fewer partitions
    (Kafka's definition); for identical subscriptions that is: sizes differ by at most one."""
    size = {member: sum(map(len, a.values())) for member, a in target.items()}
    subscribers: dict[str, list[str]] = {}
    for mm in members:
        for topic in mm.subscribed_topics:
            if topic in topics:
                subscribers.setdefault(topic, []).append(mm.member_id)
    for member, assignment in target.items():
        for topic, parts in assignment.items():
            if parts:
                least = min(size[s] for s in subscribers[topic])
                assert size[member] - least <= 1, f"{topic} on {member} ({size[member]}) could move to a member with {least}"
