"""The soak's pure parts: random schedules, the invariants a run must keep, and a shrinker.

A *schedule* is an ordinary scenario document (docs/scenario.md), drawn from a seed by
``random_schedule``: a small group (2-5 consumers, eager or cooperative, some static, some slow,
some subscribed by pattern) through a random mix of joins, clean leaves, crashes, long pauses (GC),
slow processing past ``max.poll.interval.ms``, static bounces, topic creation for the pattern,
partition increases, coordinator failovers (several in a row), network delays (latency with
jitter, so requests overtake each other and clients retry on the errors they get) and, in some
schedules, lost requests and responses (clients time out and retry), followed by
quiet time long enough for every timeout in play to fire.

``check_schedule`` runs one schedule and returns the violations of the invariants in
``INVARIANTS``; ``shrink`` reduces a failing schedule to a minimal one that fails the same way
(delta debugging over the events, then over consumers, topics, traffic and settings), so a
violation comes with a schedule a person can read. Everything here is deterministic: the same
seed gives the same schedule, the same failing schedule shrinks to the same minimal one.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.model import GroupProtocol, InvalidInput, RebalanceProtocol, ServerAssignorName
from kafka_rebalance.sim.scenario import load_scenario
from kafka_rebalance.sim.soak_observe import Consumption, Observation, life_at, observe

# ----------------------------------------------------------------------------- invariants

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
    bounced, never asked for (Kafka's behaviour: ``soak_observe.unfinished_follow_up``)."""
    if not seen.live_members:
        if seen.final_state not in ("Empty", "Dead"):
            return Violation(CONVERGES, f"no consumer is running but the group is {seen.final_state}")
        return None
    if seen.final_state != "Stable":
        return Violation(CONVERGES, f"the group is {seen.final_state} at the end, with "
                                    f"{len(seen.live_members)} consumer(s) running")
    owned = {p for parts in seen.final_assignment.values() for p in parts}
    # Kafka's own gap, not ours: see soak_observe.unfinished_follow_up.
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


# ----------------------------------------------------------------------------- schedules

STRATEGY_LISTS = (
    ("range",), ("roundrobin",), ("sticky",), ("cooperative-sticky",), ("cooperative-sticky",),
    ("range", "cooperative-sticky"), ("cooperative-sticky", "range"),
)
PATTERN = "p-.*"


