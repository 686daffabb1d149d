"""The "Must show" behaviours of the simulator, on small scenarios."""

from __future__ import annotations

import json

import pytest

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.sim import load_scenario, run_simulation, simulate
from tests.sim.helpers import SCENARIOS, base


def owned_intervals(result, partition):
    return [(o["member"], o["start_ms"], o["end_ms"]) for o in result["ownership"] if o["partition"] == partition]


def test_cooperative_join_of_consumer3_takes_two_rebalances_without_stop_the_world():
    result = simulate(SCENARIOS / "cooperative-join.yaml")
    first, second, third = result["rebalances"]
    assert first["assignment"] == {"consumer1": ["t0-0", "t0-2"], "consumer2": ["t0-1"]}
    # The first rebalance after consumer3 joins revokes one partition and assigns nothing new.
    assert second["revoked"] == {"consumer1": ["t0-2"], "consumer2": [], "consumer3": []}
    assert all(parts == [] for parts in second["added"].values())
    assert second["assignment"]["consumer3"] == []
    # The follow-up gives it to consumer3.
    assert third["added"] == {"consumer1": [], "consumer2": [], "consumer3": ["t0-2"]}
    assert result["final_assignment"] == {"consumer1": ["t0-0"], "consumer2": ["t0-1"], "consumer3": ["t0-2"]}
    # Partitions that stay are consumed throughout: one unbroken interval each.
    for partition, owner in (("t0-0", "consumer1"), ("t0-1", "consumer2")):
        [(member, start, end)] = owned_intervals(result, partition)
        assert member == owner and first["end_ms"] < start < first["end_ms"] + 10 and end == 60000
    metrics = result["metrics"]
    assert metrics["stop_the_world_partition_ms"] == 0
    assert metrics["partitions_moved"] == 1
    assert metrics["rebalances"] == 3
    assert metrics["records_lost"] == 0


def test_eager_join_of_consumer3_revokes_everything_in_one_rebalance():
    result = simulate(SCENARIOS / "eager-join.yaml")
    first, second = result["rebalances"]
    assert first["assignment"] == {"consumer1": ["t0-0", "t0-2"], "consumer2": ["t0-1"]}
    assert second["protocol"] == "EAGER"
    assert second["revoked"]["consumer1"] == ["t0-0", "t0-2"] and second["revoked"]["consumer2"] == ["t0-1"]
    assert result["final_assignment"] == {"consumer1": ["t0-0"], "consumer2": ["t0-1"], "consumer3": ["t0-2"]}
    # Every partition is unowned during the rebalance, including the two that keep their owner.
    for partition in ("t0-0", "t0-1", "t0-2"):
        intervals = owned_intervals(result, partition)
        assert len(intervals) == 2
        gap_start, gap_end = intervals[0][2], intervals[1][1]
        assert second["start_ms"] <= gap_start < second["end_ms"] < gap_end
    assert result["metrics"]["stop_the_world_partition_ms"] > 0
    assert result["metrics"]["rebalances"] == 2


