"""Member events from rebalance reasons (every wording Kafka printed, 2.1 to 4.x) and causes that
respect time: a cause is at or before its rebalance's start; what happens while it is open is
listed as what happened during it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse.causes import CAUSE_TITLES, members_in_reason
from kafka_rebalance.pipeline.logparse.inputs import read_text_lines
from kafka_rebalance.pipeline.logparse.parse import parse_lines
from kafka_rebalance.pipeline.logparse.split_facts import fill_client_group
from kafka_rebalance.pipeline.logparse.story import tell
from tests.conftest import TEST_SYSLOG

EXCERPTS = Path(__file__).resolve().parents[2] / "data" / "excerpts"
X, Y = "consumer-1-0a0a0a0a-1b1b-4c2c-8d3d-4e4e4e4e4e4e", "consumer-2-5f5f5f5f-6a6a-4b7b-8c8c-9d9d9d9d9d9d"

# The reason strings of GroupCoordinator.scala and GroupMetadataManager.java at the tags named
# (``git show <tag>:<file>``), with what each says of which member.
REASONS = [
    # 2.1.0, 2.2.0 addMemberAndRebalance
    (f"Adding new member {X}", [(X, "joined", "joined", False)]),
    # 2.3.0, 2.4.0 (no space in "instanceid"; Scala's Option printed)
    (f"Adding new member {X} with group instanceid None", [(X, "joined", "joined", False)]),
    # 2.5.0-3.1 and 3.2+ with the client's reason; 3.7+ (Java) prints null
    (f"Adding new member {X} with group instance id Some(app-0)", [(X, "joined", "static_joined", True)]),
    (f"Adding new member {X} with group instance id None; client reason: need to re-join with the given member-id: "
     f"{X}", [(X, "joined", "joined", False)]),
    (f"Adding new member {X} with group instance id null; client reason: not provided",
     [(X, "joined", "joined", False)]),
    # 2.1.0-2.7 updateMemberAndRebalance; 2.8.0 "during <state>"; 3.2.0 client reason
    (f"Updating metadata for member {X}", [(X, "rejoined", "metadata_changed", False)]),
    (f"Updating metadata for member {X} during Stable; client reason: cached metadata has changed",
     [(X, "rejoined", "metadata_changed", False)]),
    # 2.5.0+ updateStaticMemberAndRebalance (the static member's new id)
    (f"Updating metadata for static member {X} with instance id app-0; client reason: rebalance failed",
     [(X, "joined", "static_joined", True)]),
    # 3.0.0+ (leader)
    (f"Leader {X} re-joining group during Stable; client reason: cached metadata has changed",
     [(X, "rejoined", "leader_rejoined", False)]),
    # 3.7.0+ GroupMetadataManager classicGroupJoinExistingMember
    (f"Member {X} is joining group during PreparingRebalance; client reason: not provided",
     [(X, "rejoined", "joined", False)]),
    # 2.8.0+ selectedProtocol change
    (f"Group's selectedProtocol will change because static member {X} with instance id app-0 joined with change "
     "of protocol", [(X, "rejoined", "metadata_changed", True)]),
    # 2.1.0-2.8 LeaveGroup; 3.0.0 capitalised; 3.2.0 client reason (poll timeout: the Java client's)
    (f"removing member {X} on LeaveGroup", [(X, "left", "left", False)]),
    (f"Removing member {X} on LeaveGroup; client reason: consumer poll timeout has expired.",
     [(X, "left", "poll_timeout", False)]),
    # 3.7.0+ classicGroupLeave, several members in one request
    (f"explicit `LeaveGroup` request for ({X}, {Y}) members.", [(X, "left", "left", False), (Y, "left", "left", False)]),
    # 2.1.0+ onExpireHeartbeat; 3.7.0+ with a final period
    (f"removing member {X} on heartbeat expiration", [(X, "failed", "session_timeout", False)]),
    (f"removing member {X} on heartbeat expiration.", [(X, "failed", "session_timeout", False)]),
    # 3.0.0+ pending sync expiration: a Scala Set, a Java Set
    (f"Removing Set({X}, {Y}) on pending sync request expiration",
     [(X, "failed", "sync_timeout", False), (Y, "failed", "sync_timeout", False)]),
    (f"Removing [{X}] on pending sync request expiration", [(X, "failed", "sync_timeout", False)]),
    # no member named
    ("Freshly-loaded group is over capacity (10). Rebalancing in order to give a chance for consumers to commit "
     "offsets", []),
    ("Downgrade group g from consumer to classic.", []),
]


@pytest.mark.parametrize(("reason", "named"), REASONS, ids=[r[:40] for r, _ in REASONS])
def test_members_named_in_reasons(reason, named):
    assert [(m, kind, cause, static) for m, kind, cause, _, static in members_in_reason(reason)] == named


def story(path: Path) -> dict[str, list[dict]]:
    events = []
    last_group: dict[str, str] = {}
    for record in parse_lines(read_text_lines(str(path)), str(path), syslog=TEST_SYSLOG):
        fill_client_group(record, last_group)
        if record["kind"] is not None and record.get("group"):
            events.append(record)
    (group,) = {e["group"] for e in events}
    return tell("c", group, events)


def excerpt(prefix: str) -> Path:
    (path,) = EXCERPTS.glob(f"{prefix}-*")
    return path


@pytest.mark.parametrize("prefix", ["05", "06", "08", "10", "14", "15", "16", "19", "22", "32"])
def test_every_member_a_reason_names_is_a_member_event(prefix):
    rows = story(excerpt(prefix))
    (rebalance,) = rows["rebalances"]
    named = {m for m, *_ in members_in_reason(rebalance["reason"])}
    assert named
    events = {e["member"]: e for e in rows["member_events"]}
    for member in named:
        assert member in events, member
        assert events[member]["source"] == "reason" or events[member]["kind"] in ("joined", "failed", "left")


def test_a_line_and_the_reason_naming_the_same_member_are_one_event():
    """3.0+ logs a leaving member's own line just after the rebalance it causes; 2.4 a failed
    member's just before: one member event, learnt from the line."""
    for prefix, kind in (("11", "left"), ("12", "left"), ("07", "failed"), ("21", "failed")):
        rows = story(excerpt(prefix))
        events = [e for e in rows["member_events"] if e["kind"] == kind]
        assert len(events) == 1 and events[0]["source"] == "line", prefix


