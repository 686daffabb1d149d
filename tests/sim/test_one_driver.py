"""Both group sides run on the one driver (sim/driver.py) and return the same typed result:
rebalances as RebalanceRecord (group protocol and rebalance protocol as enums), each consumer's
own holds (``held``) with their fencing, ``fenced`` and offset regressions, for classic groups,
consumer groups and a group migrating between them. Regressions the consumer-group soak found
are kept here, shrunk."""

from __future__ import annotations

from typing import Any

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol
from kafka_rebalance.sim import run_simulation
from kafka_rebalance.sim.classic_side import ClassicGroupSide
from kafka_rebalance.sim.consumer_group import ConsumerGroupSide
from kafka_rebalance.sim.invariants import check_schedule
from kafka_rebalance.sim.observation import observation_of
from kafka_rebalance.sim.schedules import random_schedule, schedule_seed


def group(protocol: str, strategies: list[str], events: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "group": "g", "group_protocol": protocol, "topics": {"t": 6},
        "consumers": [{"id": name, "subscribe": ["t"], "strategies": strategies} for name in ("a", "b", "c")],
        "produce": [{"topic": "t", "records_per_s": 100, "keys": 30}],
        "events": events, "end_ms": 90000, **extra,
    }


JOINS = [{"at_ms": 0, "join": "a"}, {"at_ms": 0, "join": "b"}, {"at_ms": 5000, "join": "c"},
         {"at_ms": 30000, "leave": "b"}]


def test_both_sides_are_group_sides_of_the_one_driver() -> None:
    assert ClassicGroupSide.run is ConsumerGroupSide.run  # the driver's loop, clock and queue
    assert ClassicGroupSide._result is ConsumerGroupSide._result  # one result builder


def test_a_consumer_group_result_carries_the_fields_a_classic_one_does() -> None:
    classic = run_simulation(group("classic", ["cooperative-sticky"], JOINS))
    consumer = run_simulation(group("consumer", ["cooperative-sticky"], JOINS))
    for result in (classic, consumer):
        assert len(result.held) > 0 and (result.held.fenced_ms == -1).all()
        assert result.offset_regressions == 0 and result.fenced == ()
        assert all(r.end_ms is not None for r in result.rebalances)
    assert {r.group_protocol for r in classic.rebalances} == {GroupProtocol.CLASSIC}
    assert {r.rebalance_protocol for r in classic.rebalances} == {RebalanceProtocol.COOPERATIVE}
    assert {r.group_protocol for r in consumer.rebalances} == {GroupProtocol.CONSUMER}
    assert {r.rebalance_protocol for r in consumer.rebalances} == {None}
    assert [r.to_json()["protocol"] for r in consumer.rebalances] == ["CONSUMER"] * len(consumer.rebalances)
    # Each consumer holds what it is finally assigned until the end of the run.
    for result in (classic, consumer):
        held_at_end = {(str(p), str(m)) for p, m, e in zip(result.held.partition, result.held.member,
                                                           result.held.end_ms, strict=True) if e == 90000}
        assert held_at_end == {(p, m.member) for m in result.final_assignment for p in m.partitions}


def test_a_migrating_groups_classic_phase_is_recorded_as_the_classic_side_records_it() -> None:
    """A member listing an eager assignor (range) makes the whole generation EAGER in Kafka
    (ConsumerCoordinator: the protocol every configured assignor supports): the classic phase of
    a rolling upgrade says so, names its leader, and under EAGER every member revokes all it held
    (before, it was called COOPERATIVE because the chosen strategy was cooperative-sticky)."""
    strategies = ["cooperative-sticky", "range"]
    upgrade = run_simulation(group("classic", strategies, [*JOINS, {"at_ms": 60000, "upgrade": "a"}]))
    classic = run_simulation(group("classic", strategies, JOINS))
    before = [r for r in upgrade.rebalances if r.start_ms < 60000]
    def shape(r: Any) -> tuple[Any, ...]:  # (member ids, and so the reasons naming them, are random per run)
        return (r.generation, r.strategy, r.group_protocol, r.rebalance_protocol, r.leader, r.members, r.assignment,
                r.revoked, r.added)

    assert [shape(r) for r in before] == [shape(r) for r in classic.rebalances if r.start_ms < 60000]
    assert {(r.group_protocol, r.rebalance_protocol) for r in before} == {(GroupProtocol.CLASSIC,
                                                                            RebalanceProtocol.EAGER)}
    assert all(r.leader is not None for r in before)
    assert any(r.group_protocol is GroupProtocol.CONSUMER for r in upgrade.rebalances)


