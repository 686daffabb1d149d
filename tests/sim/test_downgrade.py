"""The online downgrade in the simulator: consumers of a consumer group restarted one by one
with group.protocol=classic (``downgrade`` events). When the last consumer-protocol member leaves
while classic members remain, the group converts back to a classic group and rebalances. Facts
from Kafka's GroupMetadataManagerTest (group-coordinator/src/test/java/org/apache/kafka/coordinator/group/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.model import InvalidInput, RebalanceProtocol
from kafka_rebalance.protocol.logrecords import (
    AssignmentReceived,
    ConsumerGroupConverted,
    ConsumerGroupEpochBumped,
    ConsumerMemberFenced,
    ConsumerMemberLeft,
    PreparingRebalance,
)
from kafka_rebalance.protocol.modern.consumer.migration import downgrade_reason
from kafka_rebalance.sim import load_scenario, run_simulation
from kafka_rebalance.sim.consumer_group import ConsumerGroupSide
from tests.sim.helpers import never_two_owners, settled_without_loss

EXAMPLE = Path(__file__).resolve().parents[2] / "examples/scenarios/consumer-groups/rolling-downgrade.yaml"
NAMES = ["a", "b", "c"]


def scenario(events: list[dict[str, Any]], group_protocol: str = "consumer", **fields: Any) -> Any:
    return load_scenario({
        "name": "downgrade", "group": "g", "group_protocol": group_protocol, "assignor": "uniform",
        "topics": {"t": 12},
        "consumers": [{"id": n, "subscribe": ["t"], "strategies": ["cooperative-sticky"]} for n in NAMES],
        "produce": [{"topic": "t", "records_per_s": 120, "keys": 100}],
        "events": [{"at_ms": i * 100, "join": n} for i, n in enumerate(NAMES)] + events,
        "end_ms": 200000, **fields,
    })


def records(run: Any, kind: type) -> list[Any]:
    return [logged.record for logged in run.log_records if isinstance(logged.record, kind)]


def last_epoch_before(run: Any, time_ms: int) -> int:
    return max(r.epoch for r in records(run, ConsumerGroupEpochBumped) if r.time_ms <= time_ms)


def held_at(run: Any, name: str, time_ms: int) -> set[str]:
    own = run.ownership
    return {own.partition[i] for i in range(len(own.partition))
            if own.member[i] == name and own.start_ms[i] <= time_ms < own.end_ms[i]}


def test_last_consumer_protocol_member_leaving_converts_the_group_back() -> None:
    """GroupMetadataManagerTest.testLastConsumerProtocolMemberLeavingConsumerGroup: when the last
    member on the consumer protocol leaves, the group becomes a classic group whose generation is
    the group epoch, and a rebalance starts (convertToClassicGroup's prepareRebalance, reason
    "Downgrade group <g> from consumer to classic for member leaving."); the remaining members keep
    their assignment (ClassicGroup.fromConsumerGroup: the target assignment), so under
    cooperative-sticky they revoke nothing and only the leaver's partitions move."""
    run = run_simulation(scenario([{"at_ms": 30000, "downgrade": "a", "after_ms": 5000},
                                   {"at_ms": 60000, "downgrade": "b", "after_ms": 5000},
                                   {"at_ms": 90000, "downgrade": "c", "after_ms": 5000}]))
    [converted] = records(run, ConsumerGroupConverted)
    assert converted.direction == "downgrade"
    [preparing] = [r for r in records(run, PreparingRebalance) if r.time_ms == converted.time_ms]
    epoch = last_epoch_before(run, converted.time_ms)
    assert (preparing.state, preparing.old_generation, preparing.reason) == ("Stable", epoch, downgrade_reason("g"))
    # the last consumer-protocol member (c) left just then: no epoch bump for its leaving
    [left] = [r for r in records(run, ConsumerMemberLeft) if r.time_ms == converted.time_ms]
    assert not [r for r in records(run, ConsumerGroupEpochBumped) if r.time_ms == converted.time_ms]
    downgrade = next(r for r in run.rebalances if r.start_ms == converted.time_ms)
    assert downgrade.generation == epoch + 1 and downgrade.rebalance_protocol is RebalanceProtocol.COOPERATIVE
    assert set(downgrade.members) == {"a", "b"}
    assert all(not m.partitions for m in downgrade.revoked)
    for name in ("a", "b"):
        kept = held_at(run, name, converted.time_ms - 1)
        assert kept and kept <= held_at(run, name, downgrade.end_ms)  # nothing taken away
    assert left.member_id not in {a.member_id for r in records(run, AssignmentReceived) for a in r.assignment}
    result = run.to_json()
    assert run.final_group_state == "Stable" and sorted(run.final_members) == NAMES
    assert run.ownership_conflicts == 0 and result["metrics"]["records_lost"] == 0
    never_two_owners(result)


def test_last_consumer_protocol_member_session_timeout_converts_the_group_back() -> None:
    """GroupMetadataManagerTest.testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup: the
    last consumer-protocol member crashes; when its session expires it is fenced and the group
    converts back to classic, as when it leaves."""
    run = run_simulation(scenario([{"at_ms": 30000, "downgrade": "a", "after_ms": 5000},
                                   {"at_ms": 60000, "downgrade": "b", "after_ms": 5000},
                                   {"at_ms": 90000, "crash": "c"}, {"at_ms": 150000, "join": "c"}]))
    converted, upgraded = records(run, ConsumerGroupConverted)
    [fenced] = records(run, ConsumerMemberFenced)
    assert converted.direction == "downgrade"
    config = run.scenario.config  # the session ends one session timeout after c's last heartbeat
    assert converted.time_ms == fenced.time_ms
    assert 0 <= 90000 + config.consumer_session_timeout_ms - fenced.time_ms <= config.consumer_heartbeat_interval_ms
    # c comes back on the consumer protocol: its first heartbeat upgrades the classic group again
    assert upgraded.direction == "upgrade" and upgraded.time_ms > 150000
    assert run.final_group_state == "Stable" and sorted(run.final_members) == NAMES
    result = run.to_json()
    assert run.ownership_conflicts == 0 and result["metrics"]["records_lost"] == 0
    never_two_owners(result)


