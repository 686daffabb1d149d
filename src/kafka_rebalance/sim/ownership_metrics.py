"""The metrics of shared/spec/scenario.md computed from ownership intervals and rebalance
windows, one function for every group protocol (classic and KIP-848 consumer groups are
measured the same way)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

Ownership = tuple[str, str, int, int]  # (partition, member name, start_ms, end_ms)


def partition_topic(partition: str) -> str:
    return partition.rsplit("-", 1)[0]


def ownership_metrics(ownership: Sequence[Ownership], rebalances: list[dict[str, Any]],
                      partition_created: Mapping[str, int], topic_wanted: Mapping[str, int], end_ms: int,
                      records_twice: int, records_lost: int) -> dict[str, int]:
    """``rebalances`` (dicts with start_ms / end_ms) gain ``stop_the_world_partition_ms``."""
    windows = sorted((r["start_ms"], r["end_ms"] if r["end_ms"] is not None else end_ms, index)
                     for index, r in enumerate(rebalances))
    window_starts = [w[0] for w in windows]
    per_rebalance = [0] * len(rebalances)

    def rebalance_at(moment: int) -> int | None:
        i = bisect_right(window_starts, moment) - 1
        return windows[i][2] if i >= 0 and windows[i][0] <= moment <= windows[i][1] else None

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
    for rebalance, pause in zip(rebalances, per_rebalance, strict=True):
        rebalance["stop_the_world_partition_ms"] = pause
    return {
        "rebalances": len(rebalances),
        "partitions_moved": moved,
        "stop_the_world_partition_ms": stop_the_world,
        "max_partition_unowned_ms": max_unowned,
        "records_processed_twice": records_twice,
        "records_lost": records_lost,
    }
