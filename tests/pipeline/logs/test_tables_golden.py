"""Every table ``logs`` writes for the excerpt corpus (tests/data/excerpts and excerpts-edges,
each input its own story scope), pinned row by row: ``tests/data/tables/excerpts.json`` holds
the rows the reader gave before it parsed a block's common lines a column at a time (written by
``python -m tests.pipeline.logs.test_tables_golden`` from that code), so both engines must still
give exactly these answers. Paths are reduced to file names; ``seq`` is each engine's own (the
local engine's line index, the Spark engine's byte offset), so the Spark comparison leaves it out."""

from __future__ import annotations

import json
import math
import sys
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "data"
GOLDEN = DATA / "tables" / "excerpts.json"
INPUTS = sorted(str(p) for folder in ("excerpts", "excerpts-edges") for p in (DATA / folder).iterdir()
                if p.name != "expected.json")
TABLES = ("events", "rebalances", "member_events", "storms", "empty_periods", "client_rebalances", "causes",
          "unrecognised")
# Only the local engine knows a line's number (``file:line`` in the causes' evidence).
ENGINE_OWN = {"events": ("seq",), "causes": ("evidence_sources",)}


def _plain(value: Any) -> Any:
    """A cell as JSON: paths as file names, times as epoch ms, lists as lists, nulls as None."""
    if value is None:
        return None
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return None if math.isnan(value) else int(value) if value.is_integer() else value
    if hasattr(value, "timestamp"):  # a naive time (pandas' or Arrow's) is UTC, whatever the machine's zone
        return int(value.replace(tzinfo=UTC).timestamp() * 1000)
    if isinstance(value, str) and "/tests/data/" in value:
        return value.replace(str(DATA) + "/", "")
    return value


def table_rows(columns: list[str], rows: list[list[Any]], skip: tuple[str, ...] = ()) -> list[str]:
    kept = [i for i, name in enumerate(columns) if name not in skip]
    return sorted(json.dumps([row[i] for i in kept], sort_keys=True) for row in rows)


def local_tables() -> dict[str, dict[str, Any]]:
    import pandas as pd

    from kafka_rebalance.pipeline.logparse.inputs import input_clusters
    from kafka_rebalance.pipeline.logparse.local_engine import analyse_local
    from tests.conftest import TEST_SYSLOG
    from tests.pipeline.logs.frames import frames_of

    labels = input_clusters(INPUTS)
    frames = frames_of(analyse_local([(name, labels[name]) for name in INPUTS], syslog=TEST_SYSLOG))
    out = {}
    for table in TABLES:
        frame = frames[table]
        rows = [[_plain(None if not isinstance(v, list | tuple) and not hasattr(v, "tolist") and pd.isna(v) else v)
                 for v in row] for row in frame.itertuples(index=False, name=None)]
        out[table] = {"columns": list(frame.columns), "rows": sorted(rows, key=json.dumps)}
    return out


def test_local_engine_gives_the_pinned_tables() -> None:
    golden = json.loads(GOLDEN.read_text())
    got = local_tables()
    for table in TABLES:
        assert got[table]["columns"] == golden[table]["columns"], table
        assert table_rows(got[table]["columns"], got[table]["rows"]) == \
            table_rows(golden[table]["columns"], golden[table]["rows"]), table


@pytest.mark.spark
@pytest.mark.slow
def test_spark_engine_gives_the_pinned_tables(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from kafka_rebalance.pipeline.logs import run_logs
    from tests.conftest import TEST_SYSLOG

    golden = json.loads(GOLDEN.read_text())
    run_logs(spark, INPUTS, str(tmp_path / "out"), engine="spark", progress=False, syslog=TEST_SYSLOG)
    for table in TABLES:
        read = pq.read_table(tmp_path / "out" / table)
        columns = golden[table]["columns"]
        rows = [[_plain(read.column(name)[i].as_py()) for name in columns] for i in range(read.num_rows)]
        skip = ENGINE_OWN.get(table, ())
        assert table_rows(columns, rows, skip) == table_rows(columns, golden[table]["rows"], skip), table


if __name__ == "__main__":  # write the golden file from the code on the path
    GOLDEN.write_text(json.dumps(local_tables(), separators=(",", ":")) + "\n")
    sys.exit(0)
