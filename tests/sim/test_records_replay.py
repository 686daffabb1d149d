"""``__consumer_offsets`` is the log: for soak schedules (consumer groups, and groups migrating
either way), the records the coordinators wrote up to any step, replayed as a new coordinator
replays them (``records.replay``: Kafka's ``GroupMetadataManager.replay``), rebuild the consumer
group the live coordinator holds at that step: epochs, members with every field and their
current assignments, targets, subscription metadata, offsets; and while the group is classic, a
replay finds no consumer group."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.protocol.modern.consumer.coordinator import ConsumerGroupCoordinator
from kafka_rebalance.protocol.modern.consumer.records import replay
from kafka_rebalance.sim.consumer_group import ConsumerGroupSide
from kafka_rebalance.sim.events import ConsumerGroupEvent
from kafka_rebalance.sim.scenario import load_scenario
from kafka_rebalance.sim.schedules import random_schedule, schedule_yaml

PROPERTY = settings(max_examples=40, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


def group_state(group: ConsumerGroupCoordinator) -> dict[str, Any]:
    """What the records must carry of a group (timers and caches aside)."""
    return {
        "epochs": (group.group_epoch, group.assignment_epoch),
        "members": list(group.members.items()),  # in the coordinator's order: the assignors read it
        "static": group.static_members,
        "targets": dict(group.target.items()),
        "subscription_metadata": group.subscription_metadata,
        "partition_epochs": {t: e for t, e in group.partition_epochs.items() if e},
        "offsets": group.offsets,
        "state": group.state,
    }


class ReplayChecked(ConsumerGroupSide):
    """The consumer group side, checking after every event that wrote records that a replay of
    the log so far is the live group."""

    checks = 0

    def _handle(self, time: int, seq: int, event: ConsumerGroupEvent) -> None:
        before = len(self.offsets_records)
        super()._handle(time, seq, event)
        if len(self.offsets_records) != before:
            self.check_replay()

    def check_replay(self) -> None:
        groups, _ = replay(self.offsets_records, self.topics, self.group_config)
        group_id = self.scenario.group
        group = self.shard.consumer_groups.get(group_id)
        if group is None:  # classic, or no group yet
            assert group_id not in groups, "a group the coordinator does not hold as a consumer group replays as one"
            return
        self.checks += 1
        live = group_state(group)
        if group_id not in groups:  # no record written yet: a new, empty consumer group
            assert live == group_state(ConsumerGroupCoordinator(group_id, self.topics)) | {"offsets": live["offsets"]}
            assert not live["offsets"]
            return
        assert group_state(groups[group_id]) == live, f"at {self.now} ms"


def run_checked(schedule: dict[str, Any]) -> int:
    scenario = load_scenario(schedule)
    if not scenario.uses_consumer_protocol:
        return 0
    side = ReplayChecked(scenario)
    try:
        side.run()
        side.check_replay()
    except AssertionError as error:
        raise AssertionError(f"{error}\n{schedule_yaml(schedule)}") from error
    return side.checks


@PROPERTY
@given(st.integers(min_value=0, max_value=2**48))
def test_replaying_a_consumer_groups_records_rebuilds_it(seed: int) -> None:
    run_checked(random_schedule(seed, GroupProtocol.CONSUMER))


@PROPERTY
@given(st.integers(min_value=0, max_value=2**48), st.sampled_from([GroupProtocol.CLASSIC, GroupProtocol.CONSUMER]))
def test_replaying_a_migrating_groups_records_rebuilds_it(seed: int, start: GroupProtocol) -> None:
    run_checked(random_schedule(seed, start, migrating=True))


def test_the_property_checks_something() -> None:
    """The schedules above write records and the check runs: a guard against a vacuous pass."""
    assert sum(run_checked(random_schedule(seed, GroupProtocol.CONSUMER)) for seed in range(5)) > 20
