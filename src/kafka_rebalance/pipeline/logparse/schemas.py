"""The output tables of ``kafka-rebalance logs``: their columns and types, one schema per table
that both engines write (as a pyarrow schema; both turn the story's rows into Arrow batches of
it, ``story_table_batch``; the report reads them as Arrow tables, ``report.logs.report_tables``). ``member_events.source``
says how a member event was learnt: from its own ``line``, or from the ``reason`` of a
rebalance that names the member; ``input`` is the file.
``rebalances.during`` lists what happened while a rebalance was open (members that failed,
left, joined or did not rejoin in time): never its cause, which is at or before its start.
Time columns are carried as epoch milliseconds (``*_ms``) inside the story and written as
timestamps (``start``, ``end``, ``time``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_rebalance.pipeline.logparse.parse import EVENT_COLUMNS

STRING, LONG, DOUBLE, BOOL, TIME, STRINGS = "string", "long", "double", "boolean", "timestamp", "array<string>"

# table -> [(column, type, story field)]; a TIME column is made from the story's *_ms field.
TABLES: dict[str, list[tuple[str, str, str]]] = {
    "rebalances": [
        ("group", STRING, "group"), ("generation", LONG, "generation"), ("start", TIME, "start_ms"),
        ("end", TIME, "end_ms"), ("duration_ms", LONG, "duration_ms"), ("reason", STRING, "reason"),
        ("members", LONG, "members"), ("old_generation", LONG, "old_generation"), ("leader", STRING, "leader"),
        ("outcome", STRING, "outcome"), ("failed_members", STRINGS, "failed_members"),
        ("left_members", STRINGS, "left_members"), ("partition", LONG, "partition"), ("cluster", STRING, "cluster"),
        ("protocol", STRING, "protocol"), ("source", STRING, "source"), ("start_known", BOOL, "start_known"),
        ("joined_members", STRINGS, "joined_members"), ("assignor", STRING, "assignor"),
        ("assignor_ms", LONG, "assignor_ms"), ("cause", STRING, "cause"), ("cause_member", STRING, "cause_member"),
        ("drawn_until", TIME, "clip_ms"), ("during", STRINGS, "during"),
    ],
    "member_events": [
        ("group", STRING, "group"), ("member", STRING, "member"), ("time", TIME, "time_ms"), ("kind", STRING, "kind"),
        ("client", STRING, "client"), ("reason", STRING, "reason"), ("cluster", STRING, "cluster"),
        ("source", STRING, "source"), ("side", STRING, "side"), ("generation", LONG, "generation"),
        ("cause", STRING, "cause"), ("input", STRING, "input"),
    ],
    "storms": [
        ("group", STRING, "group"), ("start", TIME, "start_ms"), ("end", TIME, "end_ms"),
        ("rebalances", LONG, "rebalances"), ("duration_ms", LONG, "duration_ms"), ("failures", LONG, "failures"),
        ("leaves", LONG, "leaves"), ("top_client", STRING, "top_client"),
        ("top_client_failures", LONG, "top_client_failures"), ("kind", STRING, "kind"), ("cluster", STRING, "cluster"),
        ("restarts", LONG, "restarts"),
    ],
    "empty_periods": [
        ("group", STRING, "group"), ("generation", LONG, "generation"), ("start", TIME, "start_ms"),
        ("end", TIME, "end_ms"), ("duration_ms", LONG, "duration_ms"), ("cluster", STRING, "cluster"),
    ],
    "client_rebalances": [
        ("source", STRING, "source"), ("client_library", STRING, "client_library"), ("group", STRING, "group"),
        ("member", STRING, "member"), ("generation", LONG, "generation"), ("protocol", STRING, "protocol"),
        ("assigned", STRINGS, "assigned"), ("revoked", STRINGS, "revoked"), ("lost", STRINGS, "lost"),
        ("start", TIME, "start_ms"), ("end", TIME, "end_ms"), ("cluster", STRING, "cluster"),
        ("client", STRING, "client"), ("duration_ms", LONG, "duration_ms"), ("outcome", STRING, "outcome"),
        ("reason", STRING, "reason"),
    ],
    "causes": [
        ("cluster", STRING, "cluster"), ("group", STRING, "group"), ("generation", LONG, "generation"),
        ("start", TIME, "start_ms"), ("cause", STRING, "cause"), ("member", STRING, "member"),
        ("detail", STRING, "detail"), ("evidence", STRINGS, "evidence"), ("evidence_sources", STRINGS, "evidence_sources"),
    ],
    "unrecognised": [
        ("cluster", STRING, "cluster"), ("source", STRING, "source"), ("shape", STRING, "shape"),
        ("count", LONG, "count"), ("sample", STRING, "sample"),
    ],
}
STORY_TABLES = ("rebalances", "member_events", "storms", "empty_periods", "client_rebalances", "causes")


def arrow_schema(table: str) -> Any:
    import pyarrow as pa

    if table == "events":
        return pa.schema([(name, _arrow_type(kind)) for name, kind in (*EVENT_COLUMNS, ("shape", STRING))])
    return pa.schema([(column, _arrow_type(kind)) for column, kind, _ in TABLES[table]])


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    return {STRING: pa.string(), LONG: pa.int64(), DOUBLE: pa.float64(), BOOL: pa.bool_(),
            TIME: pa.timestamp("ms"), STRINGS: pa.list_(pa.string())}[kind]


def story_table_batch(table: str, rows: Sequence[Mapping[str, Any]]) -> Any:
    """One table's rows (story fields, times as epoch ms) -> a batch of the table's own columns
    and types (times from epoch ms, missing lists as empty): how both engines turn rows into a
    table. The rows are read as one struct array: Arrow looks the fields up in each dict itself."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = TABLES[table]
    rows_type = pa.struct([(story_field, _arrow_type(kind)) for _, kind, story_field in columns])
    arrays = []
    for (_, kind, _), values in zip(columns, pa.array(rows, rows_type).flatten(), strict=True):
        if kind == STRINGS and values.null_count:
            values = pc.if_else(pc.is_null(values), pa.scalar([], values.type), values)
        arrays.append(values)
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(table))


