"""The story over columns gives what the Python story's rules give (``logparse.columns``), step by
step: so far the rows of each group in time order, each line once."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse.columns.order import story_rows
from kafka_rebalance.pipeline.logparse.order import distinct_events, order_events
from kafka_rebalance.pipeline.logparse.schemas import arrow_schema
from kafka_rebalance.pipeline.logparse.story import SORT_KEYS
from tests.pipeline.logs.test_story_paths import (
    event_strategy,
    ordered_by_file_then_time,
    parsed_groups,
    without_repeats,
)


def in_story_order(records: list[dict[str, Any]]) -> list[int]:
    """The Python rule's answer, as row numbers of ``records``: each group's rows (in the
    order given) by ``ordered_by_file_then_time`` and ``without_repeats``, groups in order."""
    by_group: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row, record in enumerate(records):
        by_group[(record["cluster"], record["group"])].append({**record, "row": row})
    return [event["row"] for key in sorted(by_group)
            for event in without_repeats(ordered_by_file_then_time(by_group[key]))]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([("c1", "g1"), ("c1", "g2"), ("c2", "g1")]),
                          st.one_of(event_strategy(nulls=False), event_strategy(nulls=True))), max_size=16))
def test_story_rows_as_the_rule_says(grouped: list[tuple[tuple[str, str], dict[str, Any]]]) -> None:
    import pyarrow as pa

    # Every event has its source and seq (the reader gives them): the rule's None as "" and 0.
    records = sorted(({**event, "cluster": cluster, "group": group, "source": event["source"] or "",
                       "seq": event["seq"] or 0} for (cluster, group), event in grouped),
                     key=lambda e: (e["cluster"], e["group"], e["source"], e["seq"]))
    table = pa.Table.from_pylist(records, schema=arrow_schema("events"))
    assert story_rows(table).tolist() == in_story_order(records)


def test_story_rows_of_the_excerpt_corpus_as_the_python_story_orders_them() -> None:
    import pyarrow as pa

    groups, _ = parsed_groups()
    once = [record for events in groups.values() for record in events]
    # every file given twice, as a copy beside its original: each line once all the same
    records = once + [{**record, "source": f"{record['source']}.copy"} for record in once]
    table = pa.Table.from_pylist(records, schema=arrow_schema("events")).sort_by(SORT_KEYS)
    records = table.to_pylist()
    rows = story_rows(table).tolist()
    expected = []
    for key in sorted(groups):
        numbered = [{**record, "row": row} for row, record in enumerate(records)
                    if (record["cluster"], record["group"]) == key]
        expected.extend(event["row"] for event in distinct_events(order_events(numbered)))
    assert len(rows) < len(records) and rows == expected


def test_story_rows_of_no_events() -> None:
    assert story_rows(arrow_schema("events").empty_table()).tolist() == []


def groups_in_story_order(table: Any, rows: Any) -> list[tuple[tuple[str, str], list]]:
    """Each group's (cluster, group) and events, as the Python story reads them, in the order
    ``story_rows`` gives: the groups numbered as the columns number them."""
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.story import story_events

    ordered = table.take(pa.array(rows))
    runs: list[tuple[tuple[str, str], list]] = []
    for event, key in zip(story_events(ordered), zip(ordered.column("cluster").to_pylist(),
                                                     ordered.column("group").to_pylist(), strict=True), strict=True):
        if not runs or runs[-1][0] != key:
            runs.append((key, []))
        runs[-1][1].append(event)
    return runs


def group_stories(table: Any, rows: Any, covered: Any) -> list[tuple[int, Any]]:
    """``group_story.GroupStory`` told to its end for each ``covered`` group, by group number."""
    from kafka_rebalance.pipeline.logparse.group_story import GroupStory

    told = []
    for number, ((cluster, group), events) in enumerate(groups_in_story_order(table, rows)):
        if covered[number]:
            story = GroupStory(cluster, group)
            for event in events:
                story.feed(event)
            story.finish()
            told.append((number, story))
    return told


def python_classic_rebalances(table: Any, rows: Any, covered: Any) -> list[tuple]:
    """``group_story.GroupStory``'s classic rebalances of the ``covered`` groups (by their number
    in story order), as tuples of what ``classic_rebalances`` tells."""


    told = []
    for number, story in group_stories(table, rows, covered):
        for r in sorted(story.rebalances, key=lambda r: r.start_ms if r.start_ms is not None else -1):
            told.append((number, r.start_ms, r.old_generation, r.generation, r.members, r.end_ms, r.outcome,
                         r.start_known, r.stabilized_ms, r.clip_ms, r.reason, r.state, r.leader))
    return told


def column_classic_rebalances(table: Any, rows: Any) -> tuple[list[tuple], Any]:
    import math

    from kafka_rebalance.pipeline.logparse.columns.rebalances import OUTCOMES, classic_rebalances

    told = classic_rebalances(table, rows)
    values = told.values

    def number(name: str, i: int) -> int | None:
        return None if math.isnan(values[name][i]) else int(values[name][i])

    def text(column: str, name: str, i: int) -> str | None:
        row = number(name, i)
        return None if row is None else table.column(column)[row].as_py()

    return [(int(told.group[i]), number("start_ms", i), number("old_generation", i), number("generation", i),
             number("members", i), number("end_ms", i), OUTCOMES[int(values["outcome"][i])],
             bool(values["start_known"][i]), number("stabilized_ms", i), number("clip_ms", i),
             text("reason", "reason_row", i), text("state", "state_row", i), text("member", "leader_row", i))
            for i in range(len(told.group))], told.covered


CLASSIC_LINE = st.fixed_dictionaries({
    "kind": st.sampled_from(["preparing_rebalance"] * 3 + ["stabilized"] * 2 + ["assignment_received"] * 2
                            + ["group_empty", "group_dead", "member_joined", "group_epoch_bumped"]),
    "time_ms": st.one_of(st.none(), st.integers(0, 6)), "old_generation": st.one_of(st.none(), st.integers(0, 3)),
    "generation": st.one_of(st.none(), st.integers(0, 4)),
    "state": st.sampled_from([None, "Stable", "CompletingRebalance", "PreparingRebalance"]),
    "members": st.one_of(st.none(), st.integers(0, 3)), "member": st.sampled_from([None, "", "m1", "m2"]),
    "reason": st.sampled_from([None, "x", "y"]), "source": st.sampled_from(["a.log", "b.log"]),
    "seq": st.integers(0, 20), "group": st.sampled_from(["g1", "g2"]),
    "side": st.just("broker"), "library": st.just("broker")})


@settings(max_examples=200, deadline=None)
@given(st.lists(CLASSIC_LINE, max_size=14))
def test_classic_rebalances_as_the_group_story_tells_them(lines: list[dict[str, Any]]) -> None:
    """Any order of the coordinator's classic lines, with times, generations and states missing
    or out of step: the rebalances over columns are the Python story's."""
    table = events_table(lines)
    rows = story_rows(table)
    told, covered = column_classic_rebalances(table, rows)
    assert told == python_classic_rebalances(table, rows, covered)


