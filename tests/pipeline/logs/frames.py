"""The tests read the in-process engine's Arrow tables as pandas frames with nullable integers
and booleans, ``datetime64[ms]`` times and Python lists (the product's report reads Arrow
tables, ``report.logs.report_tables``)."""

from __future__ import annotations

from typing import Any


def to_frame(table: Any) -> Any:
    """A table as a pandas frame: nullable integers and booleans, times as ``datetime64[ms]``,
    strings and lists as Python objects."""
    import pandas as pd
    import pyarrow as pa

    df = table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}.get)
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_list(column.type):  # to_pandas makes each list a numpy array
            df[name] = pd.Series(column.to_pylist(), dtype="object", index=df.index)
    return df


def frames_of(result: Any) -> dict[str, Any]:
    """Every table of an ``analyse_local`` result as a frame (``to_frame``)."""
    return {name: to_frame(table) for name, table in result.tables.items()}
