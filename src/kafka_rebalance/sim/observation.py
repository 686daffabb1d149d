"""What the soak's invariants look at in a finished run, in one typed record (``Observation``),
read from the simulator's public result.

Rows are plain objects here: a soak schedule has a few hundred of them (a thousand consumed
batches), and the invariants read best over named fields: named tuples, immutable and several
times cheaper to build than frozen dataclasses. Fields left ``None`` (in hand-made observations) make the invariants
fall back to the simulator's own counters (``offset_regressions``, ``records_lost``).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import NamedTuple

from kafka_rebalance.model import RebalanceProtocol
from kafka_rebalance.sim.result import NOT_FENCED, SimulationResult
from kafka_rebalance.sim.run import run_simulation
from kafka_rebalance.sim.scenario import Scenario
from kafka_rebalance.sim.scenario_events import (
    ConsumerCrashes,
    ConsumerDowngrades,
    ConsumerJoins,
    ConsumerLeaves,
    ConsumerRestarts,
    ConsumerUpgrades,
    PartitionsAdded,
    SubscriptionChanged,
    TopicCreated,
)


class Ownership(NamedTuple):
    partition: str
    member: str
    generation: int | None
    start_ms: int
    end_ms: int


class Held(NamedTuple):
    """A consumer process's own view: it believed it owned ``partition`` from ``start_ms`` to
    ``end_ms``; from ``fenced_ms`` (None: never) the group no longer counted it as the owner
    (``sim.result.Held``)."""

    partition: str
    member: str
    incarnation: int
    generation: int | None
    start_ms: int
    end_ms: int
    fenced_ms: int | None = None

    @property
    def owner_until_ms(self) -> int:
        """The end of the part of the hold the group stands behind."""
        return self.end_ms if self.fenced_ms is None else min(self.fenced_ms, self.end_ms)


class Consumption(NamedTuple):
    """A batch: ``member`` consumed ``[start_offset, end_offset)`` of a partition under
    ``generation`` between ``start_ms`` and ``end_ms``."""

    partition: str
    member: str
    generation: int | None
    start_offset: int
    end_offset: int
    start_ms: int
    end_ms: int


class Commit(NamedTuple):
    time_ms: int
    partition: str
    offset: int
    member: str
    generation: int | None
    accepted: bool
    incarnation: int = 1  # which process of the consumer sent it (as ``Held.incarnation``)


@dataclass(frozen=True, slots=True)
class Observation:
    ownership: tuple[Ownership, ...]
    consumption: tuple[Consumption, ...] | None
    commits: tuple[Commit, ...] | None
    offset_regressions: int
    records_lost: int
    final_state: str
    live_members: tuple[str, ...]  # consumers whose process runs at the end
    final_assignment: dict[str, tuple[str, ...]]
    subscribed_partitions: tuple[str, ...]  # what the live consumers subscribe to, at the end
    # (life, generation) -> member -> partitions, from the rebalances that completed (None: not
    # known). A group's life ends when a migration replaces it, empty, by a new one of the other
    # protocol, whose epochs start again (Kafka's getOrMaybeCreateConsumerGroup and classicGroupJoin):
    # the simulator says when (``SimulationResult.life_starts_ms``).
    assignments: dict[tuple[int, int], dict[str, tuple[str, ...]]] | None = None
    life_starts_ms: tuple[int, ...] = (0,)
    ownership_conflicts: int = 0
    # each consumer's own view of what it owned (None: not recorded; the group's view is used)
    held: tuple[Held, ...] | None = None
    # partitions the last rebalance revoked from a static member that was bounced before it sent
    # the follow-up JoinGroup (see ``unfinished_follow_up``)
    awaiting_follow_up: tuple[str, ...] = ()


def observe(scenario: Scenario) -> Observation:
    return observation_of(run_simulation(scenario))


def observation_of(result: SimulationResult) -> Observation:
    scenario = result.scenario
    o, c, k = result.ownership, result.consumption, result.commits
    ownership = tuple(Ownership(*row) for row in zip(
        o.partition.tolist(), o.member.tolist(), o.generation.tolist(), o.start_ms.tolist(), o.end_ms.tolist(),
        strict=True))
    consumption = tuple(Consumption(*row) for row in zip(
        c.partition.tolist(), c.member.tolist(), c.generation.tolist(), c.from_offset.tolist(), c.to_offset.tolist(),
        c.start_ms.tolist(), c.end_ms.tolist(), strict=True))
    commits = tuple(Commit(time, partition, offset, member, generation, error == 0, incarnation)
                    for time, partition, offset, member, generation, error, incarnation in zip(
                        k.time_ms.tolist(), k.partition.tolist(), k.offset.tolist(), k.member.tolist(),
                        k.generation.tolist(), k.error_code.tolist(), k.incarnation.tolist(), strict=True))
    held = None
    if result.held is not None:
        h = result.held
        held = tuple(Held(partition, member, incarnation, generation, start, end, None if fenced == NOT_FENCED else fenced)
                     for partition, member, incarnation, generation, start, end, fenced in zip(
                         h.partition.tolist(), h.member.tolist(), h.incarnation.tolist(), h.generation.tolist(),
                         h.start_ms.tolist(), h.end_ms.tolist(), h.fenced_ms.tolist(), strict=True))
    assignments: dict[tuple[int, int], dict[str, tuple[str, ...]]] = {}
    life_starts_ms = result.life_starts_ms
    for rebalance in result.rebalances:
        if rebalance.generation is not None and rebalance.end_ms is not None and rebalance.assignment:
            life = bisect.bisect_right(life_starts_ms, rebalance.start_ms) - 1
            assignments[(life, rebalance.generation)] = {m.member: m.partitions for m in rebalance.assignment}
    # A static member fenced for good is no longer consuming, as a Java consumer whose poll threw
    # FencedInstanceIdException (AbstractCoordinator.JoinGroupResponseHandler: fatal). It happens
    # in Kafka without any fault of ours: a static member that replaced an expired instance
    # during a rebalance is not stored until the leader's SyncGroup, so after a failover the new
    # coordinator loads the old member id for the instance and fences the new one
    # (GroupCoordinator.validateCurrentMember, for its JoinGroup and SyncGroup).
    live = tuple(name for name in live_consumers(scenario) if name not in result.fenced)
    return Observation(
        ownership=ownership,
        consumption=consumption,
        commits=commits,
        offset_regressions=result.offset_regressions,
        records_lost=result.metrics.records_lost,
        final_state=result.final_group_state,
        live_members=live,
        final_assignment={m.member: m.partitions for m in result.final_assignment},
        subscribed_partitions=subscribed_partitions(scenario, live),
        assignments=assignments,
        life_starts_ms=life_starts_ms,
        ownership_conflicts=result.ownership_conflicts,
        held=held,
        awaiting_follow_up=unfinished_follow_up(result),
    )


def unfinished_follow_up(result: SimulationResult) -> tuple[str, ...]:
    """Partitions the last rebalance of the run (cooperative) revoked from a static member whose
    process was then bounced, with no rebalance after it: Kafka leaves them owned by nobody.

    Under COOPERATIVE only the member that revokes asks for the follow-up rebalance that hands
    the revoked partitions on (ConsumerCoordinator.onJoinComplete: requestRejoin after
    invokePartitionsRevoked), and it sends that JoinGroup only after its pre-join commit is
    answered (onJoinPrepare). A static member closed in between sends no LeaveGroup
    (AbstractCoordinator.maybeLeaveGroup: dynamic members only); back within its session
    timeout, it is replaced in place without a rebalance while the group is Stable
    (GroupCoordinator.updateStaticMemberAndRebalance: the selected protocol does not change) and
    gets the generation's stored assignment, the returning leader skipping the assignor
    (KIP-814). Nobody asks for the follow-up, so the revoked partitions wait for the next
    rebalance of any cause."""
    completed = [r for r in result.rebalances if r.end_ms is not None]
    if not completed or completed[-1] is not result.rebalances[-1]:
        return ()
    last = completed[-1]
    if last.rebalance_protocol is not RebalanceProtocol.COOPERATIVE or last.end_ms is None:
        return ()
    static = {c.id for c in result.scenario.consumers if c.group_instance_id is not None}
    bounced = {e.consumer for e in result.scenario.timeline
               if type(e) is ConsumerRestarts and e.consumer in static and e.at_ms >= last.end_ms}
    return tuple(sorted(p for m in last.revoked if m.member in bounced for p in m.partitions))


def life_at(seen: Observation, at_ms: int) -> int:
    """The group life in force at ``at_ms`` (see ``Observation.assignments``)."""
    return bisect.bisect_right(seen.life_starts_ms, at_ms) - 1


def live_consumers(scenario: Scenario) -> tuple[str, ...]:
    """Consumers whose process is running at the end. A restart (an upgrade, a downgrade) stops
    the process at its time and starts it ``after_ms`` later (after the scenario's own events of
    that instant, as the simulator queues it), so a crash in between finds nothing to crash."""
    changes: list[tuple[int, int, int, str, bool]] = []
    for index, event in enumerate(scenario.timeline):
        match event:
            case ConsumerJoins(at_ms=at_ms, consumer=name):
                changes.append((at_ms, 0, index, name, True))
            case ConsumerLeaves(at_ms=at_ms, consumer=name) | ConsumerCrashes(at_ms=at_ms, consumer=name):
                changes.append((at_ms, 0, index, name, False))
            case (ConsumerRestarts(at_ms=at_ms, consumer=name, after_ms=after_ms)
                  | ConsumerUpgrades(at_ms=at_ms, consumer=name, after_ms=after_ms)
                  | ConsumerDowngrades(at_ms=at_ms, consumer=name, after_ms=after_ms)):
                changes.append((at_ms, 0, index, name, False))
                changes.append((at_ms + after_ms, 1, index, name, True))  # each starts the process again
            case _:
                pass  # the others leave the processes running as they are
    running: dict[str, bool] = {}
    for at_ms, _, _, name, alive in sorted(changes):
        if at_ms <= scenario.effective_end_ms:
            running[name] = alive
    return tuple(sorted(name for name, alive in running.items() if alive))


def final_topics(scenario: Scenario) -> dict[str, int]:
    topics = dict(scenario.topics)
    for event in sorted(scenario.timeline, key=lambda e: e.at_ms):
        if event.at_ms > scenario.effective_end_ms:
            break
        match event:
            case TopicCreated(topic=topic, partitions=partitions):
                topics[topic] = partitions
            case PartitionsAdded(topic=topic, count=count):
                topics[topic] = max(topics[topic], count)
            case _:
                pass  # the other events leave the topics as they are
    return topics


def subscribed_partitions(scenario: Scenario, members: tuple[str, ...]) -> tuple[str, ...]:
    topics = final_topics(scenario)
    subscriptions = {c.id: (tuple(c.subscribe) if c.subscribe is not None else None, c.pattern)
                     for c in scenario.consumers}
    for event in sorted(scenario.timeline, key=lambda e: e.at_ms):
        if type(event) is SubscriptionChanged and event.at_ms <= scenario.effective_end_ms:
            subscriptions[event.consumer] = (event.topics, event.pattern)
    wanted: set[str] = set()
    for name in members:
        listed, pattern = subscriptions[name]
        if pattern is not None:
            compiled = re.compile(pattern)
            wanted.update(t for t in topics if compiled.fullmatch(t))
        else:
            wanted.update(t for t in listed or () if t in topics)
    return tuple(sorted(f"{t}-{p}" for t in wanted for p in range(topics[t])))