def story_table(table: str, rows: Sequence[Mapping[str, Any]]) -> Any:
    """``story_table_batch`` as a table."""
    import pyarrow as pa

    return pa.Table.from_batches([story_table_batch(table, rows)])


# Text that seldom repeats (a line, a reason, a member's or client's id): Parquet tries a
# dictionary for every column by default and drops it once it grows too large, which cost a
# sixth of writing ``events``; the texts that repeat (groups, kinds, states) keep theirs.
FREE_TEXT = frozenset(("line", "reason", "member", "leader", "cause_member", "client_id", "client", "instance_id",
                       "old_member", "detail", "sample"))


def dictionary_columns(schema: Any) -> list[str]:
    """The columns of ``schema`` Parquet stores with a dictionary (``use_dictionary``)."""
    import pyarrow as pa

    return [field.name for field in schema if pa.types.is_string(field.type) and field.name not in FREE_TEXT]


def write_part(table: Any, location: str, row_group_size: int | None = None) -> None:
    """One Parquet file of a table at ``location`` (a path or URL, written through
    ``pipeline.io.write_file``), dictionaries for the texts that repeat."""
    from kafka_rebalance.pipeline.io import write_parquet

    write_parquet(table, location, row_group_size=row_group_size, use_dictionary=dictionary_columns(table.schema))


def write_table(table: Any, directory: str | Path) -> None:
    """One table as a directory (a path or URL) with one Parquet file (the layout Spark writes)."""
    from kafka_rebalance.pipeline.io import join

    write_part(table, join(str(directory), "part-00000.parquet"))
