"""The load model: per-partition produce rates, each consumer's processing capacity, and the
backlog they leave, for a scenario with ``load`` (docs/scenario.md), whichever group protocol
the group speaks.

A fluid model on a fixed time step (``load.step_ms``), columnar over partitions (numpy arrays,
no object per record or per partition):

- rates: each ``load.rates`` entry spreads its topic's records/s over the partitions the topic
  has at that time (evenly, or ``zipf``: partition ``i`` weighs ``(i + 1) ** -zipf``), gives a
  ``hot`` partition its share on top (moving ``step`` partitions every ``every_ms``) and scales
  the whole by the ``daily_cycle``; a step's arrivals are its mid-step rate times its length;
- consumption: a partition is consumed only while a consumer owns it (the run's ownership
  intervals: assigned and its position known, not revoked, not lost) and that consumer is not
  paused or stalled; a consumer's ``capacity_records_per_s`` is shared among the partitions it
  consumes in proportion to what each has waiting (backlog plus the step's arrivals), so a
  consumer below capacity consumes everything and one above it falls behind on all of them;
- backlog = produced - consumed, per partition; a consumer's lag is the backlog of what it owns.

Record delay (``p99_delay_ms``): with first in, first out per partition, the record that
arrives when a partition's cumulative arrivals reach ``q`` is consumed when its cumulative
consumption reaches ``q``; the delay of a step's arrivals is taken at their midpoint, found
by one ``searchsorted`` over the cumulative tables (a slice of partitions at a time),
interpolated within the step, and weighted by the step's arrivals. Those two tables are the
model's memory: 16 bytes per step and partition (10,000 partitions over 300 steps: about 50 MB,
the whole model 3 s); a longer ``step_ms`` shrinks them. A record not consumed by the end of the
run counts the time until the end (so the figure is a lower bound when the group never catches
up).

Drain time: after each rebalance, the time until the group's total lag is back on the
trajectory it was on before the rebalance began (its level then, plus the growth per second of
the ``DRAIN_TREND_MS`` before, if it was growing), within ``DRAIN_TOLERANCE`` records.

The load-aware assignor gets its input here too: ``measured_loads`` is the produce rate of each
partition over a window (since the leader's previous assignment), as the real
``LoadAwarePartitionAssignor`` measures end-offset growth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from kafka_rebalance.protocol.classic.consumer import partition_sort_key
from kafka_rebalance.sim.result import LoadMetrics, Ownership, RebalanceRecord
from kafka_rebalance.sim.scenario import LoadRate, Scenario

Floats = NDArray[np.float64]
DRAIN_TREND_MS = 10_000  # how far back the pre-rebalance growth of the lag is measured
DRAIN_TOLERANCE = 1.0  # records: "back on the trajectory" allows this much above it
DELAY_CELLS = 1 << 21  # step-partition cells of the record-delay search at a time


@lru_cache(maxsize=64)
def _weights(count: int, zipf: float | None) -> Floats:
    """The share of each of ``count`` partitions (sums to 1; read-only, it is shared)."""
    if zipf is None:
        shares = np.full(count, 1.0 / count)
    else:
        raw = np.arange(1, count + 1, dtype=np.float64) ** -zipf
        shares = np.asarray(raw / raw.sum(), dtype=np.float64)
    shares.setflags(write=False)
    return shares


def _count_at(epochs: Sequence[tuple[int, int]], t: float) -> int:
    """The topic's partition count at ``t`` (0 before it exists)."""
    count = 0
    for from_ms, partitions in epochs:
        if from_ms > t:
            break
        count = partitions
    return count