def test_a_restart_while_the_old_process_is_still_closing_starts_the_new_one() -> None:
    """Consumer-group soak, seed 0 schedule 115 (shrunk): a restart during a GC pause. The paused
    process can only close (leave heartbeat) when the pause ends; the new process must start at
    the restart's time anyway (as on the classic side), or the group ends Empty with the consumer
    running."""
    schedule = {
        "group": "g", "group_protocol": "consumer", "topics": {"p-0": 1},
        "config": {"session_timeout_ms": 15000, "heartbeat_interval_ms": 5000, "max_poll_interval_ms": 15000,
                   "consumer_session_timeout_ms": 15000, "consumer_heartbeat_interval_ms": 5000,
                   "network_latency_ms": 0},
        "consumers": [{"id": "c1", "pattern": "p-.*"}],
        "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 14366, "pause": "c1", "for_ms": 2125},
                   {"at_ms": 15808, "restart": "c1", "after_ms": 0}],
        "end_ms": 116491,
    }
    result = run_simulation(schedule)
    assert (result.final_group_state, result.final_members) == ("Stable", ("c1",))
    assert check_schedule(schedule) == []


def test_a_hold_kept_through_a_fencing_is_the_consumers_own_once_the_group_assigns_it_again() -> None:
    """Consumer-group soak, seed 0 schedules 42 and 56: a consumer stalled past
    max.poll.interval.ms leaves the group (fenced), runs its queued onPartitionsAssigned when the
    stall ends, rejoins and is given the same partitions: from the coordinator's new assignment
    on, its hold is its own again (a fenced hold is followed by the consumer's own, with no gap),
    and its commits under the new epoch are not commits of a fenced hold."""
    for index in (42, 56):
        schedule = random_schedule(schedule_seed(0, index), GroupProtocol.CONSUMER)
        seen = observation_of(run_simulation(schedule))
        assert seen.held is not None
        holds = {(h.member, h.incarnation, h.partition, h.start_ms): h for h in seen.held}
        for hold in seen.held:
            after = holds.get((hold.member, hold.incarnation, hold.partition, hold.end_ms))
            if hold.fenced_ms is not None and after is not None:
                assert after.fenced_ms is None
        assert check_schedule(schedule) == []


def test_consumer_group_schedules_keep_the_classic_draws() -> None:
    for index in range(5):
        seed = schedule_seed(0, index)
        classic, consumer = random_schedule(seed), random_schedule(seed, GroupProtocol.CONSUMER)
        assert consumer["group_protocol"] == "consumer"
        assert consumer["events"] == classic["events"] and consumer["consumers"] == classic["consumers"]
        assert consumer["config"].get("network_loss") == classic["config"].get("network_loss")


def test_a_migrating_groups_classic_phase_fences_a_static_member_left_out_of_a_generation() -> None:
    """Static b is frozen by a GC pause (25 s) longer than the rebalance timeout (15 s) and
    shorter than its session (30 s): c's join completes the join phase without b, and Kafka keeps
    a static member that has not rejoined (GroupCoordinator.onCompleteJoin removes only dynamic
    ones), so b still believes it holds t-2 and t-3 while the generation without it hands them
    on. Its hold is fenced from then (36,006 ms), in the classic phase of a migrating group
    exactly as in a classic group (before, the consumer-group side left it unfenced)."""
    def run(upgrade: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        result = run_simulation({
            "group": "g", "group_protocol": "classic", "topics": {"t": 4},
            "config": {"session_timeout_ms": 30000, "heartbeat_interval_ms": 3000, "max_poll_interval_ms": 15000,
                       "network_latency_ms": 2},
            "consumers": [{"id": n, "subscribe": ["t"], "strategies": ["range"], "group_instance_id": f"s-{n}"}
                          for n in ("a", "b")] + [{"id": "c", "subscribe": ["t"], "strategies": ["range"]}],
            "produce": [{"topic": "t", "records_per_s": 50, "keys": 8}],
            "events": [{"at_ms": 0, "join": "a"}, {"at_ms": 0, "join": "b"},
                       {"at_ms": 20000, "pause": "b", "for_ms": 25000}, {"at_ms": 21000, "join": "c"}, *upgrade],
            "end_ms": 90000})
        held = result.held
        return [row for row in zip(held.partition.tolist(), held.member.tolist(), held.generation.tolist(),
                                   held.start_ms.tolist(), held.end_ms.tolist(), held.fenced_ms.tolist(), strict=True)
                if row[1] == "b"]

    expected = [("t-2", "b", 1, 6008, 45004, 36006), ("t-3", "b", 1, 6008, 45004, 36006),
                ("t-2", "b", 2, 45012, 90000, -1)]
    assert run([]) == expected
    assert run([{"at_ms": 80000, "upgrade": "a"}]) == expected
