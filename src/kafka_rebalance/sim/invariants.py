"""The invariants every soak run must keep, checked over a finished run's ``Observation``
(``sim.observation``): one owner per partition at a time (judged on each consumer's own holds),
only the owner consumes, commits go forward, no record is lost, and the group converges.

``check_schedule`` runs one schedule (a scenario document, ``sim.schedules``) and returns the
violations of the invariants in ``INVARIANTS``; a crash of the simulator is a violation too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.sim.observation import Consumption, Observation, life_at, observe
from kafka_rebalance.sim.scenario import load_scenario

SINGLE_OWNER = "single-owner"
OWNER_CONSUMES = "owner-consumes"
COMMITS_FORWARD = "commits-forward"
NO_RECORD_LOST = "no-record-lost"
CONVERGES = "converges"
SIMULATION_ERROR = "simulation-error"
INVARIANTS = (SINGLE_OWNER, OWNER_CONSUMES, COMMITS_FORWARD, NO_RECORD_LOST, CONVERGES)


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    detail: str


def check_observation(seen: Observation) -> list[Violation]:
    """Every invariant over one finished run, first violation of each kind (with its detail)."""
    found: list[Violation] = []
    for check in (_single_owner, _owner_consumes, _commits_forward, _no_record_lost, _converges):
        violation = check(seen)
        if violation is not None:
            found.append(violation)
    return found


def _single_owner(seen: Observation) -> Violation | None:
    """Never two owners of a partition at the same instant (eager and cooperative alike), each
    consumer judged by its own view: it owns a partition from its onPartitionsAssigned (or the
    assignment it adopts) until its onPartitionsRevoked / onPartitionsLost or its process ends.

    The guarantee is Kafka's ConsumerRebalanceListener contract: a partition moving between
    members is revoked by the old owner before the new owner's onPartitionsAssigned. It covers
    members of the generation, not a consumer the group has moved on without: one the coordinator
    removed (session expired during a long GC pause), or a static member it kept without a rejoin
    (GroupCoordinator.onCompleteJoin). Such a zombie still believes it owns its partitions until
    it hears (onPartitionsLost, "partitions ... have already been reassigned to other
    consumers"), and nothing in the protocol can reach a frozen process sooner. What Kafka does
    guarantee is that it can no longer commit: its member id or generation is rejected
    (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION, GroupCoordinator.doCommitOffsets). So a hold counts
    as ownership until the group fenced it (``Held.fenced_ms``), and an accepted commit from its
    fenced part is a violation."""
    if seen.held is None:
        return first_overlap(((i.partition, i.member, i.generation, i.start_ms, i.end_ms) for i in seen.ownership),
                           "owns it")
    overlap = first_overlap(((h.partition, f"{h.member}#{h.incarnation}", h.generation, h.start_ms, h.owner_until_ms)
                           for h in seen.held), "believes it owns it")
    if overlap is not None:
        return overlap
    # (Two processes of one consumer can run at once: an old one still closing beside its restart.)
    accepted: dict[tuple[str, int, str], list[int]] = {}
    for commit in seen.commits or ():
        if commit.accepted:
            accepted.setdefault((commit.member, commit.incarnation, commit.partition), []).append(commit.time_ms)
    for hold in seen.held:
        if hold.fenced_ms is None:
            continue
        # Strictly after the fencing: a commit of the same millisecond may have been handled just
        # before it (session timer and commit at one instant; the tables keep times, not order).
        late = [t for t in accepted.get((hold.member, hold.incarnation, hold.partition), ())
                if hold.fenced_ms < t < hold.end_ms]
        if late:
            return Violation(SINGLE_OWNER, f"{hold.partition}: {hold.member} committed it at {late[0]} ms, after the "
                                           f"group fenced its hold (generation {hold.generation}) at "
                                           f"{hold.fenced_ms} ms")
    return None


def first_overlap(intervals: Iterable[tuple[str, str, int | None, int, int]], verb: str) -> Violation | None:
    """The first instant two owners' intervals of a partition overlap (partition, owner,
    generation, start, end), adjacent in start order or not."""
    by_partition: dict[str, list[tuple[int, int, str, int | None]]] = {}
    for partition, owner, generation, start, end in intervals:
        if end > start:
            by_partition.setdefault(partition, []).append((start, end, owner, generation))
    for partition in sorted(by_partition):
        # Sweep in start order, remembering the interval that reaches furthest: any later start
        # before its end by another owner is an overlap, adjacent or not.
        reach: tuple[int, str, int | None] | None = None
        for start, end, owner, generation in sorted(by_partition[partition]):
            if reach is not None and start < reach[0] and owner != reach[1]:
                return Violation(SINGLE_OWNER, f"{partition}: {reach[1]} (generation {reach[2]}) {verb} until "
                                               f"{reach[0]} ms and {owner} (generation {generation}) from {start} ms")
            if reach is None or end > reach[0]:
                reach = (end, owner, generation)
    return None


def _owner_consumes(seen: Observation) -> Violation | None:
    """A partition is consumed under generation g only by its owner in g: the member the
    coordinator's assignment of g gave it to. A cooperative member keeps consuming what it owned
    in the generation before g until SyncGroup of g tells it what to revoke, so the owner in the
    latest earlier generation with a recorded assignment counts too. A member the coordinator has already expelled (a long GC pause) may still consume
    under its old generation, as a real zombie consumer does: that is the generation it owns it in.
    An ownership interval starts only with a partition its generation's assignment gave."""
    assignments = seen.assignments
    if assignments is None:
        return None

    def owner_in(generation: int, member: str, partition: str, at_ms: int) -> bool | None:
        given = assignments.get((life_at(seen, at_ms), generation))
        return None if given is None else partition in given.get(member, ())

    for interval in seen.ownership:
        if interval.generation is not None and owner_in(interval.generation, interval.member,
                                                        interval.partition, interval.start_ms) is False:
            return Violation(OWNER_CONSUMES, f"{interval.partition}: {interval.member} owned it from "
                                             f"{interval.start_ms} ms as of generation {interval.generation}, whose "
                                             "assignment did not give it to them")
    # The latest earlier generation of the same life with a recorded assignment (None: none).
    previous: dict[tuple[int, int], int | None] = {}
    latest: dict[int, int] = {}
    for lived, number in sorted(assignments):
        previous[(lived, number)] = latest.get(lived)
        latest[lived] = number
    for batch in seen.consumption or ():
        generation = batch.generation
        life = life_at(seen, batch.start_ms)
        if generation is None or (life, generation) not in assignments:
            continue
        before = previous[(life, generation)]
        if owner_in(generation, batch.member, batch.partition, batch.start_ms) or (
                before is not None and owner_in(before, batch.member, batch.partition, batch.start_ms)):
            continue
        if _held_since_earlier_generation(seen, batch):
            continue
        holder = _holder(assignments[(life, generation)], batch.partition)
        return Violation(OWNER_CONSUMES, f"{batch.partition}: {batch.member} consumed offsets {batch.start_offset}-"
                                         f"{batch.end_offset} in {batch.start_ms}-{batch.end_ms} ms under generation "
                                         f"{generation}, whose assignment gave it to {holder}")
    return None


