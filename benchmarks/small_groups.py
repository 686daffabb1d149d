"""Eager sticky through the kafka-python adapter vs kafka-python's own StickyPartitionAssignor on
the 2,000 seeded random small groups of tests/clients/test_kafka_python_assignors.py (1-5 topics
of 1-8 partitions, up to 7 members and 2 joiners; each group assigned fresh by kafka-python,
then changed and reassigned by both from the same user data). CPU time (process_time), so a
loaded machine skews it less than wall time; per size bucket (partitions in the group):

    PYTHONPATH=src python benchmarks/small_groups.py [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KPSticky
from kafka.protocol.consumer import JoinGroupResponse

from kafka_rebalance.clients.kafka_python import StickyPartitionAssignor

GROUPS, SEED = 2000, 20261123
BUCKETS = ((1, 8), (9, 16), (17, 24), (25, 40))


class Cluster:
    """What the assignors read of kafka-python's ClusterMetadata."""

    def __init__(self, partitions: dict[str, set[int]]):
        self.partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self.partitions.get(topic)

    def topics(self) -> set[str]:
        return set(self.partitions)


def _members(metadata: dict) -> list:
    return [JoinGroupResponse.JoinGroupResponseMember(member_id=m, metadata=md) for m, md in metadata.items()]


class ChangedGroup(NamedTuple):
    """One random group after a change: the cluster, who subscribes to what now, what each
    member owned after kafka-python's fresh assignment, and the JoinGroup members carrying
    that as user data (generation 1)."""

    cluster: Cluster
    subscriptions: dict[str, set[str]]
    previous: dict[str, list]
    joined: list

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.cluster.partitions.values())


def changed_groups(seed: int = SEED, count: int = GROUPS) -> Iterator[ChangedGroup]:
    """``count`` draws from ``seed``: 1-5 topics of 1-8 partitions, up to 7 members, each group
    assigned fresh by kafka-python's sticky assignor, then changed (members leave, change
    subscription, up to 2 join). Draws where nobody remains are skipped."""
    rng = random.Random(seed)
    for _ in range(count):
        topics = [f"t{i}" for i in range(rng.randint(1, 5))]
        partitions = {t: set(range(rng.randint(1, 8))) for t in topics}
        names = [f"C{i}" for i in range(rng.randint(1, 7))]
        subs = {m: set(rng.sample(topics, rng.randint(1, len(topics)))) for m in names}
        cluster = Cluster(partitions)
        first = KPSticky().assign(cluster, _members({m: KPSticky._metadata(t, []) for m, t in subs.items()}))  # noqa: SLF001 (kafka-python's helper)
        previous = {m: first[m].partitions() for m in subs}
        ordered = sorted(partitions)
        changed = {m: t for m, t in subs.items() if rng.random() > 0.25}
        for m in list(changed):
            if rng.random() < 0.3:
                changed[m] = set(rng.sample(ordered, rng.randint(1, len(ordered))))
        for j in range(rng.randint(0, 2)):
            changed[f"N{j}"] = set(rng.sample(ordered, rng.randint(1, len(ordered))))
        if not changed:
            continue
        meta = {m: KPSticky._metadata(t, previous.get(m, []), 1) for m, t in changed.items()}  # noqa: SLF001
        yield ChangedGroup(cluster, changed, previous, _members(meta))


def groups() -> list[tuple[Cluster, list, int]]:
    """The test's 2,000 groups: (cluster, the JoinGroup members of the reassignment, partitions
    in the group)."""
    return [(g.cluster, g.joined, g.size) for g in changed_groups()]


def cpu_seconds(cases: list[tuple[Cluster, list, int]], assign: Callable[[Cluster, list], object]) -> list[float]:
    times = []
    for cluster, joined, _ in cases:
        start = time.process_time()
        assign(cluster, joined)
        times.append(time.process_time() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per side; each group's best counts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases = groups()
    StickyPartitionAssignor().assign(*cases[0][:2])  # warm: imports and first-call caches
    ours, theirs = [float("inf")] * len(cases), [float("inf")] * len(cases)
    for _ in range(args.repeat):
        ours = [min(a, b) for a, b in zip(ours, cpu_seconds(cases, lambda c, j: StickyPartitionAssignor().assign(c, j)), strict=True)]
        theirs = [min(a, b) for a, b in zip(theirs, cpu_seconds(cases, lambda c, j: KPSticky().assign(c, j)), strict=True)]
    rows = []
    for low, high in (*BUCKETS, (1, max(c[2] for c in cases))):
        picked = [i for i, c in enumerate(cases) if low <= c[2] <= high]
        o, t = sum(ours[i] for i in picked), sum(theirs[i] for i in picked)
        rows.append({"partitions": f"{low}-{high}" if (low, high) in BUCKETS else "all", "groups": len(picked), "ours_s": o, "kafka_python_s": t})
    if args.json:
        print(json.dumps(rows))
        return
    print(f"eager sticky, {len(cases)} random small groups, CPU seconds (python {sys.version.split()[0]})")
    print(f"{'partitions':>10} {'groups':>7} {'ours':>9} {'kafka-python':>13} {'ours/kp':>8} {'us/group':>9}")
    for r in rows:
        ratio = r["ours_s"] / r["kafka_python_s"] if r["kafka_python_s"] else float("nan")
        per = r["ours_s"] / r["groups"] * 1e6 if r["groups"] else 0.0
        print(f"{r['partitions']:>10} {r['groups']:>7} {r['ours_s']:9.3f} {r['kafka_python_s']:13.3f} {ratio:8.2f} {per:9.0f}")


if __name__ == "__main__":
    main()
