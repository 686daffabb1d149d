"""What a simulation run returns: ``SimulationResult``, typed, with rebalances derived once.

The CLI (``simulate --json``), the lab and the report read it; ``to_json()`` is the result of
docs/scenario.md plus ``ownership``. The tables an invariant checker needs are columnar
(numpy arrays, one row per interval / batch / partition), not objects per record:

- ``ownership``: a member owned (and was consuming) a partition from ``start_ms`` to ``end_ms``,
  acquired in ``generation``;
- ``consumption``: a member consumed ``[from_offset, to_offset)`` of a partition under
  ``generation`` between ``start_ms`` and ``end_ms``;
- ``commits``: every OffsetCommit a coordinator answered, per partition, with its error
  (``ErrorCode.NONE`` when accepted) and the process (incarnation) that sent it;
- ``produced``: records produced per partition by the end of the run;
- ``held``: each consumer's own view of what it owns (see ``Held``), which can overlap another
  consumer's when the group has moved on without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol
from kafka_rebalance.protocol.logrecords import LogRecord
from kafka_rebalance.sim.scenario import Scenario

Ints = NDArray[np.int64]
Strings = NDArray[np.str_]


def ints(values: list[int]) -> Ints:
    return np.asarray(values, dtype=np.int64)


def strings(values: list[str]) -> Strings:
    return np.asarray(values, dtype=np.str_) if values else np.zeros(0, dtype="<U1")


@dataclass(frozen=True, slots=True)
class MemberPartitions:
    member: str
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RebalanceRecord:
    """One rebalance as the simulator recorded it: from the moment the group began to rebalance
    (classic: PreparingRebalance; consumer group: a group epoch bump) until it is Stable (or
    Empty) again. ``group_protocol`` is the protocol the group spoke then (a migrating group has
    both kinds); ``rebalance_protocol`` is EAGER or COOPERATIVE for a classic group that
    completed the rebalance, None otherwise (a consumer group reconciles incrementally)."""

    generation: int | None  # classic: the generation; consumer group: the group epoch
    start_ms: int
    end_ms: int | None  # None: still running at the end
    reason: str
    strategy: str | None  # the classic strategy the vote chose, or the consumer group's server assignor
    group_protocol: GroupProtocol
    rebalance_protocol: RebalanceProtocol | None
    leader: str | None
    members: tuple[str, ...]
    assignment: tuple[MemberPartitions, ...]
    revoked: tuple[MemberPartitions, ...]
    added: tuple[MemberPartitions, ...]
    stop_the_world_partition_ms: int = 0

    @property
    def protocol_label(self) -> str | None:
        """The result JSON's ``protocol``: EAGER / COOPERATIVE for a classic rebalance, CONSUMER
        for a consumer group's (docs/scenario.md)."""
        if self.group_protocol is GroupProtocol.CONSUMER:
            return CONSUMER_LABEL
        return None if self.rebalance_protocol is None else self.rebalance_protocol.value

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation, "start_ms": self.start_ms, "end_ms": self.end_ms, "reason": self.reason,
            "strategy": self.strategy, "protocol": self.protocol_label, "leader": self.leader,
            "members": list(self.members),
            "assignment": {m.member: list(m.partitions) for m in self.assignment},
            "revoked": {m.member: list(m.partitions) for m in self.revoked},
            "added": {m.member: list(m.partitions) for m in self.added},
            "stop_the_world_partition_ms": self.stop_the_world_partition_ms,
        }


CONSUMER_LABEL = "CONSUMER"  # a consumer group's rebalance in the result JSON's ``protocol``


@dataclass(frozen=True, slots=True)
class Ownership:
    partition: Strings
    member: Strings
    generation: Ints
    start_ms: Ints
    end_ms: Ints

    def __len__(self) -> int:
        return len(self.partition)


NOT_FENCED = -1


@dataclass(frozen=True, slots=True)
class Held:
    """What each consumer process believed it owned: ``member`` (its ``incarnation``: a restart is a
    new process) held a partition from its onPartitionsAssigned, or from the SyncGroup assignment
    it adopted, until its onPartitionsRevoked / onPartitionsLost or the end of its process.
    ``generation`` is the consumer's generation when the hold began.

    ``fenced_ms``: from then on the group no longer counted the consumer as an owner (the
    coordinator removed its member id, or completed a generation's join phase without it: a
    static member kept in the group without rejoining), while the consumer, not yet told, still
    believed it owned the partition; ``NOT_FENCED`` (-1) if that never happened during the hold."""

    partition: Strings
    member: Strings
    incarnation: Ints
    generation: Ints
    start_ms: Ints
    end_ms: Ints
    fenced_ms: Ints

    def __len__(self) -> int:
        return len(self.partition)


@dataclass(frozen=True, slots=True)
class Consumption:
    partition: Strings
    member: Strings
    generation: Ints
    from_offset: Ints
    to_offset: Ints
    start_ms: Ints
    end_ms: Ints

    def __len__(self) -> int:
        return len(self.partition)


@dataclass(frozen=True, slots=True)
class Commits:
    time_ms: Ints
    partition: Strings
    offset: Ints
    member: Strings
    generation: Ints
    error_code: Ints  # ErrorCode values; 0 = accepted
    incarnation: Ints  # which process of the consumer sent it (see Held; 0: a connection no process owns)

    def __len__(self) -> int:
        return len(self.partition)


@dataclass(frozen=True, slots=True)
class Produced:
    partition: Strings
    records: Ints


