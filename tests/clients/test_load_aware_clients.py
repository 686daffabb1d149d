"""LoadAwarePartitionAssignor for kafka-python and aiokafka, at the leader, without a broker:
user load sources, the default measurement (growth since this leader's previous assignment plus
lag, equal loads when it cannot measure), eager and cooperative user data, mixed groups."""

from __future__ import annotations

import asyncio
import logging

import pytest

pytest.importorskip("kafka")
pytest.importorskip("aiokafka")

from kafka.coordinator.assignors.abstract import RebalanceProtocol  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment  # noqa: E402
from kafka.structs import TopicPartition  # noqa: E402

from kafka_rebalance.clients import aiokafka as ak  # noqa: E402
from kafka_rebalance.clients import kafka_python as kp  # noqa: E402
from kafka_rebalance.clients.load import LeaderLoads, Offsets  # noqa: E402
from tests.clients.test_kafka_python_assignors import Cluster, as_dict, members  # noqa: E402

HOT = {0: 100.0, 3: 100.0}  # sticky's round-robin over three members puts 0 and 3 together


def _loads(tps):
    return {tp: HOT.get(tp.partition, 1.0) for tp in tps}


def _hot_owners(assignment) -> list[str]:
    return sorted(m for m, pairs in as_dict(assignment).items() for _, ps in pairs for p in ps if p in HOT)


def test_user_load_source_puts_hot_partitions_apart_where_cooperative_sticky_does_not():
    cluster = Cluster({"t": set(range(6))})
    sticky = kp.CooperativeStickyPartitionAssignor()
    plain = sticky.assign(cluster, members({m: sticky.metadata({"t"}) for m in ("a", "b", "c")}))
    assert len(set(_hot_owners(plain))) == 1
    ours = kp.LoadAwarePartitionAssignor(load_source=_loads)
    assert ours.name == "load-aware" and ours.supported_protocols() == [RebalanceProtocol.COOPERATIVE]
    out = ours.assign(cluster, members({m: ours.metadata({"t"}) for m in ("a", "b", "c")}))
    assert len(set(_hot_owners(out))) == 2
    assert sorted(len(ps) for pairs in as_dict(out).values() for _, ps in pairs) == [2, 2, 2]
    assert ours.latest_loads[("t", 0)] == 100.0


def test_a_list_source_and_a_failing_one(caplog):
    cluster = Cluster({"t": set(range(6))})
    listed = kp.LoadAwarePartitionAssignor(load_source=lambda tps: [HOT.get(tp.partition, 1.0) for tp in tps])
    out = listed.assign(cluster, members({m: listed.metadata({"t"}) for m in ("a", "b", "c")}))
    assert len(set(_hot_owners(out))) == 2

    def broken(tps):
        raise RuntimeError("metrics store down\nsecond line")

    failing = kp.LoadAwarePartitionAssignor(load_source=broken)
    with caplog.at_level(logging.WARNING, "kafka_rebalance.load_aware"):
        out = failing.assign(cluster, members({m: failing.metadata({"t"}) for m in ("a", "b", "c")}))
    assert [r.getMessage() for r in caplog.records] == [
        "load-aware: load_source failed (RuntimeError: metrics store down); assigning with equal loads"]
    sticky = kp.CooperativeStickyPartitionAssignor()
    assert as_dict(out) == as_dict(sticky.assign(cluster, members({m: sticky.metadata({"t"}) for m in ("a", "b", "c")})))
    negative = kp.LoadAwarePartitionAssignor(load_source=lambda tps: [-1.0] * len(tps))
    assert negative._loads({"t": {0}}) is None


def test_leader_loads_growth_since_previous_assignment_plus_lag():
    meter = LeaderLoads()
    first = meter.loads(Offsets(end={("t", 0): 100, ("t", 1): 50}, committed={("t", 0): 90, ("t", 1): None}, start={("t", 1): 20}))
    assert first == {("t", 0): 10.0, ("t", 1): 30.0}  # a new leader: lag alone (no commit: from log start)
    second = meter.loads(Offsets(end={("t", 0): 400, ("t", 1): 60}, committed={("t", 0): 390, ("t", 1): 60}))
    assert second == {("t", 0): 300.0 + 10.0, ("t", 1): 10.0 + 0.0}


