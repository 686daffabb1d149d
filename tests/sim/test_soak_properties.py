"""The soak's invariants as a property over random schedules (the soak command runs the big
numbers on Spark): no two owners at once, only owners consume, commits never go backwards, no
record lost, the group settles. About 1,500 schedules in total."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.sim.invariants import check_schedule
from kafka_rebalance.sim.schedules import random_schedule, schedule_yaml

PROPERTY = settings(max_examples=1500, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


@pytest.mark.slow  # a minute of CPU; the soak regression folders replay what it has found
@PROPERTY
@given(st.integers(min_value=0, max_value=2**48))
def test_random_schedules_keep_every_invariant(seed):
    schedule = random_schedule(seed)
    violations = check_schedule(schedule)
    assert violations == [], f"{violations}\n{schedule_yaml(schedule)}"