def events_table(lines: list[dict[str, Any]], cluster: str = "c") -> Any:
    """Lines of one cluster as an ``events`` table sorted for the stories."""
    import pyarrow as pa

    records = [{**line, "cluster": cluster} for line in lines]
    return pa.Table.from_pylist(records, schema=arrow_schema("events")).sort_by(SORT_KEYS)


def excerpt_corpora() -> Any:
    """The events of every excerpt log (each file its own cluster), sorted for the stories."""
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.local_engine import story_input
    from kafka_rebalance.pipeline.logparse.readlog import SplitReader
    from kafka_rebalance.pipeline.logparse.scan import Split
    from tests.conftest import TEST_SYSLOG

    data = Path(__file__).resolve().parents[2] / "data"
    files = sorted(path for folder in ("excerpts", "excerpts-edges", "logs") for path in (data / folder).rglob("*")
                   if path.is_file())
    parts = [table for index, path in enumerate(files)
             for table in SplitReader(Split(str(path)), index, str(path), f"c{index}", syslog=TEST_SYSLOG,
                                      line_numbers=True).tables()]
    return story_input(pa.concat_tables(parts))


def test_classic_rebalances_of_the_excerpt_corpora() -> None:
    table = excerpt_corpora()
    rows = story_rows(table)
    told, covered = column_classic_rebalances(table, rows)
    assert len(told) > 40 and covered.sum() > 40 and not covered.all()  # the KIP-848 groups: not yet
    assert told == python_classic_rebalances(table, rows, covered)


