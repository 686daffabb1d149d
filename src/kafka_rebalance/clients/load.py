"""Partition loads at the group leader, for the clients' ``LoadAwarePartitionAssignor``.

Either the user's ``load_source`` (a callable: the partitions -> their loads), or the default
measurement: each partition's end-offset growth since the previous assignment this leader made
plus the group's lag on it (end offset - committed offset, or - log start when nothing is
committed). After a leader change the new leader has no previous end offsets, so its first
assignment uses the lag alone. Offsets are read through the consumer's own connection, started
when the member sends its JoinGroup (the leader's assignment runs on the client's network loop,
which cannot wait for its own requests), and used if they arrived within the time bound.
Whatever cannot be measured is logged in one line and assigned with equal loads.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("kafka_rebalance.load_aware")

Partition = tuple[str, int]
# The user's source: the partitions (as the client's TopicPartition) -> a load per partition,
# as a mapping keyed like the input or as a sequence in the input's order.
LoadSource = Callable[[Sequence[Any]], Mapping[Any, float] | Sequence[float]]
DEFAULT_MEASURE_TIMEOUT_S = 2.0
# At the leader: the cluster's partition numbers per topic -> a load per (topic, partition).
LoadsFor = Callable[[Mapping[str, Collection[int] | None]], Mapping[Partition, float] | None]


@dataclass(frozen=True)
class Offsets:
    """What the leader read: per partition, the end offset, the committed offset (None when the
    group committed nothing there) and the log start offset."""

    end: Mapping[Partition, int]
    committed: Mapping[Partition, int | None] | None  # None: not known (lag unknown)
    start: Mapping[Partition, int] = field(default_factory=dict)


class LeaderLoads:
    """The default measurement's memory: the end offsets of this leader's previous assignment."""

    def __init__(self) -> None:
        self.previous_end: dict[Partition, int] | None = None

    def loads(self, offsets: Offsets) -> dict[Partition, float] | None:
        """Growth since the previous assignment (0 the first time) plus lag, per partition. With
        committed offsets unknown, growth alone; the first time, nothing (logged)."""
        out: dict[Partition, float] = {}
        previous = self.previous_end
        if offsets.committed is None and previous is None:
            self.previous_end = dict(offsets.end)
            cannot_measure("the group's committed offsets are not known yet")
            return None
        for tp, end in offsets.end.items():
            if offsets.committed is None:
                out[tp] = float(max(0, end - previous[tp]) if previous is not None and tp in previous else 0)
                continue
            committed = offsets.committed.get(tp)
            consumed_to = committed if committed is not None and committed >= 0 else offsets.start.get(tp, 0)
            lag = max(0, end - consumed_to)
            growth = max(0, end - previous[tp]) if previous is not None and tp in previous else 0
            out[tp] = float(growth + lag)
        self.previous_end = dict(offsets.end)
        return out


def from_user_source(source: LoadSource, partitions: Sequence[Any], key: Callable[[Any], Partition]) -> dict[Partition, float] | None:
    """Call the user's source; None (logged in one line) when it fails or answers nonsense."""
    try:
        answer = source(list(partitions))
        if isinstance(answer, Mapping):
            loads = {key(tp): float(value) for tp, value in answer.items()}
        else:
            values = list(answer)
            if len(values) != len(partitions):
                raise ValueError(f"{len(values)} loads for {len(partitions)} partitions")
            loads = {key(tp): float(v) for tp, v in zip(partitions, values, strict=True)}
        bad = [tp for tp, v in loads.items() if not math.isfinite(v) or v < 0]
        if bad:
            raise ValueError(f"load of {bad[0][0]}-{bad[0][1]} is {loads[bad[0]]}, not a finite number >= 0")
    except Exception as exc:  # the user's code: anything it raises means "no loads"
        log.warning("load-aware: load_source failed (%s); assigning with equal loads", one_line(exc))
        return None
    return loads


def cannot_measure(reason: str) -> None:
    log.warning("load-aware: cannot measure partition loads (%s); assigning with equal loads", reason)


def one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text.splitlines()[0] if text else type(exc).__name__
