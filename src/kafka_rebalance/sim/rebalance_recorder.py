"""The one record of a run's rebalances (``RebalanceRecorder``), whichever coordinator logs them:
the driver (``sim.driver``) holds one, and each group side tells it what its coordinator logs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol
from kafka_rebalance.protocol.classic.consumer import sorted_partitions
from kafka_rebalance.sim.result import MemberPartitions, RebalanceRecord


@dataclass(slots=True)
class OpenRebalance:
    """A rebalance under way: what each running consumer held when it began, and what the
    group told of it since (its generation or epoch, members, leader, strategy)."""

    start_ms: int
    reason: str
    held: dict[str, frozenset[str]]
    generation: int | None = None
    member_ids: tuple[str, ...] = ()  # (classic) the members of the generation, as the coordinator named them
    leader_id: str | None = None
    strategy: str | None = None


class RebalanceRecorder:
    """The one record of a run's rebalances, whichever coordinator logs them: ``begin`` when
    the group starts to rebalance (a later begin inside an open one extends it), ``formed`` as
    the group learns its generation, members and strategy, ``complete`` when it is Stable again
    with an assignment (or ``emptied``), and at the end of the run ``records`` (an open one
    stays open: ``end_ms`` None)."""

    __slots__ = ("_done", "open")

    def __init__(self) -> None:
        self._done: list[RebalanceRecord] = []
        self.open: OpenRebalance | None = None

    def begin(self, now: int, reason: str, held: Callable[[], dict[str, frozenset[str]]]) -> None:
        if self.open is None:
            self.open = OpenRebalance(now, reason, held())

    def formed(self, generation: int, strategy: str | None, member_ids: tuple[str, ...] | None = None,
               leader_id: str | None = None) -> None:
        current = self.open
        if current is None:
            return
        current.generation = generation
        if member_ids is not None:
            current.member_ids = member_ids
            current.leader_id = leader_id
        # A plain string (a classic strategy, or a ServerAssignorName's value): results leave the process
        # (Spark rows, JSON) as data.
        current.strategy = None if strategy is None else str(strategy)

    def complete(self, now: int, generation: int, group_protocol: GroupProtocol,
                 rebalance_protocol: RebalanceProtocol | None, members: Sequence[str], leader: str | None,
                 assignment: Mapping[str, tuple[str, ...]]) -> None:
        """The group is Stable with ``assignment`` (each member's partitions, in partition order;
        members by consumer name). Under EAGER every member revoked all it held and is given all
        it is assigned; otherwise (COOPERATIVE, a consumer group's reconciliation) only the
        difference moves."""
        current = self.open
        if current is None:
            return
        self.open = None
        held = current.held
        revoked, added = [], []
        for name in members:
            before = held.get(name, frozenset())
            now_assigned = assignment.get(name, ())
            if rebalance_protocol is RebalanceProtocol.EAGER:
                revoked.append(MemberPartitions(name, sorted_partitions(before)))
                added.append(MemberPartitions(name, now_assigned))
            else:
                kept = set(now_assigned)
                revoked.append(MemberPartitions(name, sorted_partitions(before - kept)))
                added.append(MemberPartitions(name, tuple(p for p in now_assigned if p not in before)))
        self._done.append(RebalanceRecord(
            generation, current.start_ms, now, current.reason, current.strategy, group_protocol, rebalance_protocol,
            leader, tuple(members), tuple(MemberPartitions(name, assignment.get(name, ())) for name in members),
            tuple(revoked), tuple(added)))

    def emptied(self, now: int, generation: int, group_protocol: GroupProtocol) -> None:
        """The rebalance ended with nobody left in the group."""
        current = self.open
        if current is None:
            return
        self.open = None
        self._done.append(RebalanceRecord(generation, current.start_ms, now, current.reason, None, group_protocol, None,
                                          None, (), (), (), ()))

    def records(self, group_protocol: GroupProtocol) -> list[RebalanceRecord]:
        """Every rebalance of the run; one still open is left open (``group_protocol``: what the
        group speaks at the end)."""
        done = list(self._done)
        current = self.open
        if current is not None:
            done.append(RebalanceRecord(current.generation, current.start_ms, None, current.reason, current.strategy,
                                        group_protocol, None, None, (), (), (), ()))
        return done