def python_reason_members(reasons: list[str | None]) -> list[tuple]:
    from kafka_rebalance.pipeline.logparse.causes import members_in_reason

    return [(index, *named) for index, reason in enumerate(reasons) for named in members_in_reason(reason)]


def column_reason_members(reasons: list[str | None]) -> list[tuple]:
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.columns.members import reason_members

    found = reason_members(pa.array(reasons, pa.string()))
    return list(zip(found.reason.tolist(), found.member.to_pylist(), found.kind.to_pylist(), found.cause.to_pylist(),
                    found.detail.to_pylist(), found.static.tolist(), strict=True))


_MEMBER = st.sampled_from(["m-1", "consumer-a-1-3f2e", "c.d_e", "x"])
_REASON_PART = st.one_of(
    st.builds("Adding new member {} with group instance id {}".format, _MEMBER, st.sampled_from(["i1", "None", "null"])),
    st.builds("adding new member {}".format, _MEMBER),
    st.builds("Updating metadata for static member {} with instance id {}".format, _MEMBER, st.just("i2")),
    st.builds("Updating metadata for member {} during Stable".format, _MEMBER),
    st.builds("Leader {} re-joining group during Stable".format, _MEMBER),
    st.builds("Member {} is joining group during Stable".format, _MEMBER),
    st.builds("removing member {} on LeaveGroup".format, _MEMBER),
    st.builds("explicit `LeaveGroup` request for ({}, {}) members".format, _MEMBER, _MEMBER),
    st.builds("removing member {} on heartbeat expiration".format, _MEMBER),
    st.builds("Removing Set({}, {}) on pending sync request expiration".format, _MEMBER, _MEMBER),
    st.just("client reason: consumer poll timeout has expired."), st.just("client reason: need to rejoin"),
    st.just("unrelated"),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(_REASON_PART, max_size=3).map("; ".join)), max_size=8))
def test_reason_members_as_members_in_reason(reasons: list[str | None]) -> None:
    """Reasons naming none, one or several members, in every wording, with a client's reason:
    the members over columns are ``members_in_reason``'s, in its order."""
    assert column_reason_members(reasons) == python_reason_members(reasons)


def test_reason_members_of_the_excerpt_corpora() -> None:
    data = Path(__file__).resolve().parents[2] / "data"
    reasons = []
    for path in sorted(p for folder in ("excerpts", "excerpts-edges", "logs") for p in (data / folder).rglob("*")
                       if p.is_file()):
        for line in path.read_text(errors="replace").splitlines():
            if "reason" in line:
                reasons.append(line.split("reason: ", 1)[-1].split("reason ", 1)[-1])
    assert len(python_reason_members(reasons)) > 20
    assert column_reason_members(reasons) == python_reason_members(reasons)


def python_member_events(table: Any, rows: Any, covered: Any) -> list[tuple]:
    """``group_story.GroupStory``'s member events of the ``covered`` groups (by their number in
    story order), as tuples of ``MEMBER_EVENT_FIELDS``."""

    from kafka_rebalance.pipeline.logparse.columns.members import MEMBER_EVENT_FIELDS

    told = []
    for number, story in group_stories(table, rows, covered):
        told.extend((number, *(row.get(name) for name in MEMBER_EVENT_FIELDS)) for row in story.member_events)
    return told


