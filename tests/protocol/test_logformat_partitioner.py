from __future__ import annotations

import pytest

from kafka_rebalance.protocol import logformat
from kafka_rebalance.protocol.classic.group import coordinator_partition
from kafka_rebalance.protocol.logformat import FORMATTERS, format_record
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

RECORDS = [
    PreparingRebalance(5, "my-group", "Stable", 3,
                       "Adding new member c-1 with group instance id Some(x); client reason: (nested) parens"),
    Stabilized(6, "my-group", 4, ("c-1", "c-2"), "c-1", "range"),
    AssignmentReceived(7, "my-group", 4, "c-1", 1, (MemberAssignment("c-1", ("t-0",)), MemberAssignment("c-2", ()))),
    MemberFailed(8, "my-group", "c-2"),
    MemberLeft(9, "my-group", "c-3", "the consumer is being closed"),
    GroupEmpty(10, "my-group", 5),
]


def test_every_record_kind_has_a_formatter():
    # the lines read back: tests/pipeline/logs/test_coordinator_lines.py, test_record_kinds.py
    assert tuple(r.KIND for r in RECORDS) == RECORD_KINDS
    assert set(FORMATTERS) == set(logformat.STYLES)


def test_line_shape_matches_kafka():
    line = format_record(RECORDS[1], broker_id=0, partition=9, style="legacy-old")
    assert line == ("[2024-01-01 00:00:00,006] INFO [GroupCoordinator 0]: Stabilized group my-group generation 4 "
                    "(__consumer_offsets-9) (kafka.coordinator.group.GroupCoordinator)")


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
