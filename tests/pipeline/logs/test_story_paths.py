"""The story's cheap paths give what the plain ones give: one sort when every line has a time,
repeats looked for among lines of one time, a bucket's events made dicts a slice at a time
with only the fields that have a value, story batches read as one struct array."""

from __future__ import annotations

from collections import defaultdict
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse import story
from kafka_rebalance.pipeline.logparse.inputs import read_text_lines
from kafka_rebalance.pipeline.logparse.kinds import COORDINATOR_KINDS
from kafka_rebalance.pipeline.logparse.order import distinct_events, order_events
from kafka_rebalance.pipeline.logparse.parse import parse_lines
from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES, arrow_schema, story_table
from kafka_rebalance.pipeline.logparse.split_facts import fill_client_group
from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, tell
from tests.conftest import TEST_SYSLOG
from tests.pipeline.logs.frames import to_frame

LOGS = Path(__file__).resolve().parents[2] / "data" / "logs"
# What makes two lines the same line (order.distinct_events)
IDENTITY = ("kind", "time_ms", "member", "generation", "old_generation", "state", "reason", "client_id", "partitions",
            "from_state")


def ordered_by_file_then_time(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rule itself: file order first, a line without a time at its file's last known time."""
    by_file = sorted(events, key=lambda e: (e.get("source") or "", e.get("seq") or 0))
    placed = []
    for source, lines in groupby(by_file, key=lambda e: e.get("source") or ""):
        known = -1
        for line in lines:
            known = line["time_ms"] if line.get("time_ms") is not None else known
            placed.append(((known, source, line.get("seq") or 0), line))
    return [line for _, line in sorted(placed, key=lambda pair: pair[0])]


def without_repeats(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple] = set()
    out = []
    for event in events:
        if event.get("time_ms") is not None:
            key = tuple(event.get(name) for name in IDENTITY)
            if key in seen:
                continue
            seen.add(key)
        out.append(event)
    return out


def event_strategy(nulls: bool) -> st.SearchStrategy[dict[str, Any]]:
    maybe = (lambda s: st.one_of(st.none(), s)) if nulls else (lambda s: s)
    return st.fixed_dictionaries(
        {"time_ms": maybe(st.integers(0, 4)), "source": maybe(st.sampled_from(["", "a.log", "b.log"])),
         "seq": maybe(st.integers(0, 5)), "kind": st.sampled_from(["stabilized", "member_failed"]),
         "member": st.sampled_from([None, "m1", "m2"]), "generation": st.sampled_from([None, 1, 2])},
        optional={"reason": st.sampled_from(["x", "y"])})


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(event_strategy(nulls=False), max_size=12), st.lists(event_strategy(nulls=True), max_size=12)))
def test_order_and_repeats_as_the_rule_says(events: list[dict[str, Any]]) -> None:
    for i, event in enumerate(events):
        event["id"] = i  # tells apart equal events, so the order is checked, not only the values
    expected = ordered_by_file_then_time(events)
    assert [e["id"] for e in order_events(events)] == [e["id"] for e in expected]
    assert [e["id"] for e in distinct_events(order_events(events))] == [e["id"] for e in without_repeats(expected)]


def parsed_groups() -> tuple[dict[tuple[str, str], list[dict]], dict[str, list[dict]]]:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    moves: dict[str, list[dict]] = defaultdict(list)
    for i, path in enumerate(sorted(LOGS.iterdir())):
        cluster = f"c{i % 2}"
        last_group: dict[str, str] = {}
        for record in parse_lines(read_text_lines(str(path), None), str(path), cluster, syslog=TEST_SYSLOG):
            fill_client_group(record, last_group)
            if record["kind"] in COORDINATOR_KINDS:
                moves[cluster].append(record)
            if record["kind"] is not None and record.get("group"):
                groups[(cluster, record["group"])].append(record)
    return groups, moves


@pytest.mark.parametrize("slice_rows", [1, 7, story.EVENT_SLICE_ROWS])
def test_tell_sorted_tells_each_group_as_tell_does(monkeypatch: pytest.MonkeyPatch, slice_rows: int) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    groups, moves = parsed_groups()
    records = [record for events in groups.values() for record in events]
    table = pa.Table.from_pylist(records, schema=arrow_schema("events")).sort_by(story.SORT_KEYS)
    expected = []
    for (cluster, group), _ in sorted(groups.items()):
        part = table.filter(pc.and_(pc.equal(table["cluster"], cluster), pc.equal(table["group"], group)))
        expected.append(tell(cluster, group, part.to_pylist(), moves.get(cluster), DEFAULT_STORM_RULE))
    monkeypatch.setattr(story, "EVENT_SLICE_ROWS", slice_rows)
    assert len(groups) > 5 and any(told["client_rebalances"] for told in expected)
    assert list(story.tell_sorted(table, moves, DEFAULT_STORM_RULE)) == expected


def test_tell_sorted_of_no_events() -> None:
    assert list(story.tell_sorted(arrow_schema("events").empty_table(), {}, DEFAULT_STORM_RULE)) == []


def test_story_tables_and_their_frames() -> None:
    """Missing fields and lists as nulls (empty lists), times from epoch ms, extra fields
    ignored; the pandas frame of a table (``to_frame``) has nullable integers and booleans,
    ``datetime64[ms]`` times and Python lists, and is the same table again."""
    import pandas as pd
    import pyarrow as pa

    rows = {
        "rebalances": [{"group": "g", "start_ms": 1_714_557_600_123, "failed_members": None, "start_known": True,
                        "extra": object()},
                       {"group": None, "end_ms": None, "left_members": ["a", "b"], "joined_members": []}, {}],
        "member_events": [{"member": "m", "time_ms": 5, "generation": 3, "cause": "left", "line": "x"},
                          {"member": "n", "time_ms": None}],
        "causes": [{"evidence": ["l1", "l2"], "evidence_sources": None, "start_ms": 0}],
    }
    rebalances = story_table("rebalances", rows["rebalances"]).to_pylist()
    assert rebalances[0]["start"] == pd.Timestamp(1_714_557_600_123, unit="ms").to_pydatetime()
    assert rebalances[0]["failed_members"] == [] and rebalances[1]["left_members"] == ["a", "b"]
    assert rebalances[1]["group"] is None and rebalances[0]["start_known"] is True
    for table in STORY_TABLES:
        arrow = story_table(table, rows.get(table, [{}]))
        assert arrow.schema == arrow_schema(table)
        df = to_frame(arrow)
        for (name, kind), dtype in zip(((f.name, f.type) for f in arrow.schema), df.dtypes, strict=True):
            if pa.types.is_int64(kind):
                assert dtype == pd.Int64Dtype(), (table, name)
            elif pa.types.is_boolean(kind):
                assert dtype == pd.BooleanDtype(), (table, name)
            elif pa.types.is_timestamp(kind):
                assert str(dtype) == "datetime64[ms]", (table, name)
            elif pa.types.is_list(kind):
                assert all(isinstance(value, list) for value in df[name]), (table, name)
        assert pa.Table.from_pandas(df, schema=arrow_schema(table), preserve_index=False).equals(arrow), table