def test_timeouts_inside_an_open_rebalance_are_not_its_cause():
    """The rebalance opened at 02:46:45 for a new member; two members timed out at 02:46:53,
    inside it: listed as what happened during it, never as its cause."""
    rows = story(excerpt("13"))
    (rebalance,) = rows["rebalances"]
    assert rebalance["cause"] == "joined"
    assert {c["cause"] for c in rows["causes"]} == {"joined"}
    assert len(rebalance["during"]) == 2 and all("failed" in text for text in rebalance["during"])
    assert all(e["time_ms"] > rebalance["start_ms"] for e in rows["member_events"] if e["kind"] == "failed")
    assert rows["findings"][0]["failures_during_rebalances"] == 2


def test_every_cause_is_at_or_before_its_start():
    for path in sorted(EXCERPTS.glob("[0-9]*")):
        try:
            rows = story(path)
        except ValueError:  # excerpts of several groups or of none: not this test's concern
            continue
        starts = {(r["generation"], r["start_ms"]) for r in rows["rebalances"]}
        for cause in rows["causes"]:
            assert (cause["generation"], cause["start_ms"]) in starts


def test_a_broker_without_reasons_says_so():
    """2.0 prints no reason and nothing before the start explains it: not logged by this version."""
    (rebalance,) = story(excerpt("04"))["rebalances"]
    assert rebalance["cause"] == "not_logged" and "2.1" in CAUSE_TITLES["not_logged"]
    # 1.1 with the member's failure logged before the start: that is the cause
    (rebalance,) = story(excerpt("03"))["rebalances"]
    assert rebalance["cause"] == "session_timeout"


def _line(time: str, message: str) -> dict:
    return {"source": "a.log", "seq": 0, "time_ms": None, "line": f"{time} {message}"}


