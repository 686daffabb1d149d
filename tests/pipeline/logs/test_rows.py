"""The typed rows (``logparse.rows``) and the columns declared as data for Arrow and pandas
(``parse.EVENT_COLUMNS``, ``schemas.TABLES``) name the same fields: mypy checks the story
against the one, the tables are written from the other."""

from __future__ import annotations

import pytest

from kafka_rebalance.pipeline.logparse import rows
from kafka_rebalance.pipeline.logparse.parse import EVENT_COLUMNS
from kafka_rebalance.pipeline.logparse.schemas import TABLES
from kafka_rebalance.pipeline.logparse.story import STORY_FIELDS

ROW_TYPES = {"rebalances": rows.RebalanceRow, "member_events": rows.MemberEventRow, "storms": rows.StormRow,
             "empty_periods": rows.EmptyPeriodRow, "client_rebalances": rows.ClientRebalanceRow,
             "causes": rows.CauseRow, "unrecognised": rows.UnrecognisedRow}


def test_every_event_column_and_story_field_is_an_event_field():
    fields = set(rows.Event.__annotations__)
    assert {name for name, _ in EVENT_COLUMNS} <= fields
    assert fields >= STORY_FIELDS
    assert {"line_no", "shape"} <= fields


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_column_of_a_table_is_a_field_of_its_row(table):
    row_type = ROW_TYPES[table]
    assert {story_field for _, _, story_field in TABLES[table]} <= set(row_type.__annotations__)
    # the fields that are no column: read by the findings, or a member event's line (evidence)
    extra = set(row_type.__annotations__) - {story_field for _, _, story_field in TABLES[table]}
    assert extra <= {"during_rebalance", "line"}