class LoadModel:
    """Produce rates over a run's partitions (every partition the run ever has, in partition
    order) and the backlog a run's ownership leaves (``metrics``)."""

    def __init__(self, scenario: Scenario, topic_epochs: Mapping[str, list[tuple[int, int]]]):
        spec = scenario.load
        assert spec is not None
        self.spec = spec
        self.step_ms = spec.step_ms
        self.epochs = dict(topic_epochs)
        names = [f"{t}-{p}" for t, epochs in self.epochs.items() for p in range(max(n for _, n in epochs))]
        self.partitions: list[str] = sorted(names, key=partition_sort_key)
        self.index = {name: i for i, name in enumerate(self.partitions)}
        # each topic's partitions as global indices, in partition order
        self.topic_index = {t: np.asarray([self.index[f"{t}-{p}"] for p in range(max(n for _, n in epochs))],
                                          dtype=np.int64) for t, epochs in self.epochs.items()}
        self.members = tuple(c.id for c in scenario.consumers)
        self.capacity = np.asarray([c.capacity_records_per_s or spec.capacity_records_per_s
                                    for c in scenario.consumers], dtype=np.float64)

    # ------------------------------------------------------------------ rates

    def rates_at(self, t: float) -> Floats:
        """Records/s arriving on each partition at time ``t``."""
        rates = np.zeros(len(self.partitions), dtype=np.float64)
        for entry in self.spec.rates:
            count = _count_at(self.epochs.get(entry.topic, ()), t)
            if count == 0:
                continue
            rates[self.topic_index[entry.topic][:count]] += self._topic_rates(entry, count, t)
        return rates

    @staticmethod
    def _topic_rates(entry: LoadRate, count: int, t: float) -> Floats:
        shares = _weights(count, entry.zipf)
        hot = entry.hot
        if hot is not None:
            moves = int(t // hot.every_ms) if hot.every_ms is not None else 0
            shares = shares * (1 - hot.share)
            shares[(hot.partition + moves * hot.step) % count] += hot.share
        rate = entry.records_per_s
        cycle = entry.daily_cycle
        if cycle is not None:
            rate *= 1 + cycle.amplitude * math.cos(2 * math.pi * (t - cycle.peak_ms) / cycle.period_ms)
        return shares * rate

    def produced(self, start_ms: int, end_ms: int) -> Floats:
        """Records produced on each partition in ``[start_ms, end_ms)`` (mid-step rates)."""
        total = np.zeros(len(self.partitions), dtype=np.float64)
        t = start_ms
        while t < end_ms:
            until = min(end_ms, t + self.step_ms)
            total += self.rates_at((t + until) / 2) * ((until - t) / 1000)
            t = until
        return total

    def measured_loads(self, since_ms: int, now_ms: int, topics: Mapping[str, int]) -> dict[str, tuple[float, ...]]:
        """Each partition's produce rate (records/s) over ``[since_ms, now_ms)`` (at ``now_ms``
        itself when the window is empty), per topic of ``topics`` (name -> partition count)."""
        rates = (self.produced(since_ms, now_ms) / ((now_ms - since_ms) / 1000) if now_ms > since_ms
                 else self.rates_at(now_ms))
        return {t: tuple(float(r) for r in rates[self.topic_index[t][:n]])
                for t, n in topics.items() if t in self.topic_index and n <= len(self.topic_index[t])}

    # ------------------------------------------------------------------ the backlog

    def metrics(self, ownership: Ownership, interruptions: Sequence[tuple[str, int, int]],
                rebalances: Sequence[RebalanceRecord], end_ms: int) -> LoadMetrics:
        """Lag, drain times and record delay of a run: its ``ownership`` intervals, the
        ``(consumer, start_ms, end_ms)`` spans its consumers were paused or stalled, its
        ``rebalances``, its end."""
        step = self.step_ms
        steps = max(1, math.ceil(end_ms / step))
        n_partitions, n_members = len(self.partitions), len(self.members)
        member_of = {m: i for i, m in enumerate(self.members)}
        changes = self._ownership_changes(ownership, member_of, step)
        stopped = np.zeros((steps, n_members), dtype=bool)
        for name, start, end in interruptions:
            m = member_of.get(name)
            if m is not None:  # a step is stopped when its midpoint is
                stopped[max(0, round(start / step)):max(0, round(end / step)), m] = True
        per_sample = max(1, self.spec.sample_ms // step)
        capacity = self.capacity * (step / 1000)
        owner = np.full(n_partitions, -1, dtype=np.int64)
        backlog = np.zeros(n_partitions, dtype=np.float64)
        arrived = np.zeros((steps + 1, n_partitions), dtype=np.float64)  # cumulative, at each step's start
        consumed = np.zeros((steps + 1, n_partitions), dtype=np.float64)
        total_lag = np.zeros(steps, dtype=np.float64)
        max_member_lag = np.zeros(steps, dtype=np.float64)
        argmax_member = np.full(steps, -1, dtype=np.int64)
        sample_times: list[int] = []
        samples: list[Floats] = []
        unowned: list[float] = []
        cursor = 0
        change_step, change_partition, change_member = changes
        for k in range(steps):
            while cursor < len(change_step) and change_step[cursor] <= k:
                owner[change_partition[cursor]] = change_member[cursor]
                cursor += 1
            arrivals = self.rates_at(k * step + step / 2) * (step / 1000)
            waiting = backlog + arrivals
            owned = owner >= 0
            consuming = owned.copy()
            consuming[owned] = ~stopped[k, owner[owned]]
            whose = owner[consuming]
            demand = np.bincount(whose, weights=waiting[consuming], minlength=n_members)
            with np.errstate(divide="ignore", invalid="ignore"):
                fraction = np.where(demand > capacity, capacity / demand, 1.0)
            taken = np.zeros(n_partitions, dtype=np.float64)
            taken[consuming] = waiting[consuming] * fraction[whose]
            backlog = waiting - taken
            arrived[k + 1] = arrived[k] + arrivals
            consumed[k + 1] = consumed[k] + taken
            lag = np.asarray(np.bincount(owner[owned], weights=backlog[owned], minlength=n_members), dtype=np.float64)
            total_lag[k] = float(backlog.sum())
            if n_members:
                argmax_member[k] = int(lag.argmax())
                max_member_lag[k] = float(lag[argmax_member[k]])
            if (k + 1) % per_sample == 0 or k == steps - 1:
                sample_times.append(min(end_ms, (k + 1) * step))
                samples.append(lag)
                unowned.append(float(backlog[~owned].sum()))
        worst = int(max_member_lag.argmax())
        # Whole records; the two sums are added in different orders, so the consumed one may come
        # out a rounding error above the produced one (which it never is).
        produced = float(arrived[-1].sum())
        consumed_total = min(float(consumed[-1].sum()), produced)
        return LoadMetrics(
            members=self.members, time_ms=np.asarray(sample_times, dtype=np.int64),
            member_lag=np.floor(np.vstack(samples)).astype(np.int64) if samples
            else np.zeros((0, n_members), dtype=np.int64),
            unowned_lag=np.floor(np.asarray(unowned)).astype(np.int64),
            max_lag=int(max_member_lag[worst]),
            max_lag_member=self.members[argmax_member[worst]] if argmax_member[worst] >= 0 else None,
            max_lag_at_ms=min(end_ms, (worst + 1) * step),
            max_total_lag=int(total_lag.max()),
            drain_ms=tuple(drain_times(total_lag, step, rebalances)),
            p99_delay_ms=p99_delay_ms(arrived, consumed, step, end_ms),
            records_produced=math.floor(produced + 1e-6), records_consumed=math.floor(consumed_total + 1e-6))

    def _ownership_changes(self, ownership: Ownership, member_of: Mapping[str, int],
                           step: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """Ownership intervals -> (step, partition, member or -1) in the order to apply them:
        by the step whose start is nearest, ends before starts; an interval shorter than that
        resolution (it starts and ends at the same step) is left out."""
        index = self.index
        partition = np.asarray([index.get(str(p), -1) for p in ownership.partition.tolist()], dtype=np.int64)
        member = np.asarray([member_of.get(str(m), -1) for m in ownership.member.tolist()], dtype=np.int64)
        start = np.rint(ownership.start_ms / step).astype(np.int64)
        end = np.rint(ownership.end_ms / step).astype(np.int64)
        kept = (partition >= 0) & (member >= 0) & (end > start)
        partition, member, start, end = partition[kept], member[kept], start[kept], end[kept]
        when = np.concatenate([end, start])
        kind = np.concatenate([np.zeros(len(end), dtype=np.int64), np.ones(len(start), dtype=np.int64)])
        order = np.lexsort((kind, when))
        whom = np.concatenate([np.full(len(end), -1, dtype=np.int64), member])
        return when[order], np.concatenate([partition, partition])[order], whom[order]


def drain_times(total_lag: Floats, step: int, rebalances: Sequence[RebalanceRecord]) -> list[int | None]:
    """For each rebalance: ms from its end until ``total_lag`` (the group's lag after each step)
    is back on its pre-rebalance trajectory (None: never within the run, or it did not end)."""
    out: list[int | None] = []
    steps = len(total_lag)
    trend_steps = max(1, DRAIN_TREND_MS // step)
    for rebalance in rebalances:
        if rebalance.end_ms is None:
            out.append(None)
            continue
        begin = min(steps, rebalance.start_ms // step)  # the steps before ``begin`` ended before it began
        level = float(total_lag[begin - 1]) if begin > 0 else 0.0
        back = max(0, begin - 1 - trend_steps)
        growth = max(0.0, (level - float(total_lag[back])) / max(1, begin - 1 - back)) if begin > 1 else 0.0
        first = min(steps, math.ceil(rebalance.end_ms / step))
        k = np.arange(first, steps)
        trajectory = level + growth * (k - (begin - 1)) + DRAIN_TOLERANCE
        back_on = np.flatnonzero(total_lag[first:] <= trajectory)
        if back_on.size == 0:
            out.append(None)
        else:
            out.append(max(0, int((first + int(back_on[0]) + 1) * step - rebalance.end_ms)))
    return out


def p99_delay_ms(arrived: Floats, consumed: Floats, step: int, end_ms: int, quantile: float = 0.99) -> int:
    """The ``quantile`` of record delay, first in first out per partition, from the cumulative
    arrivals and consumption at each step boundary (``(steps + 1) x partitions``). Partitions
    are taken a slice at a time (about ``DELAY_CELLS`` step-partition cells), so besides the
    two tables only each cell's delay and weight (float32) are held at once."""
    steps, partitions = arrived.shape[0] - 1, arrived.shape[1]
    if steps == 0 or partitions == 0 or float(arrived[-1].sum()) <= 0:
        return 0
    width = max(1, DELAY_CELLS // (steps + 1))
    delays, weights = zip(*(_record_delays(arrived[:, lo:lo + width], consumed[:, lo:lo + width], step, end_ms)
                            for lo in range(0, partitions, width)), strict=True)
    delay, weight = np.concatenate(delays), np.concatenate(weights)
    order = np.argsort(delay, kind="stable")
    cumulative = np.cumsum(weight[order], dtype=np.float64)
    at = int(np.searchsorted(cumulative, quantile * cumulative[-1], side="left"))
    return int(round(float(delay[order][min(at, len(order) - 1)])))


def _record_delays(arrived: Floats, consumed: Floats, step: int,
                   end_ms: int) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """For each step and partition of a slice: the delay of the step's arrivals (taken at
    their midpoint record) and how many records arrived then."""
    steps, partitions = arrived.shape[0] - 1, arrived.shape[1]
    # One monotone array over the slice: partition p's cumulative consumption shifted past every
    # value of the partitions before it, so one searchsorted finds every departure.
    shift = float(arrived[-1].max()) + 1.0
    offsets = np.arange(partitions, dtype=np.float64) * shift
    flat = (consumed + offsets).T.reshape(-1)  # partition-major: (steps + 1) values per partition
    target = ((arrived[:-1] + arrived[1:]) / 2 + offsets).T.reshape(-1)  # each step's midpoint record
    found = np.searchsorted(flat, target, side="left")
    column = np.repeat(np.arange(partitions), steps)
    j = found - column * (steps + 1)  # the boundary at which consumption reaches the record
    served = (j >= 1) & (j <= steps)
    jj = np.clip(j, 1, steps)
    lo = consumed[jj - 1, column] + offsets[column]
    hi = consumed[jj, column] + offsets[column]
    with np.errstate(divide="ignore", invalid="ignore"):
        within = np.where(hi > lo, (target - lo) / (hi - lo), 1.0)
    departs = np.where(served, (jj - 1 + within) * step, float(end_ms))
    arrives = (np.tile(np.arange(steps), partitions) + 0.5) * step
    delay = np.maximum(0.0, departs - arrives).astype(np.float32)
    return delay, np.diff(arrived, axis=0).T.reshape(-1).astype(np.float32)