def test_a_client_line_counts_as_cause_only_within_the_clock_slack():
    from kafka_rebalance.pipeline.logparse.causes import CLIENT_CLOCK_SLACK_MS

    def rows(after_ms: int) -> list[dict]:
        events = [
            {"source": "app.log", "seq": 0, "time_ms": 1_000 + after_ms, "kind": "client_poll_timeout", "side": "client",
             "library": "java", "client_id": "c-1", "line": "consumer poll timeout has expired"},
            {"source": "broker.log", "seq": 0, "time_ms": 1_000, "kind": "preparing_rebalance", "side": "broker",
             "old_generation": 4, "state": "PreparingRebalance", "line": "Preparing"},
            {"source": "broker.log", "seq": 1, "time_ms": 4_000, "kind": "stabilized", "side": "broker",
             "generation": 5, "line": "Stabilized"},
        ]
        return tell("c", "g", events)["rebalances"]

    assert rows(-500)[0]["cause"] == "poll_timeout"
    assert rows(CLIENT_CLOCK_SLACK_MS)[0]["cause"] == "poll_timeout"
    assert rows(CLIENT_CLOCK_SLACK_MS + 1)[0]["cause"] == "not_logged"


def test_two_records_on_one_line_are_read_one_by_one():
    from kafka_rebalance.pipeline.logparse.parse import records_of

    kinds = [e["kind"] for e in parse_lines(read_text_lines(str(excerpt("09"))), syslog=TEST_SYSLOG)]
    assert kinds == ["member_left", "preparing_rebalance", "stabilized"]
    timed = [(e["kind"], e["time_ms"]) for e in parse_lines(read_text_lines(str(excerpt("30"))), syslog=TEST_SYSLOG)]
    assert [k for k, _ in timed] == ["preparing_rebalance", "stabilized"] and timed[0][1] < timed[1][1]
    # one record, its prefix and its reason never cut
    line = (f"[2024-06-03 09:14:02,430] INFO [GroupCoordinator 1]: Preparing to rebalance group billing in state "
            f"PreparingRebalance with old generation 17 (__consumer_offsets-21) (reason: removing member {X} on "
            "heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)")
    assert records_of(line) == [line]



def test_compose_records_run_together_are_each_read():
    """Records of a compose service (``kafka-1  | [time] ...``) run together on one line, as a
    paste without newlines gives them: each is its own record (a hypothesis fuzz example once
    made of 283 of them was read as one record, in time quadratic in the line)."""
    from kafka_rebalance.pipeline.logparse.parse import records_of

    record = (f"kafka-1  | [2021-10-19 07:30:00,500] INFO [GroupCoordinator 1]: Preparing to rebalance group notify "
              f"in state PreparingRebalance with old generation 3 (__consumer_offsets-4) (reason: Removing member "
              f"{X} on LeaveGroup) (kafka.coordinator.group.GroupCoordinator)")
    assert records_of(" ".join([record] * 300)) == [record] * 300
    kinds = [e["kind"] for e in parse_lines([" ".join([record] * 3)], syslog=TEST_SYSLOG)]
    assert kinds == ["preparing_rebalance"] * 3


@pytest.mark.parametrize(("name", "log"), [
    ("logs/server.log", "logs/server.log"), ("logs/server.log.1", "logs/server.log"),
    ("logs/server.log.2024-06-02.gz", "logs/server.log"), ("logs/server.log.2024-06-02-14", "logs/server.log"),
    ("app/app.2024-06-02.0.log", "app/app.log"), ("s3://bucket/kafka/server.log.3.gz", "s3://bucket/kafka/server.log"),
    ("03-broker-1.1-bare.log", "03-broker-1.1-bare.log"),
])
def test_rotated_files_are_one_log(name, log):
    from kafka_rebalance.pipeline.logparse.inputs import input_clusters, rotated_log

    assert rotated_log(name) == log
    assert input_clusters([name, "-"]) == {name: log, "-": "stdin"}
    assert input_clusters([name], {"": "prod"}) == {name: "prod"}


def test_a_defect_names_the_input_and_the_line(monkeypatch):
    from kafka_rebalance.pipeline.logparse import parse
    from kafka_rebalance.pipeline.logparse.parse import LineError

    def broken(raw: str, syslog: object) -> list:
        if "Stabilized" in raw:
            raise KeyError("boom")
        return []

    monkeypatch.setattr(parse, "_parse_records", broken)
    with pytest.raises(LineError, match=r"07-broker-2.4-heartbeat.log, line 3: KeyError"):
        list(parse_lines(read_text_lines(str(excerpt("07"))), str(excerpt("07")), syslog=TEST_SYSLOG))


