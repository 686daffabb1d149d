"""Cooperative-sticky through the kafka-python adapter vs our own `assign` vs kafka-python's own
assignor: 100 members x 10,000 partitions (10 topics x 1,000), a rebalance after one member
left a balanced group (so the sticky work is real). One command, prints a table:

    PYTHONPATH=src python benchmarks/clients.py
"""

from __future__ import annotations

import sys
import time

from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KPCooperative
from kafka.protocol.consumer import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from kafka_rebalance.assignors import assign
from kafka_rebalance.clients.kafka_python import CooperativeStickyPartitionAssignor

MEMBERS, TOPICS, PER_TOPIC = 100, 10, 1000


class Cluster:
    def __init__(self, partitions):
        self.partitions = partitions

    def partitions_for_topic(self, topic):
        return self.partitions.get(topic)

    def topics(self):
        return set(self.partitions)


def group():
    topics = [f"topic{t}" for t in range(TOPICS)]
    names = [f"member-{m:03d}" for m in range(MEMBERS)]
    owned = {m: [] for m in names}
    i = 0
    for t in topics:
        for p in range(PER_TOPIC):
            owned[names[i % MEMBERS]].append((t, p))
            i += 1
    del owned[names[0]]  # one member left: its 100 partitions need new owners
    return topics, owned


def best_of(fn, runs=3):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    topics, owned = group()
    cluster = Cluster({t: set(range(PER_TOPIC)) for t in topics})
    SubTP = ConsumerProtocolSubscription.TopicPartition

    def members():
        out = []
        for m, parts in owned.items():
            by_topic = {}
            for t, p in parts:
                by_topic.setdefault(t, []).append(p)
            meta = ConsumerProtocolSubscription(version=3, topics=topics, user_data=b"", owned_partitions=[SubTP(topic=t, partitions=ps) for t, ps in by_topic.items()], generation_id=5, rack_id=None)
            out.append(JoinGroupResponse.JoinGroupResponseMember(member_id=m, metadata=meta))
        return out

    snapshot = {"topics": {t: PER_TOPIC for t in topics}, "members": [{"member_id": m, "topics": topics, "owned": [f"{t}-{p}" for t, p in parts], "generation": 5} for m, parts in owned.items()]}
    # Inputs are built once, outside the timings: each side gets what its caller hands it (the
    # decoded JoinGroup members for the adapters, the JSON dict for assign()).
    joined = members()
    ours_adapter = best_of(lambda: CooperativeStickyPartitionAssignor().assign(cluster, joined), runs=20)
    ours_assign = best_of(lambda: assign(snapshot, "cooperative-sticky"), runs=20)
    kp = best_of(lambda: KPCooperative().assign(cluster, joined), runs=1)
    rows = [
        ("kafka-rebalance, kafka-python adapter", ours_adapter),
        ("kafka-rebalance, assign() (JSON dict)", ours_assign),
        ("kafka-python CooperativeStickyAssignor", kp),
    ]
    print(f"cooperative-sticky, {MEMBERS} members x {TOPICS * PER_TOPIC} partitions, one member gone (python {sys.version.split()[0]})")
    print(f"{'assignor':42} {'best ms':>10} {'vs assign()':>12}")
    for name, secs in rows:
        print(f"{name:42} {secs * 1000:10.1f} {secs / ours_assign:11.2f}x")
    print(f"adapter / assign(): {ours_adapter / ours_assign:.2f}x; kafka-python / adapter: {kp / ours_adapter:.0f}x")


if __name__ == "__main__":
    main()
