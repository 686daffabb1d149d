"""The logs report's per-group section and the tables it reads."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pyarrow as pa

from kafka_rebalance.pipeline.advice import Advice
from kafka_rebalance.pipeline.logparse.schemas import TABLES, story_table, write_table
from kafka_rebalance.pipeline.report.logs import (
    LOG_TABLES,
    REPORT_COLUMNS,
    findings_columns,
    group_answer,
    group_section,
    read_tables,
    storms_figure,
)

T1, T2, T3 = (datetime(2024, 5, 1, 10, m) for m in (1, 2, 3))
TIME = pa.timestamp("ms")


def _rebalances(rows):
    return pa.table({
        "start": pa.array([r[0] for r in rows], TIME), "generation": pa.array([r[1] for r in rows], pa.int64()),
        "outcome": ["stable"] * len(rows), "duration_ms": [1000] * len(rows), "members": [3] * len(rows),
        "cause": ["joined"] * len(rows), "cause_member": pa.array([None] * len(rows), pa.string())})


def _causes(rows):
    return pa.table({
        "start": pa.array([r[0] for r in rows], TIME), "generation": pa.array([r[1] for r in rows], pa.int64()),
        "cause": ["left"] * len(rows), "detail": pa.array([r[2] for r in rows], pa.string()),
        "evidence": pa.array([[f"line of {r[2]}"] for r in rows], pa.list_(pa.string()))})


def _evidence(page: str) -> list[list[str]]:
    """Per table row (in time order), the details of the causes shown."""
    rows = page.split("<tbody>", 1)[1].split("<tr>")[1:]
    return [[item.split(": ", 1)[1].split("<pre>", 1)[0] for item in row.split("<li>")[1:]] for row in rows]


def test_a_rebalance_shows_the_causes_of_its_generation_and_those_without_one_that_started_with_it():
    rebalances = _rebalances([(T1, 5), (T2, 6), (T3, None)])
    causes = _causes([(T1, None, "no generation, at T1"), (T1, 5, "generation 5"), (T2, 5, "generation 5 again"),
                      (T2, None, "no generation, at T2"), (T3, None, "no generation, at T3"), (T1, 6, "generation 6"),
                      (T3, 7, "generation 7")])
    shown = _evidence(group_section(group_answer("g", rebalances, causes, [])))
    assert shown == [
        ["no generation, at T1", "generation 5", "generation 5 again"],
        ["no generation, at T2", "generation 6"],
        ["no generation, at T3"],
    ]


def test_a_group_without_causes_shows_its_rebalances_without_evidence():
    page = group_section(group_answer("g", _rebalances([(T1, 5), (T2, None)]), _causes([]), []))
    assert page.count("<tr><td>") == 2 and "evidence" not in page


def test_advice_as_dict_has_every_field():
    item = Advice("g", "problem", "finding", "advice", "storms", "east")
    assert item.as_dict() == dataclasses.asdict(item)
    assert list(item.as_dict()) == [f.name for f in dataclasses.fields(Advice)]


def test_the_report_reads_the_columns_it_shows(tmp_path):
    for table in LOG_TABLES:
        write_table(story_table(table, []), tmp_path / table)
    tables = read_tables(tmp_path)
    for table in LOG_TABLES:
        wanted = REPORT_COLUMNS.get(table) or [column for column, _, _ in TABLES[table]]
        assert tables[table].column_names == list(wanted)


def test_the_storms_figure_counts_every_rebalance_of_every_storm_of_a_group():
    groups = findings_columns([{"cluster": "c", "group": "busy", "rebalances": 9, "failures": 1, "storms": 2},
                               {"cluster": "c", "group": "calm", "rebalances": 3, "failures": 0, "storms": 1},
                               {"cluster": "c", "group": "quiet", "rebalances": 1, "failures": 0, "storms": 0}])
    storms = pa.table({"group": ["calm", "busy", "busy"], "rebalances": [3, 3, 4]})
    data = storms_figure(groups, storms).data
    assert dict(zip(data.column("group"), data.column("rebalances_in_storms"), strict=True)) == {
        "busy": 7, "calm": 3, "quiet": 0}