# Offsets of a client's signal from a rebalance's start around the edges of the window that
# makes it a cause: EVIDENCE_WINDOW_MS before the start to CLIENT_CLOCK_SLACK_MS after it.
_EDGES = (-60_001, -60_000, -59_999, -30_000, -1, 0, 1, 999, 1_000, 1_001, 5_000)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 5)), min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(0, 11), st.sampled_from(_EDGES), st.sampled_from(["poll", "leave", "heartbeat"])),
                max_size=20))
def test_client_only_causes_are_the_signals_in_each_rebalances_window(cycles, signals):
    """A client-only log (no broker lines): each rebalance's causes are the client signals
    (poll timeouts, leave requests, failed heartbeats) from ``EVIDENCE_WINDOW_MS`` before its
    start to ``CLIENT_CLOCK_SLACK_MS`` after it, edges included, each one cause, in the order
    they were logged."""
    from kafka_rebalance.pipeline.logparse.causes import CLIENT_CLOCK_SLACK_MS, EVIDENCE_WINDOW_MS

    starts = sorted({minute * 60_000 + second * 7_000 for minute, second in cycles})
    events: list[dict] = []
    for generation, start in enumerate(starts, start=1):
        for offset, kind in ((0, "client_join_start"), (200, "client_joined"), (300, "client_synced"),
                             (400, "client_assigned")):
            events.append({"source": "app.log", "seq": len(events), "time_ms": 10_000_000 + start + offset,
                           "kind": kind, "side": "client", "library": "java", "client_id": "c-0",
                           "member": "c-0-m", "generation": generation, "line": kind})
    told = []
    for j, (which, offset, signal) in enumerate(signals):
        at = 10_000_000 + starts[which % len(starts)] + offset
        kind, reason = {"poll": ("client_poll_timeout", None), "leave": ("client_leave", "shutting down"),
                        "heartbeat": ("client_heartbeat_failed", "coordinator not available")}[signal]
        told.append((at, len(events), f"s-{j}",
                     {"poll": "poll_timeout", "leave": "left", "heartbeat": "session_timeout"}[signal]))
        events.append({"source": "app.log", "seq": len(events), "time_ms": at, "kind": kind, "side": "client",
                       "library": "java", "client_id": f"s-{j}", "reason": reason, "line": f"{signal} {j}"})
    events.sort(key=lambda e: (e["time_ms"], e["seq"]))
    rows = tell("c", "g", events)
    assert rows["rebalances"] and all(r["source"] != "broker" for r in rows["rebalances"])
    for rebalance in rows["rebalances"]:
        start = rebalance["start_ms"]
        expected = [(member, cause) for at, _, member, cause in sorted(told)
                    if -CLIENT_CLOCK_SLACK_MS <= start - at <= EVIDENCE_WINDOW_MS]
        got = [(c["member"], c["cause"]) for c in rows["causes"]
               if c["start_ms"] == start and (c["member"] or "").startswith("s-")]
        assert got == expected, start


@pytest.mark.parametrize(("before_ms", "events_of_member"), [
    (0, 1), (1, 1), (59_999, 1), (60_000, 1), (60_001, 2), (600_000, 2), (None, 1)])
def test_a_member_named_by_a_reason_is_one_event_with_its_own_line_within_the_window(before_ms, events_of_member):
    """The member's own line up to ``EVIDENCE_WINDOW_MS`` before the rebalance that names it (or
    a line without a time: near anything) is the same happening, told once; further back, the
    reason tells a happening of its own."""
    start = 1_578_521_740_011
    member = "consumer-4-69701591-42ac-430c-9b90-1e7842d60baa"
    events = [
        {"source": "b.log", "seq": 0, "time_ms": None if before_ms is None else start - before_ms,
         "kind": "member_failed", "side": "broker", "library": "broker", "member": member, "group": "shipping",
         "line": "has failed"},
        {"source": "b.log", "seq": 1, "time_ms": start, "kind": "preparing_rebalance", "side": "broker",
         "library": "broker", "group": "shipping", "state": "PreparingRebalance", "old_generation": 30,
         "reason": f"removing member {member} on heartbeat expiration", "line": "Preparing"},
        {"source": "b.log", "seq": 2, "time_ms": start + 2_000, "kind": "stabilized", "side": "broker",
         "library": "broker", "group": "shipping", "generation": 31, "line": "Stabilized"},
    ]
    rows = tell("c", "shipping", events)
    assert len([e for e in rows["member_events"] if e["member"] == member]) == events_of_member
