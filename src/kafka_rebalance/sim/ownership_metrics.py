"""The metrics of docs/scenario.md computed from ownership intervals and rebalance
windows, one function for every group protocol (classic and KIP-848 consumer groups are
measured the same way)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kafka_rebalance.sim.scenario_events import PartitionsAdded, TopicCreated

if TYPE_CHECKING:
    from kafka_rebalance.sim.result import SimulationResult
    from kafka_rebalance.sim.scenario import Scenario

Ownership = tuple[str, str, int, int]  # (partition, member name, start_ms, end_ms)


def partition_topic(partition: str) -> str:
    return partition.rsplit("-", 1)[0]


def ownership_metrics(ownership: Sequence[Ownership], windows: Sequence[tuple[int, int | None]],
                      partition_created: Mapping[str, int], topic_wanted: Mapping[str, int], end_ms: int,
                      records_twice: int, records_lost: int) -> tuple[dict[str, int], list[int]]:
    """The six metrics, and the stop-the-world partition-ms of each rebalance window
    (``(start_ms, end_ms or None)``, in the order given). ``ownership`` is sorted by partition,
    then start."""
    spans = sorted((start, end if end is not None else end_ms, index) for index, (start, end) in enumerate(windows))
    window_starts = [w[0] for w in spans]
    per_rebalance = [0] * len(windows)

    def rebalance_at(moment: int) -> int | None:
        i = bisect_right(window_starts, moment) - 1
        return spans[i][2] if i >= 0 and spans[i][0] <= moment <= spans[i][1] else None

    moved = 0
    stop_the_world = 0
    max_unowned = 0
    by_partition: dict[str, list[tuple[str, int, int]]] = {}
    for partition, name, start, end in ownership:
        by_partition.setdefault(partition, []).append((name, start, end))
    for partition, created in partition_created.items():
        topic = partition_topic(partition)
        if topic not in topic_wanted:
            continue
        intervals = by_partition.get(partition, [])
        cursor = max(topic_wanted[topic], created)
        for i, (name, start, end) in enumerate(intervals):
            if start > cursor:
                max_unowned = max(max_unowned, start - cursor)
            cursor = max(cursor, end)
            if i:
                previous_name, _, previous_end = intervals[i - 1]
                if previous_name != name:
                    moved += 1
                elif start > previous_end and (during := rebalance_at(previous_end)) is not None:
                    stop_the_world += start - previous_end
                    per_rebalance[during] += start - previous_end
        if end_ms > cursor:
            max_unowned = max(max_unowned, end_ms - cursor)
    metrics = {
        "rebalances": len(windows),
        "partitions_moved": moved,
        "stop_the_world_partition_ms": stop_the_world,
        "max_partition_unowned_ms": max_unowned,
        "records_processed_twice": records_twice,
        "records_lost": records_lost,
    }
    return metrics, per_rebalance


def topic_epochs(scenario: Scenario) -> dict[str, list[tuple[int, int]]]:
    """Per topic, ``(from_ms, partition_count)`` ascending: creation and partition increases."""
    epochs = {t: [(0, n)] for t, n in scenario.topics.items()}
    for event in sorted(scenario.timeline, key=lambda e: e.at_ms):
        match event:
            case TopicCreated(at_ms=at_ms, topic=topic, partitions=partitions):
                epochs[topic] = [(at_ms, partitions)]
            case PartitionsAdded(at_ms=at_ms, topic=topic, count=count):
                if count > epochs[topic][-1][1]:
                    epochs[topic].append((at_ms, count))
            case _:
                pass  # the other events leave the topics as they are
    return epochs


def _union_ms(intervals: list[tuple[int, int]]) -> int:
    total, cursor = 0, None
    for start, end in sorted(intervals):
        if cursor is None or start > cursor:
            total += end - start
            cursor = end
        elif end > cursor:
            total += end - cursor
            cursor = end
    return total


def _merged(intervals: list[tuple[int, int]], slack_ms: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1] + slack_ms:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def partitions_from(scenario: Scenario) -> dict[str, int]:
    """Every partition of a scenario and the time it exists from (0, or its creation event)."""
    created = {f"{t}-{p}": 0 for t, n in scenario.topics.items() for p in range(n)}
    counts = dict(scenario.topics)
    for event in sorted(scenario.timeline, key=lambda e: e.at_ms):
        match event:
            case TopicCreated(at_ms=at_ms, topic=topic, partitions=partitions):
                counts[topic] = partitions
                for p in range(partitions):
                    created.setdefault(f"{topic}-{p}", at_ms)
            case PartitionsAdded(at_ms=at_ms, topic=topic, count=count):
                for p in range(counts.get(topic, 0), count):
                    created.setdefault(f"{topic}-{p}", at_ms)
                counts[topic] = max(counts.get(topic, 0), count)
            case _:
                pass  # the other events leave the topics as they are
    return created


def comparison_metrics(partitions_from: Mapping[str, int], result: SimulationResult, end_ms: int) -> dict[str, int]:
    """The lab's comparison figures, the same for every protocol, from a simulation result:

    - ``unowned_partition_ms``: over every partition (from ``partitions_from[p]``, its creation or
      the first moment anyone consumed the group's topics), the time nobody consumed it;
    - ``member_pause_p50_ms`` / ``member_pause_max_ms``: per member, the longest time it owned
      nothing between two periods of owning something (a stop-the-world pause, or a restart);
      the median and the maximum over members;
    - ``unstable_ms`` / ``longest_unstable_ms``: time inside rebalances (windows closer than
      100 ms merged: a cooperative follow-up is part of the same disruption).
    """
    o = result.ownership
    ownership = list(zip(o.partition.tolist(), o.member.tolist(), o.start_ms.tolist(), o.end_ms.tolist(), strict=True))
    starts = [start for _, _, start, _ in ownership]
    first = min(starts) if starts else end_ms
    by_partition: dict[str, list[tuple[int, int]]] = {}
    by_member: dict[str, list[tuple[int, int]]] = {}
    for partition, member, start, end in ownership:
        by_partition.setdefault(partition, []).append((start, end))
        by_member.setdefault(member, []).append((start, end))
    unowned = 0
    for partition, created in partitions_from.items():
        since = max(created, first)
        if end_ms > since:
            owned = _union_ms([(max(s, since), e) for s, e in by_partition.get(partition, []) if e > since])
            unowned += end_ms - since - owned
    pauses = []
    for intervals in by_member.values():
        runs = _merged(intervals, 0)
        pauses.append(max((b[0] - a[1] for a, b in zip(runs, runs[1:], strict=False)), default=0))
    pauses.sort()
    windows = [(r.start_ms, r.end_ms if r.end_ms is not None else end_ms) for r in result.rebalances]
    merged = _merged(windows, 100)
    return {
        "unowned_partition_ms": unowned,
        "member_pause_p50_ms": pauses[len(pauses) // 2] if pauses else 0,
        "member_pause_max_ms": pauses[-1] if pauses else 0,
        "unstable_ms": sum(e - s for s, e in merged),
        "longest_unstable_ms": max((e - s for s, e in merged), default=0),
    }
