"""The log story's vocabularies are closed: every kind of the message catalogue is an
``EventKind`` with a handler in the story, every ``EventKind`` has a message, and a kind no
reader knows is an error that names the line, never dropped."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from kafka_rebalance.pipeline.logparse.catalogue import MESSAGES
from kafka_rebalance.pipeline.logparse.causes import CAUSE_TITLES, UnknownCause, cause_title
from kafka_rebalance.pipeline.logparse.client_story import client_rebalances
from kafka_rebalance.pipeline.logparse.group_story import _HANDLERS, GroupStory
from kafka_rebalance.pipeline.logparse.inputs import read_text_lines
from kafka_rebalance.pipeline.logparse.kinds import (
    COORDINATOR_KINDS,
    Cause,
    EventKind,
    Library,
    MemberEventKind,
    Side,
    UnknownEventKind,
    event_kind,
)
from kafka_rebalance.pipeline.logparse.parse import LineError, parse_lines
from kafka_rebalance.pipeline.logparse.split_facts import fill_client_group
from kafka_rebalance.pipeline.logparse.story import tell
from tests.conftest import TEST_SYSLOG

EXCERPTS = Path(__file__).resolve().parents[2] / "data" / "excerpts"


def test_every_catalogue_kind_is_an_event_kind_and_every_event_kind_has_a_message():
    assert all(isinstance(m.kind, EventKind) and isinstance(m.side, Side) and isinstance(m.library, Library)
               for m in MESSAGES)
    assert {m.kind for m in MESSAGES} == set(EventKind)
    # a kind is written by one side only (the story reads broker and client lines differently)
    sides = {m.kind: {n.side for n in MESSAGES if n.kind is m.kind} for m in MESSAGES}
    assert all(len(s) == 1 for s in sides.values())
    assert all(sides[k] == {Side.CLIENT} for k in EventKind if k.startswith("client_"))


def test_every_event_kind_has_exactly_one_story_handler():
    assert set(_HANDLERS) == set(EventKind)
    for kind in EventKind:
        handler = GroupStory.handler_of(kind)
        assert callable(handler) and _HANDLERS[kind] is handler
    assert {k for k in EventKind if GroupStory.handler_of(k) is GroupStory._on_coordinator_move} == COORDINATOR_KINDS


@pytest.mark.parametrize("kind", list(EventKind))
def test_a_story_takes_an_event_of_every_kind(kind):
    """Each handler copes with the fewest fields a line of its kind can carry."""
    side = next(m.side for m in MESSAGES if m.kind is kind)
    library = next(m.library for m in MESSAGES if m.kind is kind)
    events = [{"kind": kind, "side": side, "library": library, "time_ms": 1_000, "source": "x.log", "seq": 0,
               "line": f"a {kind} line"}]
    rows = tell("c", "g", events)
    assert set(rows) >= {"rebalances", "member_events", "client_rebalances", "causes", "findings"}
    # an event as read back from Arrow or JSON (its kind a plain str) goes the same way
    assert tell("c", "g", [{**events[0], "kind": str(kind.value)}]) == rows


def test_an_unknown_kind_is_an_error_naming_the_line():
    event = {"kind": "rebalance_happened", "side": "broker", "time_ms": 1, "source": "x.log", "seq": 0,
             "line_no": 7, "line": "?"}
    with pytest.raises(LineError, match=r"x\.log, line 7: UnknownEventKind: unknown log event kind "
                                        r"'rebalance_happened'") as raised:
        tell("c", "g", [event])
    assert isinstance(raised.value.__cause__, UnknownEventKind)
    with pytest.raises(UnknownEventKind):
        client_rebalances("c", "g", [{**event, "side": "client"}])
    with pytest.raises(UnknownEventKind):
        event_kind(None)
    assert event_kind("stabilized") is EventKind.STABILIZED


def test_every_cause_has_a_title_and_an_unknown_cause_is_an_error():
    assert set(CAUSE_TITLES) == set(Cause)
    assert cause_title("session_timeout") == "a member failed: session timeout"
    with pytest.raises(UnknownCause):
        cause_title("bad luck")


def test_the_excerpts_stories_write_only_known_causes_and_member_event_kinds():
    """Every cause and member event the story tells over the 32 excerpts is a member of its enum."""
    causes: set[str] = set()
    member_kinds: set[str] = set()
    for path in sorted(EXCERPTS.glob("*.log")):
        by_group: dict[str, list[dict[str, typing.Any]]] = {}
        last_group: dict[str, str] = {}
        for record in parse_lines(read_text_lines(str(path)), path.name, syslog=TEST_SYSLOG):
            fill_client_group(record, last_group)
            if record["kind"] is not None and record.get("group"):
                by_group.setdefault(record["group"], []).append(record)
        for group, events in by_group.items():
            rows = tell("c", group, events)
            causes |= {c["cause"] for c in rows["causes"]} | {r["cause"] for r in rows["rebalances"]}
            member_kinds |= {e["kind"] for e in rows["member_events"]}
    assert causes <= set(Cause) and len(causes) > 5
    assert member_kinds <= set(MemberEventKind) and len(member_kinds) > 3


def test_findings_have_exactly_their_declared_fields_and_cross_json_checked():
    import json

    from kafka_rebalance.pipeline.logparse.findings import GroupFindings, findings_from_json

    told = tell("c", "g", [{"kind": EventKind.PREPARING_REBALANCE, "side": Side.BROKER, "library": Library.BROKER,
                            "time_ms": 1, "source": "x.log", "seq": 0, "old_generation": 3, "line": "?"}])
    [found] = told["findings"]
    assert set(found) == set(GroupFindings.__annotations__)
    assert findings_from_json(json.dumps(found)) == json.loads(json.dumps(found))
    with pytest.raises(ValueError, match="expected"):
        findings_from_json(json.dumps({**found, "mood": "grim"}))