def _held_since_earlier_generation(seen: Observation, batch: Consumption) -> bool:
    """A cooperative member whose SyncGroup of g-1 was answered REBALANCE_IN_PROGRESS (the
    group moved on before its request arrived: GroupCoordinator.doSyncGroup, case
    PreparingRebalance) never learns g-1's assignment, so it keeps consuming what it was given in
    the last generation it did learn, until SyncGroup of g tells it what to revoke
    (ConsumerCoordinator.onJoinPrepare revokes nothing for COOPERATIVE while the subscription
    still covers it). That earlier grant is an ownership interval, itself checked above against
    its generation's assignment; the batch must lie inside it. The same holds for a static
    member back from a long pause: it rejoins with its old generation's partitions and consumes
    them until SyncGroup of g, while the member the missed generation gave them to consumes too,
    the two-owner window noted in ``_single_owner``."""
    return any(interval.member == batch.member and interval.partition == batch.partition
               and interval.generation is not None and batch.generation is not None
               and interval.generation < batch.generation
               and interval.start_ms <= batch.start_ms and batch.end_ms <= interval.end_ms
               for interval in seen.ownership)


def _holder(assignment: dict[str, tuple[str, ...]], partition: str) -> str:
    return next((member for member, parts in assignment.items() if partition in parts), "nobody")