@pytest.mark.parametrize("heartbeat_ms,session_ms,crash_at", [(3000, 10000, 30000), (3000, 10000, 31500), (1000, 6000, 40100)])
def test_crash_is_noticed_one_session_timeout_after_the_last_heartbeat(heartbeat_ms, session_ms, crash_at):
    scenario = base(["c1", "c2"], [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c2"}, {"at_ms": crash_at, "crash": "c2"}],
                    heartbeat_interval_ms=heartbeat_ms, session_timeout_ms=session_ms)
    result = simulate(scenario)
    after = [r for r in result["rebalances"] if r["start_ms"] > crash_at]
    assert after, "the crash was never noticed"
    noticed = after[0]["start_ms"]
    latency = 2
    assert crash_at + session_ms - heartbeat_ms <= noticed <= crash_at + session_ms + latency
    assert "heartbeat expiration" in after[0]["reason"]
    assert result["final_assignment"]["c1"] == ["t0-0", "t0-1", "t0-2"]


def test_clean_leave_rebalances_at_once():
    scenario = base(["c1", "c2"], [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c2"}, {"at_ms": 30000, "leave": "c2"}])
    result = simulate(scenario)
    second = result["rebalances"][1]
    assert second["start_ms"] == 30000 + 2  # LeaveGroup's one-way latency
    assert "LeaveGroup" in second["reason"]
    assert result["final_assignment"] == {"c1": ["t0-0", "t0-1", "t0-2"], "c2": []}


def test_stall_past_max_poll_interval_leaves_and_rebalances():
    scenario = base(["c1", "c2"], [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c2"},
                                   {"at_ms": 20000, "stall": "c2", "for_ms": 100000}],
                    max_poll_interval_ms=30000, end_ms=200000)
    result = simulate(scenario)
    left = [r for r in result["rebalances"] if r["start_ms"] > 20000]
    assert left[0]["start_ms"] == 20000 + 30000 + 2
    assert "poll timeout" in left[0]["reason"]
    assert left[0]["members"] == ["c1"]
    # When the poll loop comes back, the member rejoins.
    assert any(r["start_ms"] >= 120000 and "c2" in r["members"] for r in left)


def test_static_member_back_within_session_timeout_causes_no_rebalance():
    consumers = [{"id": "c1", "strategies": ["cooperative-sticky"], "subscribe": ["t0"], "group_instance_id": "i1"},
                 {"id": "c2", "strategies": ["cooperative-sticky"], "subscribe": ["t0"], "group_instance_id": "i2"}]
    scenario = base(consumers, [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c2"},
                                {"at_ms": 30000, "restart": "c2", "after_ms": 5000}], session_timeout_ms=30000)
    result = simulate(scenario)
    assert len(result["rebalances"]) == 1
    before = result["rebalances"][0]["assignment"]["c2"]
    assert result["final_assignment"]["c2"] == before
    # c2's partitions come back to c2 itself after the bounce.
    for partition in before:
        assert [m for m, _, _ in owned_intervals(result, partition)] == ["c2", "c2"]


def test_static_member_back_after_session_timeout_rebalances():
    consumers = [{"id": "c1", "strategies": ["cooperative-sticky"], "subscribe": ["t0"], "group_instance_id": "i1"},
                 {"id": "c2", "strategies": ["cooperative-sticky"], "subscribe": ["t0"], "group_instance_id": "i2"}]
    scenario = base(consumers, [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c2"},
                                {"at_ms": 30000, "restart": "c2", "after_ms": 20000}], session_timeout_ms=10000)
    result = simulate(scenario)
    assert len(result["rebalances"]) >= 2


def test_members_joining_within_the_initial_delay_land_in_one_generation():
    events = [{"at_ms": t, "join": f"c{i}"} for i, t in enumerate([0, 1000, 2500, 4000, 5500])]
    scenario = base([f"c{i}" for i in range(5)], events)
    result = simulate(scenario)
    first = result["rebalances"][0]
    assert first["generation"] == 1
    assert sorted(first["members"]) == [f"c{i}" for i in range(5)]
    assert len(result["rebalances"]) == 1


def test_a_member_joining_after_the_initial_delay_causes_a_second_generation():
    events = [{"at_ms": 0, "join": "c0"}, {"at_ms": 10000, "join": "c1"}]
    result = simulate(base(["c0", "c1"], events))
    assert [r["members"] for r in result["rebalances"]][:1] == [["c0"]]
    assert len(result["rebalances"]) >= 2


def test_same_scenario_and_seed_give_byte_identical_json():
    scenario = load_scenario(SCENARIOS / "cooperative-join.yaml")
    a = json.dumps(simulate(scenario, seed=5))
    b = json.dumps(simulate(scenario, seed=5))
    assert a == b


@pytest.mark.parametrize("mutation,field", [
    (lambda s: s["events"].append({"at_ms": 5, "join": "ghost"}), "events[2].join"),
    (lambda s: s["consumers"][0].update(strategies=["nope"]), "consumers[0].strategies"),
    (lambda s: s["events"][0].update(at_ms=-1), "events[0].at_ms"),
    (lambda s: s.update(end_ms=-5), "end_ms"),
    (lambda s: s["events"].append({"at_ms": 5, "pause": "c1"}), "events[2]"),
    (lambda s: s["consumers"][0].update(strategies=["range", "cooperative-sticky"], pattern="t.*"), "consumers[0]"),
    (lambda s: s["produce"][0].update(topic="missing"), "produce[0].topic"),
])
def test_bad_scenarios_name_the_field(mutation, field):
    scenario = base(["c1", "c2"], [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c2"}])
    mutation(scenario)
    with pytest.raises(InvalidInput) as caught:
        load_scenario(scenario)
    assert str(caught.value).startswith(field)
    assert "\n" not in str(caught.value)


def test_malformed_yaml_is_one_line():
    with pytest.raises(InvalidInput, match="invalid YAML"):
        load_scenario("topics: {t0: 1\nconsumers: [")


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_runs_and_loses_nothing(path):
    run = run_simulation(path)
    assert run.to_json()["metrics"]["records_lost"] == 0
    assert run.ownership_conflicts == 0
    assert run.offset_regressions == 0


def test_slow_processing_storms_and_the_fix_stops_it():
    storm = simulate(SCENARIOS / "kafka-python-storm.yaml")["metrics"]
    fixed = simulate(SCENARIOS / "kafka-python-storm-fixed.yaml")["metrics"]
    assert storm["rebalances"] >= 10 and storm["records_processed_twice"] > 0
    assert fixed["rebalances"] == 1 and fixed["records_processed_twice"] == 0


def test_old_client_heartbeats_only_with_poll_get_expired():
    result = simulate(SCENARIOS / "old-client-heartbeat-with-poll.yaml")
    assert result["metrics"]["rebalances"] >= 10
    assert any("heartbeat expiration" in r["reason"] for r in result["rebalances"])
    modern = load_scenario(SCENARIOS / "old-client-heartbeat-with-poll.yaml").model_dump()
    modern["config"]["heartbeat_with_poll"] = False
    modern["config"]["max_poll_interval_ms"] = 300000
    assert simulate(modern)["metrics"]["rebalances"] == 1


@pytest.mark.parametrize("name,reason", [
    ("trigger-pattern-new-topic", "subscribed topics changed"),
    ("trigger-partition-increase", "partition count"),
])
def test_each_trigger_rebalances(name, reason):
    result = simulate(SCENARIOS / f"{name}.yaml")
    assert len(result["rebalances"]) >= 2
    assert reason in result["rebalances"][1]["reason"]
    owned = sorted(p for parts in result["final_assignment"].values() for p in parts)
    assert owned and result["metrics"]["records_lost"] == 0


def test_eager_sticky_stays_sticky_through_user_data():
    """EAGER members revoke everything before rejoining; StickyAssignor's user data still tells
    the leader who had what, so a leave moves only the leaver's partitions."""
    events = [{"at_ms": 0, "join": c} for c in ("c1", "c2", "c3")] + [{"at_ms": 30000, "leave": "c3"}]
    result = simulate(base(["c1", "c2", "c3"], events, strategies=["sticky"], topics={"t0": 6}))
    before, after = result["rebalances"][0]["assignment"], result["rebalances"][-1]["assignment"]
    for member in ("c1", "c2"):
        assert set(before[member]) <= set(after[member])
    assert result["metrics"]["partitions_moved"] == len(before["c3"])


def test_stop_the_world_is_attributed_to_each_rebalance():
    eager = simulate(SCENARIOS / "eager-join.yaml")
    pauses = [r["stop_the_world_partition_ms"] for r in eager["rebalances"]]
    assert sum(pauses) == eager["metrics"]["stop_the_world_partition_ms"] and pauses[-1] > 0
    cooperative = simulate(SCENARIOS / "cooperative-join.yaml")
    assert all(r["stop_the_world_partition_ms"] == 0 for r in cooperative["rebalances"])


def test_events_are_validated_in_time_order_not_list_order():
    scenario = base(["c1"], [
        {"at_ms": 0, "join": "c1"},
        {"at_ms": 50000, "create_topic": {"name": "t1", "partitions": 2}},
        {"at_ms": 40000, "add_partitions": {"topic": "t1", "count": 4}},
    ])
    with pytest.raises(InvalidInput, match=r"events\[2\]\.add_partitions\.topic: unknown topic 't1'"):
        load_scenario(scenario)