class FakeConsumer:
    """What the default measurement reads of a KafkaConsumer (public calls only)."""

    def __init__(self, end, committed=None, fail=False):
        self.end, self.committed_offsets, self.fail = end, committed or {}, fail

    def partitions_for_topic(self, topic):
        return {p for (t, p) in self.end if t == topic}

    def subscription(self):
        return {t for t, _ in self.end}

    def end_offsets(self, tps, timeout_ms=None):
        if self.fail:
            raise TimeoutError("ListOffsets timed out")
        return {tp: self.end[(tp.topic, tp.partition)] for tp in tps}

    def beginning_offsets(self, tps, timeout_ms=None):
        return dict.fromkeys(tps, 0)

    def committed(self, tp, timeout_ms=None):
        return self.committed_offsets.get((tp.topic, tp.partition))


def _wait(assignor):
    """Until the worker thread the assignor started at metadata (end offsets) is done."""
    import threading
    import time

    deadline = time.monotonic() + 5
    while any(t.name == "load-aware-offsets" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_default_source_measures_lag_through_the_bound_consumer():
    end = {("t", p): (1000 if p in HOT else 10) for p in range(6)}
    cluster = Cluster({"t": set(range(6))})
    ours = kp.LoadAwarePartitionAssignor().bind(FakeConsumer(end))
    metadata = {m: ours.metadata({"t"}) for m in ("a", "b", "c")}
    _wait(ours)
    out = ours.assign(cluster, members(metadata))
    assert len(set(_hot_owners(out))) == 2
    assert ours.latest_loads[("t", 0)] == 1000.0


def test_default_source_logs_one_line_and_assigns_equal_loads_when_it_cannot_measure(caplog):
    cluster = Cluster({"t": set(range(6))})
    unbound = kp.LoadAwarePartitionAssignor()
    failing = kp.LoadAwarePartitionAssignor().bind(FakeConsumer({("t", 0): 1}, fail=True))
    slow = kp.LoadAwarePartitionAssignor().bind(FakeConsumer({("t", 0): 1}))
    slow._start_measuring = lambda topics: None  # the JoinGroup's read never comes back
    slow._end_offsets = (slow._end_offsets[0] - 60, *slow._end_offsets[1:])  # and bind's is a minute old
    messages = []
    for assignor in (unbound, failing, slow):
        caplog.clear()
        with caplog.at_level(logging.WARNING, "kafka_rebalance.load_aware"):
            metadata = {m: assignor.metadata({"t"}) for m in ("a", "b")}
            _wait(assignor) if assignor is failing else None
            out = assignor.assign(cluster, members(metadata))
        assert len(caplog.records) == 1
        messages.append(caplog.records[0].getMessage())
        assert sorted(len(ps) for pairs in as_dict(out).values() for _, ps in pairs) == [3, 3]
    assert "no consumer bound" in messages[0]
    # (failing: committed offsets were read at bind, end offsets fail at JoinGroup)
    assert "TimeoutError" in messages[1] or "ListOffsets timed out" in messages[1]
    assert "end offsets not read within 2 s" in messages[2]


def test_cooperative_round_then_follow_up_and_eager_user_data():
    cluster = Cluster({"t": set(range(6))})
    consumers = {m: kp.LoadAwarePartitionAssignor(load_source=_loads) for m in ("a", "b", "c")}
    for name, c in consumers.items():
        c.on_assignment(ConsumerProtocolAssignment(1, [("t", [p for p in range(6) if p % 3 == "abc".index(name)])], b""), 3)
    # a, b, c own {0, 3}, {1, 4}, {2, 5}: a must give one hot partition up, over two rebalances.
    first = consumers["a"].assign(cluster, members({m: c.metadata({"t"}) for m, c in consumers.items()}))
    given = {m: {p for _, ps in pairs for p in ps} for m, pairs in as_dict(first).items()}
    assert given["a"] in ({0}, {3})
    for name, c in consumers.items():
        c.on_assignment(ConsumerProtocolAssignment(1, [("t", sorted(given[name]))], b""), 4)
    second = consumers["a"].assign(cluster, members({m: c.metadata({"t"}) for m, c in consumers.items()}))
    final = {m: {p for _, ps in pairs for p in ps} for m, pairs in as_dict(second).items()}
    assert all(given[m] <= final[m] for m in final), "the follow-up revokes nothing"
    assert len(set(_hot_owners(second))) == 2

    eager = {m: kp.LoadAwarePartitionAssignor(load_source=_loads, rebalance_protocol="eager") for m in ("a", "b", "c")}
    assert eager["a"].supported_protocols() == [RebalanceProtocol.EAGER]
    for name, c in eager.items():
        c.on_assignment(ConsumerProtocolAssignment(0, [("t", [p for p in range(6) if p % 3 == "abc".index(name)])], b""), 3)
    out = eager["a"].assign(cluster, members({m: c.metadata({"t"}) for m, c in eager.items()}))
    kept = {m: {p for _, ps in pairs for p in ps} for m, pairs in as_dict(out).items()}
    assert kept["b"] >= {1, 4} - {0, 3} or kept["c"] >= {2, 5} - {0, 3}  # previous ownership read from user data
    assert len(set(_hot_owners(out))) == 2
    assert sum(len(kept[m] & {p for p in range(6) if p % 3 == "abc".index(m)}) for m in kept) == 4  # one swap


def test_aiokafka_load_aware_user_source_and_default_measurement():
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    from tests.clients.test_aiokafka_assignors import Cluster as AioCluster

    cluster = AioCluster({"t": set(range(6))})
    ours = ak.LoadAwarePartitionAssignor(load_source=_loads)
    subs = {m: ConsumerProtocolMemberMetadata.decode(ours.metadata({"t"})) for m in ("a", "b", "c")}
    out = ours.assign(cluster, subs)
    owners = sorted(m for m, a in out.items() for _, ps in a.assignment for p in ps if p in HOT)
    assert len(set(owners)) == 2

    class AsyncConsumer:
        def partitions_for_topic(self, topic):
            return set(range(6))

        async def end_offsets(self, tps):
            return {tp: (500 if tp.partition in HOT else 5) for tp in tps}

        async def beginning_offsets(self, tps):
            return dict.fromkeys(tps, 0)

        async def committed(self, tp):
            return None

    async def leader():
        measured = ak.LoadAwarePartitionAssignor().bind(AsyncConsumer())
        subs = {m: ConsumerProtocolMemberMetadata.decode(measured.metadata({"t"})) for m in ("a", "b", "c")}
        await asyncio.sleep(0.05)
        return measured, measured.assign(cluster, subs)

    measured, out = asyncio.run(leader())
    assert measured.latest_loads[("t", 0)] == 500.0
    owners = sorted(m for m, a in out.items() for _, ps in a.assignment for p in ps if p in HOT)
    assert len(set(owners)) == 2


def test_mixed_group_members_without_load_aware_vote_as_usual():
    """The broker chooses a protocol every member lists, voted as usual; a consumer can list
    load-aware first and cooperative-sticky after it (kafka-python requires one protocol kind
    across a consumer's assignors: both are COOPERATIVE, or eager load-aware with sticky)."""
    from kafka_rebalance.assignors import select_strategy

    assert select_strategy([("load-aware", "cooperative-sticky"), ("cooperative-sticky",)]) == "cooperative-sticky"
    assert select_strategy([("load-aware", "cooperative-sticky"), ("load-aware", "cooperative-sticky")]) == "load-aware"
    assert kp.LoadAwarePartitionAssignor().supported_protocols() == kp.CooperativeStickyPartitionAssignor().supported_protocols()
    assert kp.LoadAwarePartitionAssignor(rebalance_protocol="eager").supported_protocols() == kp.StickyPartitionAssignor().supported_protocols()
    assert isinstance(TopicPartition("t", 0), tuple)


def test_leader_loads_without_committed_offsets_growth_alone(caplog):
    meter = LeaderLoads()
    with caplog.at_level(logging.WARNING, "kafka_rebalance.load_aware"):
        assert meter.loads(Offsets(end={("t", 0): 100, ("t", 1): 50}, committed=None)) is None
    assert "committed offsets are not known" in caplog.records[0].getMessage()
    assert meter.loads(Offsets(end={("t", 0): 160, ("t", 1): 51}, committed=None)) == {("t", 0): 60.0, ("t", 1): 1.0}