def column_member_events(table: Any, rows: Any) -> tuple[list[tuple], Any]:
    from kafka_rebalance.pipeline.logparse.columns.members import MEMBER_EVENT_FIELDS, member_events
    from kafka_rebalance.pipeline.logparse.columns.rebalances import classic_rebalances

    told = member_events(table, rows, classic_rebalances(table, rows))
    columns = [told.columns[name].to_pylist() for name in MEMBER_EVENT_FIELDS]
    return [(int(group), *values) for group, *values in zip(told.group.tolist(), *columns, strict=True)], told.covered


# Two kafka-python clients of different versions: a group's finding names the oldest.
_MEMBERS = ["consumer-1-0b5cbd7e-8a1b-4c7e-9d43-0c6f6d1a2b3c", "consumer-1-1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b",
            "app-2", "x", "kafka-python-2.0.2-7c1e0d2a-4b5f-4e21-9a3c-2d1e0f9a8b7c",
            "kafka-python-1.4.7-3a2b1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d"]
_MEMBER_REASON = st.one_of(
    st.builds("Adding new member {} with group instance id {}".format, st.sampled_from(_MEMBERS),
              st.sampled_from(["i1", "None"])),
    st.builds("removing member {} on heartbeat expiration".format, st.sampled_from(_MEMBERS)),
    st.builds("removing member {} on LeaveGroup; client reason: {}".format, st.sampled_from(_MEMBERS),
              st.sampled_from(["consumer poll timeout has expired.", "the consumer is being closed"])),
    st.builds("Leader {} re-joining group during Stable".format, st.sampled_from(_MEMBERS)),
    st.just("Removing Set(app-2, x) on pending sync request expiration"), st.just("unrelated"))
MEMBER_LINE = st.fixed_dictionaries({
    "kind": st.sampled_from(["preparing_rebalance"] * 3 + ["member_joined"] * 3 + ["member_failed"] * 2
                            + ["member_left"] * 2 + ["stabilized", "assignment_received", "members_not_rejoined",
                                                     "group_loaded", "group_dead", "client_poll_timeout",
                                                     "client_leave", "member_fenced"]),
    "time_ms": st.one_of(st.none(), st.sampled_from([0, 30_000, 60_000, 60_001, 90_000, 150_000])),
    "old_generation": st.one_of(st.none(), st.integers(0, 2)), "generation": st.one_of(st.none(), st.integers(0, 3)),
    "state": st.sampled_from([None, "Stable", "CompletingRebalance"]),
    "member": st.sampled_from([None, "", *_MEMBERS]), "client_id": st.sampled_from([None, "", "consumer-1"]),
    "membership": st.sampled_from([None, "Dynamic", "Static"]),
    "reason": st.one_of(st.none(), st.lists(_MEMBER_REASON, min_size=1, max_size=2).map("; ".join)),
    "line": st.sampled_from([None, "... removed dynamic members who haven't joined: app-2, x"]),
    "source": st.sampled_from(["a.log", "b.log"]), "seq": st.integers(0, 30), "group": st.sampled_from(["g1", "g2"]),
    "side": st.sampled_from(["broker", "client"]), "library": st.sampled_from(["broker", "broker-kip848"])})


@settings(max_examples=200, deadline=None)
@given(st.lists(MEMBER_LINE, max_size=16))
def test_member_events_as_the_group_story_tells_them(lines: list[dict[str, Any]]) -> None:
    """Member lines and reasons naming members, near and far in time, with times, members and
    client ids missing: the member events over columns are the Python story's, in its order."""
    table = events_table(lines)
    rows = story_rows(table)
    told, covered = column_member_events(table, rows)
    assert told == python_member_events(table, rows, covered)


def test_member_events_of_the_excerpt_corpora() -> None:
    table = excerpt_corpora()
    rows = story_rows(table)
    told, covered = column_member_events(table, rows)
    assert len(told) > 40 and covered.sum() > 40
    assert told == python_member_events(table, rows, covered)