@dataclass(frozen=True, slots=True)
class Metrics:
    rebalances: int
    partitions_moved: int
    stop_the_world_partition_ms: int
    max_partition_unowned_ms: int
    records_processed_twice: int
    records_lost: int

    def to_json(self) -> dict[str, int]:
        return {
            "rebalances": self.rebalances, "partitions_moved": self.partitions_moved,
            "stop_the_world_partition_ms": self.stop_the_world_partition_ms,
            "max_partition_unowned_ms": self.max_partition_unowned_ms,
            "records_processed_twice": self.records_processed_twice, "records_lost": self.records_lost,
        }


@dataclass(frozen=True, slots=True)
class LoadMetrics:
    """What the load model (sim/load.py) measured of a run whose scenario has ``load``.

    - ``member_lag``: each consumer's lag (records produced but not yet consumed on the
      partitions it owns) at each of ``time_ms`` (one row per sample, one column per consumer of
      ``members``, scenario order); ``unowned_lag``: the lag of partitions nobody owns then;
    - ``max_lag``: the highest lag of any consumer at any step of the model (``max_lag_member``
      at ``max_lag_at_ms``); ``max_total_lag``: the group's highest total;
    - ``drain_ms``: for each rebalance of the result, how long after it ended the group's total
      lag took to get back to the trajectory it was on before it began (None: not by the end of
      the run, or the rebalance did not end);
    - ``p99_delay_ms``: the 99th percentile, over records, of the time from being produced to
      being consumed (first in, first out per partition; a record not consumed by the end counts
      the time until the end);
    - ``records_produced`` / ``records_consumed``: over the run, rounded down."""

    members: tuple[str, ...]
    time_ms: Ints
    member_lag: NDArray[np.int64]
    unowned_lag: Ints
    max_lag: int
    max_lag_member: str | None
    max_lag_at_ms: int
    max_total_lag: int
    drain_ms: tuple[int | None, ...]
    p99_delay_ms: int
    records_produced: int
    records_consumed: int

    @property
    def max_lag_series(self) -> Ints:
        """At each sample, the highest lag of any consumer."""
        if self.member_lag.size == 0:
            return np.zeros(len(self.time_ms), dtype=np.int64)
        return np.asarray(self.member_lag.max(axis=1), dtype=np.int64)

    def to_json(self) -> dict[str, Any]:
        return {
            "max_lag": self.max_lag, "max_lag_member": self.max_lag_member, "max_lag_at_ms": self.max_lag_at_ms,
            "max_total_lag": self.max_total_lag, "drain_ms": list(self.drain_ms),
            "p99_delay_ms": self.p99_delay_ms, "records_produced": self.records_produced,
            "records_consumed": self.records_consumed,
            "lag": {"time_ms": self.time_ms.tolist(),
                    "members": {m: self.member_lag[:, i].tolist() for i, m in enumerate(self.members)},
                    "unowned": self.unowned_lag.tolist()},
        }


@dataclass(frozen=True, slots=True)
class LoggedRecord:
    record: LogRecord
    broker_id: int
    partition: int  # __consumer_offsets partition of the coordinator that logged it


@dataclass(frozen=True, slots=True)
class SimulationResult:
    scenario: Scenario
    coordinator_partition: int
    rebalances: tuple[RebalanceRecord, ...]
    final_assignment: tuple[MemberPartitions, ...]  # every consumer of the scenario, in scenario order
    metrics: Metrics
    ownership: Ownership
    consumption: Consumption
    commits: Commits
    produced: Produced
    final_group_state: str  # as Kafka names it ("Stable")
    final_members: tuple[str, ...]  # consumer names, in join order
    offset_regressions: int  # accepted commits lower than the partition's committed offset
    ownership_conflicts: int
    log_records: tuple[LoggedRecord, ...] = field(repr=False)
    # each consumer's own view of its ownership
    held: Held = field(repr=False)
    # consumers stopped for good by a fatal error (classic: FENCED_INSTANCE_ID, a Java consumer's
    # poll throws FencedInstanceIdException; consumer group: any fatal heartbeat error, e.g.
    # UNRELEASED_INSTANCE_ID), in scenario order
    fenced: tuple[str, ...] = ()
    # the load model's lag, drain times and record delay (None: the scenario has no ``load``)
    load: LoadMetrics | None = field(default=None, repr=False)
    # when each of the group's lives began: a migration that finds the group empty replaces it by
    # one of the other protocol, whose generations start again (the first life begins at 0)
    life_starts_ms: tuple[int, ...] = (0,)

    @property
    def result(self) -> dict[str, Any]:
        """``to_json()``, under the name callers of the untyped simulator used."""
        return self.to_json()

    def to_json(self) -> dict[str, Any]:
        """The result of docs/scenario.md, plus ``ownership``."""
        o = self.ownership
        out = {
            "scenario": self.scenario.name,
            "coordinator_partition": self.coordinator_partition,
            "rebalances": [r.to_json() for r in self.rebalances],
            "final_assignment": {m.member: list(m.partitions) for m in self.final_assignment},
            "metrics": self.metrics.to_json(),
            "ownership": [{"partition": str(p), "member": str(m), "start_ms": int(s), "end_ms": int(e)}
                          for p, m, s, e in zip(o.partition, o.member, o.start_ms, o.end_ms, strict=True)],
        }
        if self.load is not None:
            out["load"] = self.load.to_json()
        return out
