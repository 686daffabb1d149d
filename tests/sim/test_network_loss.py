"""The simulator's lossy network (``config.network_loss``): requests and responses lost, the
consumers' request timeouts and retries, and what a run keeps (same seed, same run; no loss,
the run it always was; invariants hold and the group settles once the network is sound)."""

from __future__ import annotations

from collections import Counter

import pytest

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.sim import load_scenario
from kafka_rebalance.sim.classic_side import ClassicGroupSide
from kafka_rebalance.sim.consumer_group import ConsumerGroupSide
from kafka_rebalance.sim.invariants import check_observation
from kafka_rebalance.sim.observation import observation_of
from kafka_rebalance.sim.run import simulate
from tests.sim.helpers import SCENARIOS, base


def lossy(loss=0.2, until_ms=60000, end_ms=200000, seed=0, consumers=("c1", "c2", "c3")):
    scenario = base(list(consumers), [{"at_ms": 0, "join": c} for c in consumers] + [
        {"at_ms": 20000, "crash": consumers[0]}, {"at_ms": 30000, "join": consumers[0]},
        {"at_ms": 40000, "coordinator_failover": {}}],
        topics={"t0": 6}, end_ms=end_ms, network_loss=loss, network_loss_until_ms=until_ms,
        network_jitter_ms=20, session_timeout_ms=10000, max_poll_interval_ms=20000)
    scenario["seed"] = seed
    return scenario


@pytest.mark.parametrize(("value", "problem"), [
    (1, "less than 1"), (-0.1, "greater than or equal to 0"), ("often", "valid number"),
])
def test_network_loss_is_a_probability(value, problem):
    with pytest.raises(InvalidInput) as error:
        load_scenario(lossy(loss=value))
    assert error.value.field == "config.network_loss" and problem in error.value.problem


def rolling_upgrade(loss=0.2, until_ms=100000, seed=0):
    names = ("c1", "c2", "c3")
    scenario = lossy(loss=loss, until_ms=until_ms, seed=seed, consumers=names)
    scenario["events"] = ([{"at_ms": i * 100, "join": n} for i, n in enumerate(names)]
                          + [{"at_ms": 20000 * (i + 1), "upgrade": n, "after_ms": 3000} for i, n in enumerate(names)])
    return scenario


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("group", ["consumer", "rolling-upgrade"])
def test_consumer_groups_lose_messages_and_break_no_invariant(seed, group):
    """The same network for KIP-848 groups and for a group migrating to them: heartbeats and their
    answers lost, NetworkClient timing the heartbeat out after request.timeout.ms and closing
    the connection (answers still on it are never read), the heartbeat manager retrying after
    its backoff (AbstractHeartbeatRequestManager.onFailure); a classic member times its own
    requests out. The soak's invariants hold, and once the network is sound the group is Stable
    with every consumer in it."""
    scenario = {**lossy(seed=seed), "group_protocol": "consumer"} if group == "consumer" else rolling_upgrade(seed=seed)
    side = ConsumerGroupSide(load_scenario(scenario))
    result = side.run()
    assert check_observation(observation_of(result)) == []
    assert result.final_group_state == "Stable" and sorted(result.final_members) == ["c1", "c2", "c3"]


def test_a_consumer_group_heartbeat_lost_times_out_and_is_retried_on_a_new_connection():
    runs = [ConsumerGroupSide(load_scenario({**lossy(loss=0.3, seed=seed), "group_protocol": "consumer"}))
            for seed in range(4)]
    for side in runs:
        side.run()
    reconnects = [p.reconnects for side in runs for p in side.processes.values()]
    assert sum(reconnects) > 0
    assert simulate({**lossy(seed=3), "group_protocol": "consumer"}) == simulate({**lossy(seed=3), "group_protocol": "consumer"})


def test_no_loss_is_the_run_it_always_was():
    """network_loss 0 (the default) changes nothing: no draw, no timer, OK heartbeats elided."""
    scenario = load_scenario(SCENARIOS / "trigger-coordinator-change.yaml").model_dump(mode="json")
    explicit = {**scenario, "config": {**scenario["config"], "network_loss": 0, "request_timeout_ms": 1000}}
    assert simulate(explicit) == simulate(scenario)


