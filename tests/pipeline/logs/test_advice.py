"""Advice with the numbers that justify it, from stories told on lines written from Kafka's
format strings (GroupCoordinator.scala 3.x wordings)."""

from __future__ import annotations

from kafka_rebalance.pipeline.advice import advise
from kafka_rebalance.pipeline.logparse.parse import parse_lines
from kafka_rebalance.pipeline.logparse.story import tell
from tests.conftest import TEST_SYSLOG

LINE = "[2024-05-01 {h:02d}:{m:02d}:{s:02d},000] INFO [GroupCoordinator 1]: {msg} (kafka.coordinator.group.GroupCoordinator)"


def _line(second: int, msg: str) -> str:
    return LINE.format(h=10 + second // 3600, m=second // 60 % 60, s=second % 60, msg=msg)


def _uuid(i: int) -> str:
    return f"{i:08x}-1111-4222-8333-444455556666"


def _advice(lines: list[str]) -> dict[str, str]:
    events = [r for r in parse_lines(lines, syslog=TEST_SYSLOG) if r["kind"] is not None]
    story = tell("default", "g", events)
    return {a.rule: a.finding for a in advise(story["findings"])}


def _rebalance(second: int, old: int, reason: str) -> list[str]:
    return [_line(second, f"Preparing to rebalance group g in state Stable with old generation {old} "
                          f"(__consumer_offsets-1) (reason: {reason})"),
            _line(second + 3, f"Stabilized group g generation {old + 1} (__consumer_offsets-1) with 3 members"),
            _line(second + 3, f"Assignment received from leader c-0 for group g for generation {old + 1}")]


def test_a_rolling_restart_is_counted_against_static_membership():
    lines, generation = [], 10
    for i in range(3):  # each consumer leaves, then comes back with a new member id
        old_member, new_member = f"consumer-g-{i}-{_uuid(i)}", f"consumer-g-{i}-{_uuid(100 + i)}"
        lines += _rebalance(i * 60, generation, f"Removing member {old_member} on LeaveGroup; client reason: the "
                                                "consumer is being closed")
        lines += _rebalance(i * 60 + 20, generation + 1, f"Adding new member {new_member} with group instance id "
                                                         "None; client reason: not provided")
        generation += 2
    advice = _advice(lines)
    assert advice["restarts"].startswith("3 rebalances were members restarting")
    assert "storms" in advice


def test_session_timeouts_clustered_in_time():
    lines = []
    for i in range(4):
        member = f"consumer-g-{i}-{_uuid(i)}"
        lines.append(_line(i * 5, f"Member {member} in group g has failed, removing it from the group"))
    lines += _rebalance(0, 7, f"removing member consumer-g-0-{_uuid(0)} on heartbeat expiration")
    assert _advice(lines)["clustered-timeouts"] == "4 different clients timed out within one minute"


def test_the_same_consumer_leaving_on_poll_timeout_at_a_period():
    lines, generation = [], 3
    member = f"consumer-g-1-{_uuid(1)}"
    for i in range(4):
        lines += _rebalance(i * 300, generation, f"Removing member {member} on LeaveGroup; client reason: consumer "
                                                 "poll timeout has expired.")
        generation += 1
    finding = _advice(lines)["poll-timeouts"]
    assert finding == "4 poll-timeout leave(s); consumer-g-1 left 4 times, every ~5.0 min"
