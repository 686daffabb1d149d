"""The soak's invariants as a property over random schedules (the soak command runs the big
numbers on Spark): no two owners at once, only owners consume, commits never go backwards, no
record lost, the group settles. 250 classic and 120 consumer-group schedules here; the soak
command runs 10,000 of each (docs/performance.md)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.sim.invariants import check_schedule
from kafka_rebalance.sim.schedules import random_schedule, schedule_yaml


def _property(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


def _check(seed: int, protocol: GroupProtocol) -> None:
    schedule = random_schedule(seed, protocol)
    violations = check_schedule(schedule)
    assert violations == [], f"{violations}\n{schedule_yaml(schedule)}"


@pytest.mark.slow  # tens of seconds of CPU; the soak regression folders replay what it has found
@_property(250)
@given(st.integers(min_value=0, max_value=2**48))
def test_random_classic_schedules_keep_every_invariant(seed):
    _check(seed, GroupProtocol.CLASSIC)


@pytest.mark.slow
@_property(120)
@given(st.integers(min_value=0, max_value=2**48))
def test_random_consumer_group_schedules_keep_every_invariant(seed):
    _check(seed, GroupProtocol.CONSUMER)