def python_rebalance_causes(table: Any, rows: Any, covered: Any) -> tuple[list[tuple], list[tuple]]:
    """``story.tell``'s rebalances (their lists and primary cause) and causes of the
    ``covered`` groups, by the groups' numbers in story order."""

    from kafka_rebalance.pipeline.logparse.story import tell

    runs = groups_in_story_order(table, rows)
    rebalances, causes = [], []
    for number, ((cluster, group), events) in enumerate(runs):
        if not covered[number]:
            continue
        told = tell(cluster, group, events)
        rebalances.extend((number, r["failed_members"], r["left_members"], r["joined_members"], r["during"],
                           r["cause"], r["cause_member"]) for r in told["rebalances"])
        causes.extend((number, c["generation"], c["start_ms"], c["cause"], c["member"], c["detail"], c["evidence"],
                       c["evidence_sources"]) for c in told["causes"])
    return rebalances, causes


def column_rebalance_causes(table: Any, rows: Any) -> tuple[list[tuple], list[tuple], Any]:
    import math

    from kafka_rebalance.pipeline.logparse.columns.causes import rebalance_causes
    from kafka_rebalance.pipeline.logparse.columns.members import member_events
    from kafka_rebalance.pipeline.logparse.columns.rebalances import classic_rebalances

    rebalances = classic_rebalances(table, rows)
    told = rebalance_causes(table, rows, rebalances, member_events(table, rows, rebalances))
    lists = [told.failed.to_pylist(), told.left.to_pylist(), told.joined.to_pylist(), told.during.to_pylist(),
             told.cause.to_pylist(), told.cause_member.to_pylist()]
    group = rebalances.group.tolist()
    rows_told = [(group[i], *(column[i] for column in lists)) for i in range(len(group)) if told.covered[group[i]]]

    def number(name: str, i: int) -> int | None:
        value = rebalances.values[name][i]
        return None if math.isnan(value) else int(value)

    causes = told.causes
    causes_told = [(group[i], number("generation", i), number("start_ms", i), *values)
                   for i, *values in zip(causes["rebalance"].tolist(), causes["cause"].to_pylist(),
                                         causes["member"].to_pylist(), causes["detail"].to_pylist(),
                                         causes["evidence"].to_pylist(), causes["evidence_sources"].to_pylist(),
                                         strict=True)]
    return rows_told, causes_told, told.covered


CAUSE_LINE = st.fixed_dictionaries({
    "kind": st.sampled_from(["preparing_rebalance"] * 4 + ["member_joined"] * 3 + ["member_failed"] * 2
                            + ["member_left"] * 2 + ["stabilized"] * 2 + ["assignment_received", "group_empty",
                                                                          "members_not_rejoined", "group_loaded",
                                                                          "group_dead"]),
    "time_ms": st.sampled_from([0, 30_000, 60_000, 60_001, 90_000, 150_000]),
    "old_generation": st.one_of(st.none(), st.integers(0, 2)), "generation": st.one_of(st.none(), st.integers(0, 3)),
    "state": st.sampled_from([None, "Stable", "CompletingRebalance"]),
    "members": st.one_of(st.none(), st.integers(0, 3)),
    "member": st.sampled_from([None, "", *_MEMBERS]), "client_id": st.sampled_from([None, "consumer-1"]),
    "membership": st.sampled_from([None, "Dynamic", "Static"]),
    "reason": st.one_of(st.none(), st.just(""), st.lists(_MEMBER_REASON, min_size=1, max_size=2).map("; ".join)),
    "line": st.sampled_from([None, "... removed dynamic members who haven't joined: app-2, x"]),
    "source": st.sampled_from(["a.log", "b.log"]), "seq": st.integers(0, 30), "group": st.sampled_from(["g1", "g2"]),
    "side": st.just("broker"), "library": st.just("broker")})


