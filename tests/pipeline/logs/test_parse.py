"""The log catalogue without Spark: every layout, every message version, the story (generation
arithmetic, causes), and no crash on any input.

The test lines are written from Kafka's format strings (the source named in each case), not
copied from anyone's logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse.parse import parse_line, parse_lines
from kafka_rebalance.pipeline.logparse.story import tell
from tests.conftest import TEST_SYSLOG

TS = "2024-05-01 10:00:00,000"
MS = 1714557600000
UUID = "4c2a1b7e-1d2f-4b8e-9a51-0c3e7d8f9a10"
LEGACY = "[{ts}] INFO [GroupCoordinator 0]: {msg} (kafka.coordinator.group.GroupCoordinator)"
MODERN = "[{ts}] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] {msg} (org.apache.kafka.coordinator.group.GroupMetadataManager)"
STABILIZED = "Stabilized group g1 generation 5 (__consumer_offsets-3) with 2 members"

# --------------------------------------------------------------------------- layouts

LAYOUTS = {
    "log4j brackets": f"[{TS}] INFO [GroupCoordinator 0]: {STABILIZED} (kafka.coordinator.group.GroupCoordinator)",
    "no brackets": f"{TS} INFO [GroupCoordinator 0]: {STABILIZED}",
    "ISO with zone": f"2024-05-01T12:00:00.000+02:00 INFO [GroupCoordinator 0]: {STABILIZED}",
    "ISO Z": f"2024-05-01T10:00:00Z INFO {STABILIZED}",
    "yy/MM/dd": f"24/05/01 10:00:00 INFO GroupCoordinator: {STABILIZED}",
    "docker-compose": f"kafka-1  | [{TS}] INFO [GroupCoordinator 0]: {STABILIZED} (kafka.coordinator.group.GroupCoordinator)",
    "kubectl prefix and timestamps": f"[pod/kafka-0/kafka] 2024-05-01T10:00:00.000000000Z [{TS}] INFO {STABILIZED}",
    "journald short-iso": f"2024-05-01T10:00:00+0000 broker1 kafka[812]: [{TS}] INFO [GroupCoordinator 0]: {STABILIZED}",
    "json message/@timestamp": '{"@timestamp":"2024-05-01T10:00:00.000Z","level":"INFO","message":"[GroupCoordinator 0]: '
                               + STABILIZED + '"}',
    "json msg/ts seconds": '{"ts": 1714557600.0, "msg": "' + STABILIZED + '"}',
    "docker json-file log": '{"log":"[' + TS + '] INFO [GroupCoordinator 0]: ' + STABILIZED + '\\n","stream":"stdout",'
                            '"time":"2024-05-01T10:00:00.5Z"}',
    "cloudwatch csv": f'1714557600000,"[{TS}] INFO [GroupCoordinator 0]: {STABILIZED} (kafka.coordinator.group.GroupCoordinator)"',
    "datadog csv": f'"2024-05-01T10:00:00.000Z","broker-1","kafka","[GroupCoordinator 0]: {STABILIZED}"',
    "ansi colours and CRLF": f"\x1b[32m[{TS}]\x1b[0m \x1b[1mINFO\x1b[0m [GroupCoordinator 0]: {STABILIZED}\r\n",
    "no-break space indent": f"\u00a0\u00a0[{TS}] INFO [GroupCoordinator 0]: {STABILIZED}",
    "markdown quote": f"> [{TS}] INFO [GroupCoordinator 0]: {STABILIZED}",
    "thread after message": f"[{TS}] INFO [GroupCoordinator 0]: {STABILIZED} [group-metadata-manager-0]",
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layout_reads_the_message_and_its_time(layout):
    event = parse_line(LAYOUTS[layout], TEST_SYSLOG)
    assert event is not None, layout
    assert (event["kind"], event["group"], event["generation"], event["members"]) == ("stabilized", "g1", 5, 2)
    assert event["time_ms"] in (MS, MS + 500), layout


def test_syslog_without_year_and_no_timestamp_at_all():
    syslog = parse_line(f"May  1 10:00:00 broker1 kafka[812]: [GroupCoordinator 0]: {STABILIZED}", TEST_SYSLOG)
    assert syslog["generation"] == 5 and syslog["time_ms"] is not None
    bare = parse_line(STABILIZED, TEST_SYSLOG)
    assert bare["kind"] == "stabilized" and bare["time_ms"] is None


def test_wrapped_line_and_code_fences_in_a_paste():
    line = LEGACY.format(ts=TS, msg="Preparing to rebalance group g1 in state Stable with old generation 4 "
                         "(__consumer_offsets-3) (reason: Adding new member c-1 with group instance id None)")
    cut = 90
    records = list(parse_lines(["```", line[:cut], line[cut:], "```"], syslog=TEST_SYSLOG))
    assert [r["kind"] for r in records] == ["preparing_rebalance"]
    assert records[0]["old_generation"] == 4 and records[0]["reason"].startswith("Adding new member c-1")


# --------------------------------------------------------------------------- message versions

BROKER_CASES = [
    # (source, line, expected fields)
    ("GroupCoordinator.scala 0.10.0", "Preparing to restabilize group g with old generation 3",
     {"kind": "preparing_rebalance", "old_generation": 3}),
    ("0.10.0", "Group g generation 4 is dead and removed", {"kind": "group_dead", "generation": 4}),
    ("0.10.0", "Stabilized group g generation 4", {"kind": "stabilized", "generation": 4, "members": None}),
    ("0.11-1.1", "Preparing to rebalance group g with old generation 3 (__consumer_offsets-9)",
     {"kind": "preparing_rebalance", "old_generation": 3, "partition": 9, "state": None}),
    ("0.11-2.7", "Assignment received from leader for group g for generation 4",
     {"kind": "assignment_received", "generation": 4, "member": None}),
    ("2.2", "Preparing to rebalance group g in state PreparingRebalance with old generation 3 (__consumer_offsets-9) "
     "(reason: Adding new member c-1)", {"state": "PreparingRebalance", "reason": "Adding new member c-1"}),
    ("2.2-3.9", "Pending member c-9 in group g has been removed after session timeout expiration.",
     {"kind": "member_failed", "member": "c-9", "pending": True}),
    ("2.2-2.3", "Member c-1 in group g has left, removing it from the group", {"kind": "member_left", "member": "c-1"}),
    ("2.4-3.1", "Member[group.instance.id Some(i-1), member.id i-1-abc] in group g has left, removing it from the group",
     {"kind": "member_left", "member": "i-1-abc", "instance_id": "Some(i-1)"}),
    ("3.2-3.9", "Member MemberMetadata(memberId=c-1-x, groupInstanceId=None, clientId=c-1, clientHost=/10.0.0.1, "
     "sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range)) has left group g through "
     "explicit `LeaveGroup`; client reason: the consumer is being closed",
     {"kind": "member_left", "member": "c-1-x", "reason": "the consumer is being closed"}),
    ("2.8 static join", "Adding new static member i-1 to group g with member id i-1-abc.",
     {"kind": "member_joined", "instance_id": "i-1", "member": "i-1-abc", "membership": "Static"}),
    ("2.8-3.9 dynamic join", "Dynamic Member with unknown member id joins group g in Stable state. Created a new member "
     "id c-1-abc for this member and add to the group.", {"kind": "member_joined", "member": "c-1-abc"}),
    ("3.0-3.9 static rejoin", "Static member with groupInstanceId=i-1 and unknown member id joins group g in Stable "
     "state. Replacing previously mapped member i-1-old with this groupInstanceId.",
     {"kind": "member_joined", "instance_id": "i-1", "old_member": "i-1-old"}),
    ("2.8-3.9", "Group g removed dynamic members who haven't joined: Set(c-1-abc)", {"kind": "members_not_rejoined"}),
    ("2.4-3.9", "Group g is dead, skipping rebalance stage", {"kind": "group_dead"}),
    ("0.10-3.9 loading", "Loading group metadata for g with generation 7", {"kind": "group_loaded", "generation": 7}),
    ("0.10-3.9 unloading", "Unloading group metadata for g with generation 7", {"kind": "group_unloaded"}),
    ("GroupMetadataManager", "[GroupMetadataManager brokerId=1] Finished loading offsets and group metadata from "
     "__consumer_offsets-12 in 35 milliseconds", {"kind": "coordinator_loaded", "partition": 12, "group": None}),
]

NEW_COORDINATOR_CASES = [
    ("classic via new coordinator", "Preparing to rebalance group g in state Stable with old generation 4 (reason: "
     "Leader c-1 re-joining group during Stable; client reason: cached metadata has changed).",
     {"kind": "preparing_rebalance", "partition": 12, "broker": 1}),
    ("classic leave", "[Group g] Dynamic Member c-1 has left group through explicit `LeaveGroup` request; client "
     "reason: the consumer is being closed", {"kind": "member_left", "member": "c-1"}),
    ("classic static leave", "[Group g] Static Member i-1-x with instance id i-1 has left group through explicit "
     "`LeaveGroup` request; client reason: the consumer is being closed", {"kind": "member_left", "instance_id": "i-1"}),
    ("epoch bump", "[GroupId g] Bumped group epoch to 9.", {"kind": "group_epoch_bumped", "generation": 9}),
    ("target", "[GroupId g] Computed a new target assignment for epoch 9 with 'uniform' assignor in 3ms.",
     {"kind": "target_assignment", "assignor": "uniform", "took_ms": 3}),
    ("member epoch", "[GroupId g] Member m1 new assignment state: epoch=9, previousEpoch=8, state=STABLE, "
     "assignedPartitions=[t-0, t-1].", {"kind": "member_epoch", "member": "m1", "generation": 9, "state": "STABLE"}),
    ("fenced session", "[GroupId g] Member m2 fenced from the group because the member session expired.",
     {"kind": "member_fenced", "reason": "the member session expired"}),
    ("fenced rebalance timeout", "[GroupId g] Member m2 fenced from the group because it failed to transition from "
     "epoch 8 within 300000ms.", {"kind": "member_fenced"}),
    ("join consumer protocol", "[GroupId g] Member m3 joins the consumer group using the consumer protocol.",
     {"kind": "member_joined", "member": "m3", "protocol": "consumer"}),
    ("join classic protocol (conversion)", "[GroupId g] Member m4 joins the consumer group using the classic protocol.",
     {"kind": "member_joined", "protocol": "classic"}),
    ("left", "[GroupId g] Member m3 left the consumer group.", {"kind": "member_left", "member": "m3"}),
    ("subscription", "[GroupId g] Member m3 updated its subscribed topics to: [t, u].", {"kind": "subscription_changed"}),
    ("upgrade refused", "Cannot upgrade classic group g to consumer group because the online upgrade is disabled.",
     {"kind": "conversion_refused"}),
]


@pytest.mark.parametrize(("source", "message", "expected"), BROKER_CASES, ids=[c[0] for c in BROKER_CASES])
def test_classic_coordinator_wordings(source, message, expected):
    event = parse_line(LEGACY.format(ts=TS, msg=message), TEST_SYSLOG)
    assert event is not None and event["side"] == "broker"
    for name, value in expected.items():
        assert event.get(name) == value, (name, event)
    if "group" not in expected:
        assert event["group"] == "g"


@pytest.mark.parametrize(("source", "message", "expected"), NEW_COORDINATOR_CASES,
                         ids=[c[0] for c in NEW_COORDINATOR_CASES])
def test_new_group_coordinator_wordings(source, message, expected):
    event = parse_line(MODERN.format(ts=TS, msg=message), TEST_SYSLOG)
    assert event is not None and event["group"] == "g" and event["partition"] == 12
    for name, value in expected.items():
        assert event.get(name) == value, (name, event)


JAVA = "2024-05-01 10:00:00,000 INFO [Consumer clientId=consumer-g-1, groupId=g] {msg} (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
CLIENT_CASES = [
    ("java (Re-)joining", JAVA.format(msg="(Re-)joining group"), {"kind": "client_join_start", "group": "g"}),
    ("java 3.x rejoin reason", JAVA.format(msg="Request joining group due to: cached metadata has changed from x to y"),
     {"kind": "client_rejoin_requested"}),
    ("java 2.4+ joined", JAVA.format(msg="Successfully joined group with generation Generation{generationId=5, "
                                     "memberId='consumer-g-1-ab', protocol='range'}"),
     {"kind": "client_joined", "generation": 5, "member": "consumer-g-1-ab", "protocol": "range"}),
    ("java 0.10 joined", "[2017-01-01 10:00:00,000] INFO Successfully joined group g with generation 5 "
     "(org.apache.kafka.clients.consumer.internals.AbstractCoordinator)", {"kind": "client_joined", "group": "g"}),
    ("java synced", JAVA.format(msg="Successfully synced group in generation Generation{generationId=5, "
                                "memberId='consumer-g-1-ab', protocol='range'}"), {"kind": "client_synced"}),
    ("java assigned 3.7+", JAVA.format(msg="Adding newly assigned partitions: t-0, t-1"),
     {"kind": "client_assigned", "partitions": "t-0, t-1"}),
    ("java revoked 3.7+", JAVA.format(msg="Revoke previously assigned partitions t-2"), {"kind": "client_revoked"}),
    ("java lost", JAVA.format(msg="Lost previously assigned partitions t-0"), {"kind": "client_lost"}),
    ("java poll timeout", JAVA.format(msg="consumer poll timeout has expired. This means the time between subsequent "
                                      "calls to poll() was longer than the configured max.poll.interval.ms"),
     {"kind": "client_poll_timeout"}),
    ("java leave", JAVA.format(msg="Member consumer-g-1-ab sending LeaveGroup request to coordinator b1:9092 (id: "
                               "2147483646 rack: null) due to consumer poll timeout has expired."),
     {"kind": "client_leave", "member": "consumer-g-1-ab"}),
    ("java heartbeat", JAVA.format(msg="Attempt to heartbeat failed since group is rebalancing"),
     {"kind": "client_heartbeat_failed"}),
    ("java commit", JAVA.format(msg="Offset commit failed on partition t-0 at offset 10: The coordinator is not aware "
                                "of this member."), {"kind": "client_commit_failed"}),
    ("new consumer state", JAVA.format(msg="Member m1 with epoch 9 transitioned from RECONCILING to STABLE."),
     {"kind": "client_member_state", "generation": 9, "state": "STABLE"}),
    ("spring boot 3", "2024-05-01T10:00:00.000Z  INFO 1 --- [orders] [ntainer#0-0-C-1] "
     "o.s.k.l.KafkaMessageListenerContainer    : g: partitions assigned: [t-0, t-1]",
     {"kind": "client_assigned", "library": "spring", "group": "g", "client_id": "ntainer#0-0-C-1"}),
    ("kafka-python 2.1+", "2024-05-01 10:00:00,000 INFO kafka.coordinator: Successfully joined group g <Generation 5 "
     "(member_id: kafka-python-2.1.0-ab, protocol: range)>", {"kind": "client_joined", "library": "kafka-python"}),
    ("kafka-python default layout", "INFO:kafka.coordinator.consumer:Setting newly assigned partitions {TopicPartition("
     "topic='t', partition=0)} for group g", {"kind": "client_assigned", "group": "g", "library": "kafka-python"}),
    ("librdkafka join state", '%7|1714557600.000|CGRPJOINSTATE|rdkafka#consumer-1| [thrd:main]: Group "g" changed join '
     "state wait-join -> wait-metadata (state up)", {"kind": "client_join_state", "client_id": "rdkafka#consumer-1"}),
    ("librdkafka max poll", "%4|1714557600.000|MAXPOLL|rdkafka#consumer-1| [thrd:main]: Application maximum poll "
     "interval (300000ms) exceeded by 89ms (adjust max.poll.interval.ms for long-running message processing): leaving "
     "group", {"kind": "client_poll_timeout"}),
    ("streams thread", f"[{TS}] INFO stream-thread [app-{UUID}-StreamThread-1] State transition from RUNNING to "
     "PARTITIONS_REVOKED (org.apache.kafka.streams.processor.internals.StreamThread)",
     {"kind": "client_streams_state", "group": "app", "state": "PARTITIONS_REVOKED"}),
]


@pytest.mark.parametrize(("source", "line", "expected"), CLIENT_CASES, ids=[c[0] for c in CLIENT_CASES])
def test_client_wordings(source, line, expected):
    event = parse_line(line, TEST_SYSLOG)
    assert event is not None and event["side"] == "client"
    for name, value in expected.items():
        assert event.get(name) == value, (name, event)


# --------------------------------------------------------------------------- the story

def _story(lines: list[str], group: str = "g") -> dict:
    events = [r for r in parse_lines(lines, "x.log", syslog=TEST_SYSLOG) if r["kind"] is not None]
    return tell("default", group, [e for e in events if e.get("group") == group])


def _at(second: int, msg: str, template: str = LEGACY) -> str:
    return template.format(ts=f"2024-05-01 10:{second // 60:02d}:{second % 60:02d},000", msg=msg)


def test_missing_lines_never_merge_rebalances():
    """GroupCoordinator.onCompleteJoin: each stabilize is one generation; a missing "Preparing"
    line gets a rebalance of its own (no length: its start is not in the log), and one whose
    closing line is missing is completed by the later generation that proves it made its own."""
    lines = [
        _at(0, "Preparing to rebalance group g in state Stable with old generation 1 (__consumer_offsets-3) (reason: r)"),
        _at(1, "Stabilized group g generation 2 (__consumer_offsets-3) with 2 members"),
        _at(1, "Assignment received from leader c-1 for group g for generation 2"),
        # the next "Preparing" line is missing
        _at(30, "Stabilized group g generation 3 (__consumer_offsets-3) with 2 members"),
        _at(60, "Preparing to rebalance group g in state Stable with old generation 3 (__consumer_offsets-3) (reason: r)"),
        # its closing line is missing: old generation 5 below proves generation 4 was made
        _at(120, "Preparing to rebalance group g in state PreparingRebalance with old generation 5 (__consumer_offsets-3) "
                 "(reason: r)"),
    ]
    rows = _story(lines)["rebalances"]
    assert [(r["old_generation"], r["generation"], r["outcome"]) for r in rows] == [
        (1, 2, "stable"), (2, 3, "stable"), (3, 4, "stable"), (5, None, "open")]
    assert rows[1]["start_known"] is False and rows[1]["duration_ms"] is None
    # completed, its end not in the log: no length, drawn to the line that proved it
    assert rows[2]["end_ms"] is None and rows[2]["duration_ms"] is None
    assert rows[2]["clip_ms"] == MS + 120_000


def test_restart_from_completing_rebalance_supersedes_the_stabilized_generation():
    lines = [
        _at(0, "Preparing to rebalance group g in state Stable with old generation 1 (__consumer_offsets-3) (reason: x)"),
        _at(1, "Stabilized group g generation 2 (__consumer_offsets-3) with 2 members"),
        _at(2, "Preparing to rebalance group g in state CompletingRebalance with old generation 2 (__consumer_offsets-3) "
               "(reason: y)"),
        _at(3, "Stabilized group g generation 3 (__consumer_offsets-3) with 2 members"),
        _at(3, "Assignment received from leader m1 for group g for generation 3"),
    ]
    rows = _story(lines)["rebalances"]
    assert [(r["generation"], r["outcome"], r["duration_ms"]) for r in rows] == [(2, "superseded", 1000),
                                                                                  (3, "stable", 1000)]


def test_causes_with_evidence_lines():
    failed = f"consumer-g-1-{UUID}"
    rejoined = "consumer-g-1-0b7a2f1e-1111-4222-8333-444455556666"
    lines = [
        _at(0, f"Member {failed} in group g has failed, removing it from the group"),
        _at(0, "Preparing to rebalance group g in state PreparingRebalance with old generation 7 (__consumer_offsets-3) "
               f"(reason: removing member {failed} on heartbeat expiration)"),
        _at(3, "Stabilized group g generation 8 (__consumer_offsets-3) with 1 members"),
        _at(3, "Assignment received from leader c for group g for generation 8. The group has 1 members, 0 of which are "
               "static."),
        _at(90, "Preparing to rebalance group g in state Stable with old generation 8 (__consumer_offsets-3) (reason: "
                f"Adding new member {rejoined} with group instance id None; client reason: need to re-join with the "
                f"given member-id: {rejoined})"),
        _at(93, "Stabilized group g generation 9 (__consumer_offsets-3) with 2 members"),
        _at(93, "Assignment received from leader c for group g for generation 9"),
    ]
    story = _story(lines)
    assert [r["cause"] for r in story["rebalances"]] == ["session_timeout", "restarted"]
    first = [c for c in story["causes"] if c["generation"] == 8]
    assert len(first) == 1 and len(first[0]["evidence"]) == 2 and first[0]["evidence_sources"] == ["x.log:1", "x.log:2"]
    assert story["rebalances"][0]["failed_members"] == [failed]


def test_client_only_logs_give_rebalances_and_poll_timeout_causes():
    java = "2024-05-01 10:{mm}:{ss},000 INFO [Consumer clientId=c1, groupId=g] {msg}"
    lines = [
        java.format(mm="00", ss="00", msg="consumer poll timeout has expired."),
        java.format(mm="00", ss="01", msg="Member c1-x sending LeaveGroup request to coordinator b:9092 due to consumer "
                                          "poll timeout has expired."),
        java.format(mm="00", ss="05", msg="(Re-)joining group"),
        java.format(mm="00", ss="08", msg="Successfully joined group with generation Generation{generationId=12, "
                                          "memberId='c1-y', protocol='range'}"),
        java.format(mm="00", ss="09", msg="Adding newly assigned partitions: t-0, t-1"),
    ]
    story = _story(lines)
    clients = story["client_rebalances"]
    assert [(c["generation"], c["member"], c["assigned"], c["outcome"]) for c in clients] == [
        (12, "c1-y", ["t-0", "t-1"], "completed")]
    assert [(r["generation"], r["source"], r["cause"]) for r in story["rebalances"]] == [(12, "client", "poll_timeout")]
    assert story["findings"][0]["poll_timeout_leaves"] == 1  # the warning and the LeaveGroup are one incident


def test_kip848_epochs_close_when_every_member_is_stable():
    lines = [
        _at(0, "[GroupId g] Member m3 joins the consumer group using the consumer protocol.", MODERN),
        _at(0, "[GroupId g] Bumped group epoch to 9.", MODERN),
        _at(0, "[GroupId g] Computed a new target assignment for epoch 9 with 'uniform' assignor in 3ms.", MODERN),
        _at(1, "[GroupId g] Member m1 new assignment state: epoch=9, previousEpoch=8, state=STABLE, assignedPartitions=[t-0].", MODERN),
        _at(2, "[GroupId g] Member m3 new assignment state: epoch=9, previousEpoch=0, state=STABLE, assignedPartitions=[t-1].", MODERN),
        _at(30, "[GroupId g] Member m3 fenced from the group because the member session expired.", MODERN),
        _at(30, "[GroupId g] Bumped group epoch to 10.", MODERN),
    ]
    story = _story(lines)
    rows = story["rebalances"]
    assert [(r["generation"], r["protocol"], r["outcome"], r["duration_ms"], r["assignor"], r["cause"]) for r in rows] == [
        (9, "consumer", "stable", 2000, "uniform", "joined"), (10, "consumer", "open", None, None, "session_timeout")]


# --------------------------------------------------------------------------- never a crash

@given(st.lists(st.text(max_size=200), max_size=30))
def test_any_text_parses_without_error(lines):
    records = list(parse_lines(lines, "fuzz", syslog=TEST_SYSLOG))
    events = [r for r in records if r["kind"] is not None]
    for group in {e.get("group") for e in events if e.get("group")}:
        tell("default", group, [e for e in events if e.get("group") == group])


_WORDS = st.sampled_from([m for _, m, _ in BROKER_CASES + NEW_COORDINATOR_CASES] + [
    "Stabilized group g generation 99999999999999999999999 with 2 members", "Preparing to rebalance group  with old "
    "generation", "{\"message\": 5}", '{"msg": "Stabilized group g generation 1", "ts": "x"}', "\x00\x01", "",
    '1714557600000,"unterminated', "2024-13-45 99:99:99,999 Stabilized group g generation 1"])


@given(st.lists(st.tuples(st.integers(0, 3600), _WORDS), max_size=40))
def test_shuffled_coordinator_lines_never_crash_the_story(items):
    lines = [_at(s, m, LEGACY if i % 2 else MODERN) for i, (s, m) in enumerate(items)]
    test_any_text_parses_without_error.hypothesis.inner_test(lines)


_DATA = Path(__file__).resolve().parents[2] / "data" / "logs"
_DATA_LINES = [line.rstrip("\n") for path in sorted(_DATA.iterdir()) for line in path.open(encoding="utf-8")]


@given(st.lists(st.sampled_from(_DATA_LINES), max_size=60), st.integers(0, 200))
def test_any_mix_of_the_test_logs_never_crashes(lines, cut):
    """Lines of every format, in any order, some cut short, repeated or missing."""
    mangled = [line[: len(line) - cut] if i % 3 == 0 else line for i, line in enumerate(lines)]
    test_any_text_parses_without_error.hypothesis.inner_test(mangled)


@pytest.mark.parametrize(("message", "protocol"), [
    ("[GroupId orders] Converted the classic group to a consumer group.", "consumer"),
    ("[GroupId orders] Converted the consumer group to a classic group.", "classic"),
])
def test_kafka_4_online_migration_lines(message, protocol):
    """Kafka 4.x GroupMetadataManager.convertToConsumerGroup / convertToClassicGroup log these at
    INFO (``log.info("[GroupId {}] Converted the classic group to a consumer group.", ...)`` and
    the reverse), behind the new coordinator's log prefix."""
    event = parse_line(MODERN.format(ts=TS, msg=message), TEST_SYSLOG)
    assert event is not None
    assert (event["kind"], event["group"], event["protocol"]) == ("group_converted", "orders", protocol)
    assert event["time_ms"] == MS