def test_no_downgrade_when_the_policy_forbids_it() -> None:
    """GroupMetadataManager.validateOnlineDowngradeWithFencedMember (policy ``upgrade``) and
    GroupMetadataManagerTest.testNoConversionWhenSizeExceedsClassicMaxGroupSize's counterpart:
    the member is removed with an epoch bump and the group stays a consumer group of classic members."""
    run = run_simulation(scenario([{"at_ms": 30000, "downgrade": "a", "after_ms": 5000},
                                   {"at_ms": 60000, "downgrade": "b", "after_ms": 5000},
                                   {"at_ms": 90000, "downgrade": "c", "after_ms": 5000}],
                                  config={"migration_policy": "upgrade"}))
    assert not records(run, ConsumerGroupConverted) and not records(run, PreparingRebalance)
    assert run.final_group_state == "Stable" and sorted(run.final_members) == NAMES
    never_two_owners(run.to_json())


def test_upgrade_then_downgrade_then_upgrade_again() -> None:
    """Both ways in one run (policy ``bidirectional``, Kafka's default): classic -> consumer on the
    first ConsumerGroupHeartbeat, back when the last consumer-protocol member leaves, and up again;
    each conversion continues the generation/epoch numbering (fromClassicGroup / fromConsumerGroup)."""
    events: list[dict[str, Any]] = []
    for round_start, action in ((20000, "upgrade"), (80000, "downgrade"), (140000, "upgrade")):
        events += [{"at_ms": round_start + 15000 * i, action: n, "after_ms": 3000} for i, n in enumerate(NAMES)]
    run = run_simulation(scenario(events, group_protocol="classic", end_ms=260000))
    assert [r.direction for r in records(run, ConsumerGroupConverted)] == ["upgrade", "downgrade", "upgrade"]
    generations = [r.generation for r in run.rebalances if r.end_ms is not None]
    assert generations == sorted(generations) and len(set(generations)) == len(generations)
    settled_without_loss(run, NAMES)


def test_example_rolling_downgrade_runs() -> None:
    """examples/scenarios/consumer-groups/rolling-downgrade.yaml."""
    simulation = ConsumerGroupSide(load_scenario(EXAMPLE.read_text()))
    run = simulation.run()
    assert [r.direction for r in records(run, ConsumerGroupConverted)] == ["downgrade"]
    assert run.final_group_state == "Stable"
    assert run.to_json()["metrics"]["records_lost"] == 0


@pytest.mark.parametrize(("events", "field"), [
    ([{"at_ms": 10, "downgrade": "nobody"}], "events[3].downgrade"),
    ([{"at_ms": 10, "downgrade": "a"}, {"at_ms": 20, "downgrade": "a"}], "events[4].downgrade"),
])
def test_bad_downgrade_events_name_the_field(events: list[dict[str, Any]], field: str) -> None:
    with pytest.raises(InvalidInput) as error:
        scenario(events)
    assert error.value.field == field


def test_a_downgrade_of_a_classic_consumer_is_refused() -> None:
    with pytest.raises(InvalidInput) as error:
        scenario([{"at_ms": 10, "downgrade": "a"}], group_protocol="classic")
    assert error.value.field == "events[3].downgrade" and "already uses the classic protocol" in error.value.problem


@settings(max_examples=20, deadline=None)
@given(st.permutations(NAMES), st.lists(st.integers(0, 60000), min_size=3, max_size=3),
       st.lists(st.tuples(st.integers(0, 120000), st.sampled_from(["crash", "restart", "join"]),
                          st.sampled_from(NAMES)), max_size=4),
       st.sampled_from(["range", "cooperative-sticky"]), st.sampled_from([0.0, 2.0]))
def test_random_rolling_downgrades_keep_the_invariants(order: list[str], times: list[int],
                                                       churn: list[tuple[int, str, str]], strategy: str,
                                                       cost: float) -> None:
    """Every consumer downgraded once, in any order and at any time, with crashes, restarts and
    joins in between: a partition never has two owners, no record is lost, and after a quiet
    period the group is Stable with every partition owned by exactly one member."""
    events: list[dict[str, Any]] = [{"at_ms": 0, "join": n} for n in NAMES]
    events += [{"at_ms": 20000 + t, "downgrade": n, "after_ms": 3000} for n, t in zip(order, sorted(times), strict=True)]
    events += [{"at_ms": at, kind: n} | ({"after_ms": 5000} if kind == "restart" else {}) for at, kind, n in churn]
    events += [{"at_ms": 200000, "join": n} for n in NAMES]  # whoever crashed comes back
    run = run_simulation(load_scenario({
        "name": "random-downgrade", "group": "g", "group_protocol": "consumer", "assignor": "uniform",
        "topics": {"t0": 5, "t1": 3},
        "consumers": [{"id": n, "subscribe": ["t0", "t1"], "strategies": [strategy],
                       "processing_ms_per_record": cost} for n in NAMES],
        "config": {"revocation_ms": 200, "network_jitter_ms": 3},
        "produce": [{"topic": "t0", "records_per_s": 50, "keys": 40}, {"topic": "t1", "records_per_s": 20, "keys": 20}],
        "events": events, "end_ms": 400000,
    }))
    settled_without_loss(run)