@settings(max_examples=200, deadline=None)
@given(st.lists(CAUSE_LINE, max_size=18))
def test_rebalance_causes_as_the_story_tells_them(lines: list[dict[str, Any]]) -> None:
    """Rebalances opened, closed and superseded among member lines, joins and departures at
    their start, during them and between them, reasons naming members: each rebalance's lists
    and causes over columns are the Python story's."""
    table = events_table(lines)
    rows = story_rows(table)
    rebalances, causes, covered = column_rebalance_causes(table, rows)
    assert (rebalances, causes) == python_rebalance_causes(table, rows, covered)


def test_rebalance_causes_of_the_excerpt_corpora() -> None:
    table = excerpt_corpora()
    rows = story_rows(table)
    rebalances, causes, covered = column_rebalance_causes(table, rows)
    assert len(causes) > 20 and covered.sum() > 20
    assert (rebalances, causes) == python_rebalance_causes(table, rows, covered)


def python_story(table: Any, moves: Any) -> tuple[dict[str, Any], list[Any]]:
    """Every story table and the findings as ``story.tell_sorted`` tells them, group by group."""
    from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES, story_table
    from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, story_tables, tell_sorted

    rows: dict[str, list] = {name: [] for name in STORY_TABLES}
    findings = []
    for told in tell_sorted(table, moves, DEFAULT_STORM_RULE):
        for name, told_rows in story_tables(told):
            rows[name].extend(told_rows)
        findings.extend(told["findings"])
    return {name: story_table(name, rows[name]) for name in STORY_TABLES}, findings


# (a broker's kind of line is never on a client's side: the Python story refuses it)
ANY_LINE = st.one_of(CAUSE_LINE, MEMBER_LINE, CLASSIC_LINE).map(
    lambda line: {**line, "side": "client" if line["kind"].startswith("client_") else "broker"})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["c1", "c2"]), ANY_LINE), max_size=24))
def test_told_table_as_the_python_story_tells_it(lines: list[tuple[str, dict[str, Any]]]) -> None:
    """Groups the columns tell and groups they leave to Python (client lines, lines without a
    time), side by side in clusters with and without coordinator moves: every story table
    (rows in order) and every group's findings are the Python story's."""
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, tell_table

    records = [{**line, "cluster": cluster} for cluster, line in lines]
    table = pa.Table.from_pylist(records, schema=arrow_schema("events")).sort_by(SORT_KEYS)
    moves = {"c2": [{"kind": "coordinator_loaded", "partition": 3, "time_ms": 0, "cluster": "c2",
                     "line": "loaded", "source": "m.log", "seq": 0}]}
    told = tell_table(table, moves, DEFAULT_STORM_RULE)
    tables, findings = python_story(table, moves)
    for name, expected in tables.items():
        assert told.tables[name].equals(expected), name
    assert json.dumps(told.findings) == json.dumps(findings)  # types and order too: 2 is not 2.0


def test_told_table_of_the_excerpt_corpora() -> None:
    from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, tell_table

    table = excerpt_corpora()
    told = tell_table(table, {}, DEFAULT_STORM_RULE)
    tables, findings = python_story(table, {})
    for name, expected in tables.items():
        assert told.tables[name].equals(expected), name
    assert json.dumps(told.findings) == json.dumps(findings)  # types and order too: 2 is not 2.0


@settings(max_examples=150, deadline=None)
@given(st.lists(CAUSE_LINE, max_size=30))
def test_told_table_of_groups_the_columns_tell(lines: list[dict[str, Any]]) -> None:
    """Groups of the lines the columns tell, long enough for storms, medians of an even count
    of lengths and repeated failures: every table and every group's findings are the Python
    story's."""

    from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, tell_table

    table = events_table(lines)
    told = tell_table(table, {}, DEFAULT_STORM_RULE)
    tables, findings = python_story(table, {})
    for name, expected in tables.items():
        assert told.tables[name].equals(expected), name
    assert json.dumps(told.findings) == json.dumps(findings)
