from __future__ import annotations

import re

import pytest

from kafka_rebalance.protocol import logformat
from kafka_rebalance.protocol.classic.group import coordinator_partition
from kafka_rebalance.protocol.logformat import (
    FORMATTERS,
    PATTERNS,
    format_record,
    parse_coordinator_line,
    parse_rebalances,
)
from kafka_rebalance.protocol.logrecords import (
    RECORD_KINDS,
    AssignmentReceived,
    GroupEmpty,
    MemberAssignment,
    MemberFailed,
    MemberLeft,
    PreparingRebalance,
    Stabilized,
)
from kafka_rebalance.protocol.partitioner import murmur2, partition_for_key
from tests.conftest import DATA

SEED_LINES = [line for line in (DATA / "seeds" / "002_2dbaf8b85c23802f.txt").read_text(encoding="utf-8").splitlines()
              if "[GroupCoordinator" in line]


def test_every_seed_line_parses():
    assert len(SEED_LINES) == 14
    parsed = [parse_coordinator_line(line) for line in SEED_LINES]
    assert all(p is not None for p in parsed)
    assert parsed[0] == {"kind": "preparing_rebalance", "timestamp": "2019-07-17 15:20:37,266", "broker": 0,
                         "group": "answer_action", "state": None, "old_generation": 741, "reason": None,
                         "partition": 9, "time_ms": parsed[0]["time_ms"]}
    failed = [p for p in parsed if p["kind"] == "member_failed"]
    assert failed[0]["member"] == "kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f"


def test_seed_rebalances_are_reconstructed():
    rebalances = parse_rebalances(SEED_LINES)
    assert [(r["group"], r["old_generation"], r["generation"], r["empty"]) for r in rebalances] == [
        ("answer_action", 741, 742, True), ("answer_action", 742, 743, False),
        ("illidan-c", 158651, 158652, False), ("illidan-c", 158652, None, False)]
    assert rebalances[1]["end_ms"] - rebalances[1]["start_ms"] == 30002
    assert len(rebalances[2]["failed_members"]) == 2
    assert rebalances[3]["failed_members"] == ["kafka-python-1.4.7-0094bb59-7cc1-4c80-9020-7c10c61bae98"]
    assert rebalances[3]["end_ms"] is None


def test_patterns_use_only_numbered_groups_and_java_safe_syntax():
    for pattern in [*PATTERNS.values(), logformat.GROUP_COORDINATOR_LINE_PATTERN]:
        assert "(?P<" not in pattern and "(?<" not in pattern
        assert "++" not in pattern and "*+" not in pattern
        re.compile(pattern)


RECORDS = [
    PreparingRebalance(5, "my-group", "Stable", 3,
                       "Adding new member c-1 with group instance id Some(x); client reason: (nested) parens"),
    Stabilized(6, "my-group", 4, ("c-1", "c-2"), "c-1", "range"),
    AssignmentReceived(7, "my-group", 4, "c-1", 1, (MemberAssignment("c-1", ("t-0",)), MemberAssignment("c-2", ()))),
    MemberFailed(8, "my-group", "c-2"),
    MemberLeft(9, "my-group", "c-3", "the consumer is being closed"),
    GroupEmpty(10, "my-group", 5),
]
EXPECTED = [  # what each record's line parses back to (the fields the line carries)
    {"old_generation": 3, "reason": RECORDS[0].reason},
    {"generation": 4, "members": 2},
    {"generation": 4, "members": 2, "leader": "c-1", "static_members": 1},
    {"member": "c-2"},
    {"member": "c-3", "reason": "the consumer is being closed"},
    {"generation": 5},
]


def test_every_record_kind_has_a_pattern_and_a_formatter():
    assert tuple(PATTERNS) == RECORD_KINDS == tuple(r.KIND for r in RECORDS)
    assert set(FORMATTERS) == set(logformat.STYLES)


@pytest.mark.parametrize("style", logformat.STYLES)
def test_formatted_lines_parse_back(style):
    for record, expected in zip(RECORDS, EXPECTED, strict=True):
        line = format_record(record, broker_id=2, partition=12, style=style)
        if line is None:
            assert record.KIND == "member_left" and style != "modern"
            continue
        parsed = parse_coordinator_line(line)
        assert parsed["kind"] == record.KIND and parsed["group"] == "my-group" and parsed["broker"] == 2
        assert parsed["time_ms"] % 1000 == record.time_ms
        for key in ("old_generation", "generation", "member"):
            if key in expected:
                assert parsed[key] == expected[key]
        if style == "modern":
            assert parsed["partition"] == 12
            for key in ("reason", "members", "leader", "static_members"):
                if key in expected:
                    assert parsed[key] == expected[key]


def test_line_shape_matches_kafka():
    line = format_record(RECORDS[1], broker_id=0, partition=9, style="legacy-old")
    assert line == ("[2024-01-01 00:00:00,006] INFO [GroupCoordinator 0]: Stabilized group my-group generation 4 "
                    "(__consumer_offsets-9) (kafka.coordinator.group.GroupCoordinator)")


def test_unrelated_lines_are_none():
    assert parse_coordinator_line("[2019-07-17 15:20:37,266] INFO [Log partition=x] Rolled new segment (kafka.log.Log)") is None
    assert parse_coordinator_line("garbage") is None


@pytest.mark.parametrize("key,expected", [
    ("21", -973932308), ("foobar", -790332482), ("abc", 479470107), ("a-little-bit-long-string", -985981536),
    ("a-little-bit-longer-string", -1486304829), ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971)])
def test_murmur2_vectors(key, expected):
    assert murmur2(key.encode()) == expected


def test_partition_for_key_is_positive_modulo():
    assert partition_for_key("foobar", 10) == (-790332482 & 0x7FFFFFFF) % 10


@pytest.mark.parametrize("group,partition", [("my-group", 12), ("test-group", 12), ("polygenelubricants", 0)])
def test_coordinator_placement(group, partition):
    assert coordinator_partition(group) == partition


def test_seed_placement_example_with_ten_partitions():
    assert coordinator_partition("illidan-c", 10) == 9
