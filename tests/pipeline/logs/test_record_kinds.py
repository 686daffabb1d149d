"""The coordinator's log records are a closed union on both sides: every record type the
protocol layer writes (``logrecords.LogRecord``) is formatted in every Kafka log format, and the
logs pipeline reads each line it writes back as the one ``EventKind`` listed here for it."""

from __future__ import annotations

import typing

import pytest

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.pipeline.logparse.kinds import EventKind
from kafka_rebalance.pipeline.logparse.parse import parse_line
from kafka_rebalance.protocol import logrecords as lr
from kafka_rebalance.protocol.logformat import STYLES, format_record
from tests.conftest import TEST_SYSLOG

G = "orders"
# One record of every type, with the kind the pipeline reads its line as (None: never logged).
RECORDS: dict[type[lr.LogRecord], tuple[lr.LogRecord, EventKind | None]] = {
    lr.PreparingRebalance: (lr.PreparingRebalance(5, G, "Stable", 3, "Adding new member c-1"),
                            EventKind.PREPARING_REBALANCE),
    lr.Stabilized: (lr.Stabilized(6, G, 4, ("c-1", "c-2"), "c-1", "range"), EventKind.STABILIZED),
    lr.AssignmentReceived: (lr.AssignmentReceived(7, G, 4, "c-1", 0, (lr.MemberAssignment("c-1", ("t-0",)),)),
                            EventKind.ASSIGNMENT_RECEIVED),
    lr.MemberFailed: (lr.MemberFailed(8, G, "c-2"), EventKind.MEMBER_FAILED),
    lr.MemberLeft: (lr.MemberLeft(9, G, "c-2", "the consumer is being closed"), EventKind.MEMBER_LEFT),
    lr.GroupEmpty: (lr.GroupEmpty(10, G, 5), EventKind.GROUP_EMPTY),
    lr.ConsumerGroupEpochBumped: (lr.ConsumerGroupEpochBumped(11, G, 7), EventKind.GROUP_EPOCH_BUMPED),
    lr.ConsumerTargetAssignmentComputed: (lr.ConsumerTargetAssignmentComputed(12, G, 7, "uniform", 0),
                                          EventKind.TARGET_ASSIGNMENT),
    lr.ConsumerMemberJoined: (lr.ConsumerMemberJoined(13, G, "m-1", None, GroupProtocol.CONSUMER),
                              EventKind.MEMBER_JOINED),
    lr.ConsumerStaticMemberReplaced: (lr.ConsumerStaticMemberReplaced(14, G, "i-1", GroupProtocol.CONSUMER, "m-2",
                                                                      "m-1"), EventKind.MEMBER_JOINED),
    lr.ConsumerMemberLeft: (lr.ConsumerMemberLeft(15, G, "m-2", "i-1", False), EventKind.MEMBER_LEFT),
    lr.ConsumerMemberFenced: (lr.ConsumerMemberFenced(16, G, "m-3", "the member session expired"),
                              EventKind.MEMBER_FENCED),
    lr.ConsumerMemberAssignmentUpdated: (lr.ConsumerMemberAssignmentUpdated(17, G, "m-2", 7, 6, "STABLE", ("t-0",),
                                                                            ()), EventKind.MEMBER_EPOCH),
    lr.ConsumerGroupStateChanged: (lr.ConsumerGroupStateChanged(18, G, "Reconciling", "Stable"), None),
    lr.ConsumerGroupConverted: (lr.ConsumerGroupConverted(19, G, "upgrade"), EventKind.GROUP_CONVERTED),
    lr.ConsumerGroupLoaded: (lr.ConsumerGroupLoaded(20, G, 3), EventKind.GROUP_LOADED),
}


def _union_members(alias: object) -> set[type]:
    members: set[type] = set()
    for arg in typing.get_args(alias):
        members |= _union_members(arg) if typing.get_args(arg) else {arg}
    return members


def test_every_record_type_of_the_union_is_listed():
    assert set(RECORDS) == _union_members(lr.LogRecord)
    assert all(type(record) is record_type for record_type, (record, _) in RECORDS.items())


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("record_type", list(RECORDS), ids=lambda t: t.__name__)
def test_every_line_the_formatter_writes_reads_back_as_its_kind(record_type, style):
    record, kind = RECORDS[record_type]
    line = format_record(record, broker_id=1, partition=12, style=style)
    if line is None:  # not logged in this format (consumer groups and LeaveGroup need the new coordinator)
        assert kind is None or style != "modern"
        return
    event = parse_line(line, TEST_SYSLOG)
    assert kind is not None and event is not None, line
    assert event["kind"] is kind and event["group"] == G