def _commits_forward(seen: Observation) -> Violation | None:
    """Accepted commits of a partition never move its committed offset backwards, across any
    number of coordinator failovers."""
    committed: dict[str, tuple[int, int, str]] = {}
    for commit in sorted(seen.commits or (), key=lambda c: c.time_ms):
        if not commit.accepted:
            continue
        previous = committed.get(commit.partition)
        if previous is not None and commit.offset < previous[0]:
            return Violation(COMMITS_FORWARD, f"{commit.partition}: {commit.member} committed {commit.offset} at "
                                              f"{commit.time_ms} ms after {previous[2]} committed {previous[0]} at "
                                              f"{previous[1]} ms")
        committed[commit.partition] = (commit.offset, commit.time_ms, commit.member)
    if seen.offset_regressions:
        return Violation(COMMITS_FORWARD, f"{seen.offset_regressions} commit(s) moved an offset backwards")
    return None


def _no_record_lost(seen: Observation) -> Violation | None:
    """Every record produced before the last owner's final position was consumed by someone:
    no offset range is ever skipped."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for record in seen.consumption or ():
        if record.end_offset > record.start_offset:
            ranges.setdefault(record.partition, []).append((record.start_offset, record.end_offset))
    for partition in sorted(ranges):
        reached = 0
        for start, end in sorted(ranges[partition]):
            if start > reached:
                return Violation(NO_RECORD_LOST, f"{partition}: offsets {reached}-{start} were never consumed")
            reached = max(reached, end)
    if seen.records_lost:
        return Violation(NO_RECORD_LOST, f"{seen.records_lost} record(s) skipped")
    return None


def _converges(seen: Observation) -> Violation | None:
    """After the last event and the quiet time, the group is Stable with every subscribed
    partition owned by a live member (or Empty when no consumer is left); except the partitions
    a cooperative revocation left waiting for a follow-up rebalance that its static revoker,
    bounced, never asked for (Kafka's behaviour: ``observation.unfinished_follow_up``)."""
    if not seen.live_members:
        if seen.final_state not in ("Empty", "Dead"):
            return Violation(CONVERGES, f"no consumer is running but the group is {seen.final_state}")
        return None
    if seen.final_state != "Stable":
        return Violation(CONVERGES, f"the group is {seen.final_state} at the end, with "
                                    f"{len(seen.live_members)} consumer(s) running")
    owned = {p for parts in seen.final_assignment.values() for p in parts}
    # Kafka's own gap, not ours: see observation.unfinished_follow_up.
    missing = sorted(set(seen.subscribed_partitions) - owned - set(seen.awaiting_follow_up))
    if missing:
        return Violation(CONVERGES, f"{len(missing)} subscribed partition(s) owned by nobody at the end "
                                    f"({', '.join(missing[:5])})")
    return None


def check_schedule(schedule: dict[str, Any]) -> list[Violation]:
    """Run one schedule and check every invariant. A crash of the simulator is a violation too."""
    try:
        seen = observe(load_scenario(schedule))
    except InvalidInput:
        raise
    except Exception as exc:  # noqa: BLE001 - a simulator crash is what the soak exists to find
        return [Violation(SIMULATION_ERROR, f"{type(exc).__name__}: {exc}".splitlines()[0])]
    return check_observation(seen)
