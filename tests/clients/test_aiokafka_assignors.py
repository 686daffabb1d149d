"""Our aiokafka drop-in assignors at the leader, against aiokafka's own ones on the same input."""

from __future__ import annotations

import pytest

pytest.importorskip("aiokafka")

from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRange  # noqa: E402
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as AioRoundRobin  # noqa: E402
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata  # noqa: E402

from kafka_rebalance.clients.aiokafka import (  # noqa: E402
    RangePartitionAssignor,
    RoundRobinPartitionAssignor,
    StickyPartitionAssignor,
)


class Cluster:
    def __init__(self, partitions):
        self.partitions = partitions

    def partitions_for_topic(self, topic):
        return self.partitions.get(topic)


def decoded(metadata: bytes) -> ConsumerProtocolMemberMetadata:
    """What aiokafka's leader makes of a member's metadata bytes."""
    return ConsumerProtocolMemberMetadata.decode(metadata)


@pytest.mark.parametrize(("ours", "theirs"), [(RangePartitionAssignor, AioRange), (RoundRobinPartitionAssignor, AioRoundRobin)])
def test_same_answer_as_aiokafka(ours, theirs):
    cluster = Cluster({"a": {0, 1, 2, 3, 4}, "b": {0, 1, 2}})
    subs = {"m1": {"a", "b"}, "m2": {"a"}, "m3": {"a", "b"}}
    got = ours.assign(cluster, {m: decoded(ours.metadata(t)) for m, t in subs.items()})
    want = theirs.assign(cluster, {m: decoded(theirs.metadata(t).encode()) for m, t in subs.items()})
    assert {m: sorted(a.partitions()) for m, a in got.items()} == {m: sorted(a.partitions()) for m, a in want.items()}


def test_sticky_remembers_through_user_data():
    cluster = Cluster({"t": {0, 1, 2, 3, 4, 5}})
    consumers = {m: StickyPartitionAssignor() for m in ("A", "B", "C")}
    first = consumers["A"].assign(cluster, {m: decoded(c.metadata({"t"})) for m, c in consumers.items()})
    for m, c in consumers.items():
        c.on_assignment(ConsumerProtocolMemberAssignment.decode(first[m].encode()))
    del consumers["B"]
    second = consumers["C"].assign(cluster, {m: decoded(c.metadata({"t"})) for m, c in consumers.items()})
    for m in consumers:
        assert set(first[m].partitions()) <= set(second[m].partitions())
    assert sorted(len(a.partitions()) for a in second.values()) == [3, 3]