def random_schedule(seed: int, group_protocol: GroupProtocol = GroupProtocol.CLASSIC, *,
                    migrating: bool = False) -> dict[str, Any]:
    """A random, valid schedule (a scenario document) for ``seed``; about 3 in 10 also lose
    requests and responses on the network (``network_loss`` 1-5% until the last event, with
    more jitter), so the clients' request timeouts and retries are exercised.

    ``GroupProtocol.CONSUMER``: the same schedule for a KIP-848 consumer group (the broker's
    session timeout and heartbeat interval are the schedule's, its server-side assignor drawn
    from a stream of its own, so the classic draws stay as they were).

    ``migrating``: the same schedule, and during its churn the group migrates, each consumer
    restarted in turn with the other protocol (a rolling upgrade from classic, a rolling
    downgrade from consumer), in 3 of 10 rolled back part-way (``add_migration``)."""
    rng = random.Random(seed)
    session = rng.choice((6000, 10000, 15000))
    heartbeat = session // rng.choice((3, 4, 5))
    max_poll_interval = rng.choice((8000, 15000, 30000))
    coordinator_load = rng.choice((0, 200, 1000, 3000))
    metadata_age = rng.choice((3000, 10000, 30000))
    config: dict[str, Any] = {
        "session_timeout_ms": session,
        "heartbeat_interval_ms": heartbeat,
        "max_poll_interval_ms": max_poll_interval,
        "group_initial_rebalance_delay_ms": rng.choice((0, 0, 1000, 3000)),
        "auto_commit_interval_ms": rng.choice((500, 1000, 5000)),
        "metadata_max_age_ms": metadata_age,
        "network_latency_ms": rng.choice((0, 1, 2, 5, 20)),
        "network_jitter_ms": rng.choice((0, 0, 3, 30, 200)),
        "coordinator_load_ms": coordinator_load,
        "idle_poll_ms": rng.choice((100, 500)),
    }
    topics = {f"t{i}": rng.randint(1, 6) for i in range(rng.randint(1, 3))}
    use_pattern = rng.random() < 0.3
    if use_pattern:
        topics["p-0"] = rng.randint(1, 3)
    strategies = list(rng.choice(STRATEGY_LISTS))
    consumers = []
    for i in range(rng.randint(2, 5)):
        consumer: dict[str, Any] = {"id": f"c{i + 1}", "strategies": strategies}
        if use_pattern and rng.random() < 0.7:
            consumer["pattern"] = PATTERN
        else:
            names = sorted(t for t in topics if t.startswith("t"))
            consumer["subscribe"] = names if rng.random() < 0.8 else sorted(rng.sample(names, rng.randint(1, len(names))))
        if rng.random() < 0.3:
            consumer["group_instance_id"] = f"static-{i + 1}"
        if rng.random() < 0.25:
            consumer["processing_ms_per_record"] = rng.choice((0.2, 1, 3))
            consumer["max_poll_records"] = rng.choice((5, 20, 100))
        consumers.append(consumer)
    produce = [{"topic": t, "records_per_s": rng.choice((5, 50, 200)), "keys": rng.choice((3, 20, 100))}
               for t in topics if rng.random() < 0.8]
    names = [c["id"] for c in consumers]
    static = {c["id"]: "group_instance_id" in c for c in consumers}
    events: list[dict[str, Any]] = []
    for name in names:
        events.append({"at_ms": 0 if rng.random() < 0.6 else rng.randint(0, 10000), "join": name})
    horizon = rng.choice((30000, 60000, 90000))
    pattern_topics = 1
    for _ in range(rng.randint(2, 10)):
        at = rng.randint(1000, horizon)
        kind = rng.choices(
            ("leave", "crash", "join", "pause", "stall", "restart", "create_topic", "add_partitions", "failover"),
            weights=(2, 2, 3, 2, 2, 2, 1 if use_pattern else 0, 1, 2))[0]
        name = rng.choice(names)
        if kind in ("leave", "crash", "join"):
            events.append({"at_ms": at, kind: name})
        elif kind == "pause":  # a GC pause: sometimes longer than the session timeout
            longest = session // 3 if static[name] else session + 2000  # static: see the stall below
            events.append({"at_ms": at, "pause": name, "for_ms": rng.choice((300, session // 2, longest))})
        elif kind == "stall":  # processing stuck: sometimes past max.poll.interval.ms
            longest = max_poll_interval + 3000
            if static[name]:
                # A static member that misses a rebalance (stuck until its rebalance timeout ran
                # out, even when the rebalance began before the stall) keeps its partitions while
                # they go to others: Kafka's own two-owner window in the classic protocol
                # (tests/sim/test_properties.py states it), not a finding.
                longest = max_poll_interval // 3
            events.append({"at_ms": at, "stall": name, "for_ms": rng.choice((1000, max_poll_interval // 2, longest))})
        elif kind == "restart":  # a bounce; a static member keeps its id if back within the session
            events.append({"at_ms": at, "restart": name, "after_ms": rng.choice((0, 500, session // 2, session + 1000))})
        elif kind == "create_topic":
            topic = f"p-{pattern_topics}"
            pattern_topics += 1
            events.append({"at_ms": at, "create_topic": {"name": topic, "partitions": rng.randint(1, 3)}})
        elif kind == "add_partitions":  # count: the increase for now, made absolute below
            events.append({"at_ms": at, "add_partitions": {"topic": rng.choice(sorted(topics)),
                                                           "count": rng.randint(1, 3)}})
        else:  # several failovers in a row, some before the new coordinator finished loading
            for _ in range(rng.choice((1, 1, 2, 3))):
                events.append({"at_ms": at, "coordinator_failover": {}})
                at += rng.choice((0, coordinator_load // 2 + 1, coordinator_load + 500, session))
    events.sort(key=lambda e: e["at_ms"])  # stable: equal times keep their drawn order
    # A static leader that returns within its session timeout keeps leading without a rebalance
    # and takes the metadata of its return as its snapshot (KIP-814: ConsumerCoordinator.
    # onLeaderElected, assignmentSnapshot = metadataSnapshot), so a partition change it was away
    # for is never noticed: a gap of Kafka's, not a finding. Schedules with topic changes
    # therefore bounce only dynamic members.
    if any("add_partitions" in e or "create_topic" in e for e in events):
        events = [e for e in events if not any(static.get(e.get(action, ""), False)
                                                for action in ("leave", "crash", "restart"))]
    grown = dict(topics)  # partition counts only grow, in time order
    for event in events:
        if "add_partitions" in event:
            topic = event["add_partitions"]["topic"]
            grown[topic] += event["add_partitions"]["count"]
            event["add_partitions"]["count"] = grown[topic]
    schedule = {
        "name": f"soak-{seed}",
        "group": f"soak-group-{seed % 97}",
        "config": config,
        "topics": topics,
        "consumers": consumers,
        "produce": produce,
        "events": events,
        "seed": seed,
    }
    # Lost requests and responses (clients time them out and retry), drawn from a stream of
    # their own so that the rest of a seed's schedule is what it always was. The loss stops at
    # the last event (quiet_ms covers what it leaves behind).
    lossy = random.Random(f"network-loss/{seed}")
    if lossy.random() < 0.3:
        # A static member whose JoinGroup (or the commit before it) is lost misses the rebalance
        # and the coordinator keeps it with its old partitions while they go to others: Kafka's
        # own two-owner window (see the stall above), not a finding. Lossy schedules are dynamic.
        for consumer in consumers:
            consumer.pop("group_instance_id", None)
        config["network_loss"] = lossy.choice((0.01, 0.02, 0.05))
        config["network_loss_until_ms"] = last_activity_ms(schedule)
        config["request_timeout_ms"] = lossy.choice((5000, 30000))
        config["network_jitter_ms"] = max(config["network_jitter_ms"], lossy.choice((0, 30, 200)))
    if migrating:
        add_migration(schedule, group_protocol, random.Random(f"migration/{seed}"))
    if group_protocol is GroupProtocol.CONSUMER or migrating:
        if group_protocol is GroupProtocol.CONSUMER:
            schedule["group_protocol"] = GroupProtocol.CONSUMER.value
        schedule["assignor"] = random.Random(f"server-assignor/{seed}").choice(list(ServerAssignorName)).value
        config["consumer_session_timeout_ms"] = session
        config["consumer_heartbeat_interval_ms"] = heartbeat
    schedule["end_ms"] = last_activity_ms(schedule) + quiet_ms(schedule)
    return schedule


def add_migration(schedule: dict[str, Any], start: GroupProtocol, rng: random.Random) -> None:
    """A rolling migration in ``schedule`` (changed in place): from a time within its churn, each
    consumer in a drawn order is restarted with the other protocol (``upgrade`` from classic,
    ``downgrade`` from consumer), a drawn gap apart; in 3 of 10, the first few are then moved
    back, last first (a rollback). Schedules that change topics get dynamic members only (a
    static classic leader back within its session misses partition changes: Kafka's KIP-814
    gap, see ``random_schedule``)."""
    events: list[dict[str, Any]] = schedule["events"]
    names = [c["id"] for c in schedule["consumers"]]
    forth, back = ("upgrade", "downgrade") if start is GroupProtocol.CLASSIC else ("downgrade", "upgrade")
    session = schedule["config"]["session_timeout_ms"]
    order = rng.sample(names, len(names))
    at = rng.randint(2000, max(2000, max(e["at_ms"] for e in events)))
    gap = rng.choice((0, 2000, session, 20000))
    after = rng.choice((0, 1000, 5000))
    for name in order:
        events.append({"at_ms": at, forth: name, "after_ms": after})
        at += gap
    if rng.random() < 0.3:
        at += rng.choice((0, gap, 10000))
        for name in reversed(order[:rng.randint(1, len(order))]):
            events.append({"at_ms": at, back: name, "after_ms": after})
            at += gap
    events.sort(key=lambda e: e["at_ms"])
    if any("add_partitions" in e or "create_topic" in e for e in events):
        for consumer in schedule["consumers"]:
            consumer.pop("group_instance_id", None)


def schedule_rebalance_protocol(schedule: dict[str, Any]) -> RebalanceProtocol | None:
    """A classic group's: COOPERATIVE when every consumer can only rebalance cooperatively (a Java
    consumer uses the protocol all its configured assignors support), else EAGER; None for a
    consumer group (its members reconcile with the coordinator, there is no rebalance protocol)."""
    if schedule.get("group_protocol", GroupProtocol.CLASSIC.value) == GroupProtocol.CONSUMER.value:
        return None
    for consumer in schedule["consumers"]:
        if any(get_assignor(name).protocol is not RebalanceProtocol.COOPERATIVE for name in consumer["strategies"]):
            return RebalanceProtocol.EAGER
    return RebalanceProtocol.COOPERATIVE


def last_activity_ms(schedule: dict[str, Any]) -> int:
    """The end of the last event, or of the lossy network if later."""
    last = max((e["at_ms"] + e.get("for_ms", 0) + e.get("after_ms", 0) for e in schedule.get("events", [])), default=0)
    config = schedule.get("config", {})
    if config.get("network_loss"):
        last = max(last, config.get("network_loss_until_ms") or 0)
    return int(last)


def quiet_ms(schedule: dict[str, Any]) -> int:
    """Quiet time after the last event in which every timeout in play fires and the group settles:
    a crash is noticed after the session timeout, a rebalance waits up to the rebalance timeout
    (max.poll.interval.ms) for slow members, a new pattern topic is seen at the next metadata
    refresh, and a failover takes the coordinator's load time (each of these can follow another)."""
    config = schedule.get("config", {})
    consumers = schedule.get("consumers", [])
    session = max([config.get("session_timeout_ms", 45000),
                   *(c.get("session_timeout_ms", 0) for c in consumers)])
    rebalance = max([config.get("max_poll_interval_ms", 300000),
                     *(c.get("max_poll_interval_ms", 0) for c in consumers)])
    quiet = int(2 * session + 2 * rebalance + config.get("metadata_max_age_ms", 300000)
                + config.get("group_initial_rebalance_delay_ms", 3000) + 2 * config.get("coordinator_load_ms", 500)
                + 10000)
    if config.get("network_loss"):
        # A request lost just before the network recovered times out, the JoinGroup retried
        # then may wait its join timeout, and what it left behind expires after a session.
        request_timeout = config.get("request_timeout_ms", 30000)
        quiet += request_timeout + max(request_timeout, rebalance + 5000) + session
    return quiet


def schedule_seed(master_seed: int, index: int) -> int:
    """The seed of schedule ``index`` of a soak (independent streams for nearby indices)."""
    return random.Random(f"{master_seed}/{index}").getrandbits(48)


class _PlainDumper(yaml.SafeDumper):
    """No anchors and aliases: a shared list is written out at each place (readable schedules)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def schedule_yaml(schedule: dict[str, Any]) -> str:
    """A schedule as scenario YAML, ready for ``kafka-rebalance simulate``."""
    return str(yaml.dump(schedule, Dumper=_PlainDumper, sort_keys=False, default_flow_style=None, width=120))


# ----------------------------------------------------------------------------- shrinking

def same_failure(violations: Sequence[Violation]) -> Callable[[dict[str, Any]], bool]:
    """The predicate a shrink keeps true: the candidate still breaks one of the same invariants."""
    kinds = {v.invariant for v in violations}

    def fails(candidate: dict[str, Any]) -> bool:
        try:
            return any(v.invariant in kinds for v in check_schedule(candidate))
        except InvalidInput:
            return False

    return fails


def shrink(schedule: dict[str, Any], fails: Callable[[dict[str, Any]], bool], *, budget: int = 400) -> tuple[
        dict[str, Any], int]:
    """A minimal schedule for which ``fails`` still holds, and how many candidates were tried.

    Delta debugging (ddmin) over the events, then removal of whole consumers (with their events),
    topics, produce entries, and simplification of settings (no jitter, no processing cost, not
    static, the quiet time recomputed). Repeats until nothing more can go or ``budget`` runs out.
    """
    state = {"tries": 0}

    def attempt(candidate: dict[str, Any]) -> bool:
        if state["tries"] >= budget:
            return False
        state["tries"] += 1
        return fails(_with_end(candidate))

    current = _with_end(copy.deepcopy(schedule))
    changed = True
    while changed and state["tries"] < budget:
        changed = False
        base = current

        def fails_with(events: list[Any], base: dict[str, Any] = base) -> bool:
            return attempt({**base, "events": events})

        events = _ddmin(base["events"], fails_with)
        if len(events) < len(current["events"]):
            current = _with_end({**current, "events": events})
            changed = True
        for candidate in _simplifications(current):
            if state["tries"] >= budget:
                break
            if attempt(candidate):
                current = _with_end(candidate)
                changed = True
    return current, state["tries"]


def _with_end(schedule: dict[str, Any]) -> dict[str, Any]:
    result = dict(schedule)
    result["end_ms"] = last_activity_ms(result) + quiet_ms(result)
    return result


def _ddmin(items: list[Any], fails: Callable[[list[Any]], bool]) -> list[Any]:
    """Zeller's ddmin: a 1-minimal sublist of ``items`` (order kept) for which ``fails`` holds."""
    current = list(items)
    granularity = 2
    while len(current) >= 2:
        chunk = max(1, len(current) // granularity)
        subsets = [current[i:i + chunk] for i in range(0, len(current), chunk)]
        reduced = False
        for index in range(len(subsets)):
            complement = [item for j, subset in enumerate(subsets) if j != index for item in subset]
            if fails(complement):
                current = complement
                granularity = max(granularity - 1, 2)
                reduced = True
                break
        if not reduced:
            if granularity >= len(current):
                break
            granularity = min(granularity * 2, len(current))
    if len(current) == 1 and fails([]):
        return []
    return current


def _simplifications(schedule: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Candidate schedules one step simpler than ``schedule``, most aggressive first."""
    for consumer in schedule["consumers"]:
        name = consumer["id"]
        if len(schedule["consumers"]) > 1:
            yield {**schedule, "consumers": [c for c in schedule["consumers"] if c["id"] != name],
                   "events": [e for e in schedule["events"] if not _mentions(e, name)]}
    for topic in list(schedule["topics"]):
        if len(schedule["topics"]) > 1:
            yield _without_topic(schedule, topic)
    for index in range(len(schedule.get("produce", []))):
        yield {**schedule, "produce": [p for i, p in enumerate(schedule["produce"]) if i != index]}
    config = schedule.get("config", {})
    for key, simple in (("network_jitter_ms", 0), ("network_latency_ms", 0), ("coordinator_load_ms", 0),
                        ("group_initial_rebalance_delay_ms", 0)):
        if config.get(key, simple) != simple:
            yield {**schedule, "config": {**config, key: simple}}
    for i, consumer in enumerate(schedule["consumers"]):
        for key in ("group_instance_id", "processing_ms_per_record", "max_poll_records"):
            if key in consumer:
                simpler = {k: v for k, v in consumer.items() if k != key}
                yield {**schedule, "consumers": [*schedule["consumers"][:i], simpler, *schedule["consumers"][i + 1:]]}
    for topic, count in schedule["topics"].items():
        if count > 1:
            yield {**schedule, "topics": {**schedule["topics"], topic: count - 1},
                   "events": [_regrow(e, topic, count - 1) for e in schedule["events"]]}
    for i, event in enumerate(schedule["events"]):
        for key in ("for_ms", "after_ms"):
            if event.get(key, 0) > 0:
                yield {**schedule, "events": [*schedule["events"][:i], {**event, key: event[key] // 2},
                                              *schedule["events"][i + 1:]]}


def _mentions(event: dict[str, Any], name: str) -> bool:
    return any(event.get(action) == name for action in ("join", "leave", "crash", "pause", "stall", "restart")) or (
        isinstance(event.get("subscribe"), dict) and event["subscribe"].get("consumer") == name)


def _without_topic(schedule: dict[str, Any], topic: str) -> dict[str, Any]:
    consumers = []
    for consumer in schedule["consumers"]:
        if "subscribe" in consumer:
            remaining = [t for t in consumer["subscribe"] if t != topic]
            consumer = {**consumer, "subscribe": remaining or [t for t in schedule["topics"] if t != topic][:1]}
        consumers.append(consumer)
    return {**schedule, "topics": {t: n for t, n in schedule["topics"].items() if t != topic},
            "consumers": consumers,
            "produce": [p for p in schedule.get("produce", []) if p["topic"] != topic],
            "events": [e for e in schedule["events"]
                       if not (isinstance(e.get("add_partitions"), dict) and e["add_partitions"]["topic"] == topic)]}


def _regrow(event: dict[str, Any], topic: str, base: int) -> dict[str, Any]:
    grow = event.get("add_partitions")
    if isinstance(grow, dict) and grow["topic"] == topic:
        return {**event, "add_partitions": {**grow, "count": max(grow["count"] - 1, base + 1)}}
    return event