def test_a_lossy_run_is_deterministic():
    assert simulate(lossy(seed=3)) == simulate(lossy(seed=3))
    assert simulate(lossy(seed=3)) != simulate(lossy(seed=4))


@pytest.mark.parametrize("seed", range(6))
def test_lost_messages_break_no_invariant_and_the_group_settles(seed):
    """With a fifth of all messages lost for a minute (crash, rejoin and a failover meanwhile),
    no partition has two owners, only owners consume, commits never go backwards, no record is
    lost, and once the network is sound the group is Stable with every partition owned."""
    result = ClassicGroupSide(load_scenario(lossy(seed=seed))).run()
    assert check_observation(observation_of(result)) == []
    assert result.final_group_state == "Stable" and sorted(result.final_members) == ["c1", "c2", "c3"]


def test_a_join_handled_but_never_answered_leaves_its_member_id_behind():
    """The interesting loss: the coordinator handled a JoinGroup and gave out a member id, the
    response never arrived. The client times the request out and joins again without that id
    (AbstractCoordinator: generation.memberId is still empty), so it gets a second id; the first
    is removed by the coordinator (a pending member expires after the session timeout, KIP-394;
    one that joined a rebalance is expired by the heartbeat deadline) and the group ends with
    one member per consumer."""
    found = 0
    for seed in range(12):
        sim = ClassicGroupSide(load_scenario(lossy(loss=0.3, seed=seed)))
        result = sim.run()
        ids_per_process = Counter(sim.member_names.values())
        if any(count > sim.incarnations[name] for name, count in ids_per_process.items()):
            found += 1
            assert sorted(result.final_members) == ["c1", "c2", "c3"]
            assert check_observation(observation_of(result)) == []
    assert found > 0


def test_ownership_is_as_of_the_generation_whose_assignment_gave_it():
    """Found by the soak (seed 0, schedule 426), shrunk: c2's SyncGroup of generation 3 and its
    OffsetFetch were both lost; the fetch, retried, answered after the SyncGroup had failed, so
    c2 held generation 1's partitions with the generation of its last JoinGroup (3), whose
    assignment gave one of them to nobody. Its ownership counts as of generation 1."""
    schedule = {
        "name": "sync-lost-while-fetching", "group": "soak-group-67",
        "config": {"session_timeout_ms": 15000, "heartbeat_interval_ms": 3000, "max_poll_interval_ms": 8000,
                   "group_initial_rebalance_delay_ms": 1000, "auto_commit_interval_ms": 1000,
                   "metadata_max_age_ms": 3000, "network_latency_ms": 0, "network_jitter_ms": 0,
                   "coordinator_load_ms": 0, "idle_poll_ms": 100, "network_loss": 0.05,
                   "network_loss_until_ms": 38039, "request_timeout_ms": 5000},
        "topics": {"t0": 1, "t1": 1, "t2": 1},
        "consumers": [{"id": "c1", "strategies": ["cooperative-sticky"], "subscribe": ["t0", "t1"]},
                      {"id": "c2", "strategies": ["cooperative-sticky"], "subscribe": ["t0", "t1", "t2"]}],
        "events": [{"at_ms": 0, "join": "c2"}, {"at_ms": 9789, "join": "c1"}, {"at_ms": 10880, "leave": "c1"},
                   {"at_ms": 11264, "restart": "c1", "after_ms": 0}],
        "seed": 153947378519306, "end_ms": 71264,
    }
    result = ClassicGroupSide(load_scenario(schedule)).run()
    assert check_observation(observation_of(result)) == []
    c2_t1 = [g for p, m, g in zip(result.ownership.partition.tolist(), result.ownership.member.tolist(),
                                  result.ownership.generation.tolist(), strict=True) if p == "t1-0" and m == "c2"]
    assert c2_t1 == [1]
