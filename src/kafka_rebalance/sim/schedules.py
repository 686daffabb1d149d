"""The soak's random schedules.

A *schedule* is an ordinary scenario document (docs/scenario.md), drawn from a seed by
``random_schedule``: a small group (2-5 consumers, eager or cooperative, some static, some slow,
some subscribed by pattern) through a random mix of joins, clean leaves, crashes, long pauses (GC),
slow processing past ``max.poll.interval.ms``, static bounces, topic creation for the pattern,
partition increases, coordinator failovers (several in a row), network delays (latency with
jitter, so requests overtake each other and clients retry on the errors they get) and, in some
schedules, lost requests and responses (clients time out and retry), followed by
quiet time long enough for every timeout in play to fire. The same seed gives the same schedule.
``sim.invariants`` checks a schedule's run, ``sim.shrink`` reduces a failing one.
"""

from __future__ import annotations

import random
from typing import Any

import yaml

from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.model import GroupProtocol, RebalanceProtocol, ServerAssignorName

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
