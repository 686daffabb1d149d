"""Each group's lines in the order its story reads them (``order.order_events`` and ``order.distinct_events`` over a whole table)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kafka_rebalance.pipeline.logparse.columns.arrays import changes

# What makes two lines of one group the same line (``order.distinct_events``).
IDENTITY = ("kind", "time_ms", "member", "generation", "old_generation", "state", "reason", "client_id",
            "partitions", "from_state")



_LARGEST = 1 << 62



def story_rows(table: Any) -> np.ndarray:
    """The rows of ``table`` (events of any groups sorted by ``story.SORT_KEYS``: cluster, group,
    source, seq; every row with a source and a seq) in story order: by group, then time, a line
    without a time at the last time known before it in its file (-1 when none is), ties in file
    order; and without repeats of a line that has a time (the same ``IDENTITY`` as an earlier
    row of its group)."""
    import pyarrow.compute as pc

    count = table.num_rows
    if not count:
        return np.zeros(0, np.int64)
    if table.column("source").null_count or table.column("seq").null_count:
        raise ValueError("story_rows: every event needs its source and seq")
    new_group = changes(table, ("cluster", "group"))
    new_file = new_group | changes(table, ("source",))
    group = np.cumsum(new_group)
    times = table.column("time_ms")
    timed = times.is_valid().to_numpy(zero_copy_only=False)
    time_ms = pc.fill_null(times, 0).to_numpy()
    # Each line's place in time: its own, or the last known before it in its file.
    rows = np.arange(count)
    file_start = np.maximum.accumulate(np.where(new_file, rows, 0))
    last_timed = np.maximum.accumulate(np.where(timed, rows, -1))
    known = np.where(last_timed >= file_start, time_ms[np.maximum(last_timed, 0)], -1)
    # Stable: equal places keep file order, as the Python sort by (place, source, seq) does.
    order: np.ndarray = np.lexsort((known, group))
    kept: np.ndarray = order[_first_of_each_line(table, order, timed, group, time_ms)]
    return kept



def _first_of_each_line(table: Any, order: np.ndarray, timed: np.ndarray, group: np.ndarray,
                        time_ms: np.ndarray) -> np.ndarray:
    """Which of the rows at ``order`` to keep: all but the repeats, a repeat being a line with a
    time whose ``IDENTITY`` an earlier row of its group has. Only the timed rows that share
    their group and time with another can be one: they alone are compared, each as one integer
    (the dense codes of its values, combined column by column)."""
    import pyarrow.compute as pc

    keep = np.ones(len(order), bool)
    at = np.flatnonzero(timed[order])  # places in ``order`` of the timed rows
    rows = order[at]
    tie = (group[rows][1:] == group[rows][:-1]) & (time_ms[rows][1:] == time_ms[rows][:-1])
    shared = np.zeros(len(rows), bool)
    shared[1:] |= tie
    shared[:-1] |= tie
    if not shared.any():
        return keep
    places, rows = at[shared], rows[shared]
    line = np.cumsum(np.concatenate([[True], ~tie]))[shared]  # its group and time, as one number
    candidates = table.select([name for name in IDENTITY if name != "time_ms"]).take(rows)
    for name in candidates.column_names:
        column = candidates.column(name)
        codes = pc.dictionary_encode(column).combine_chunks().indices
        values = pc.fill_null(codes, -1).to_numpy().astype(np.int64) + 1  # null: 0
        width = int(values.max()) + 1
        if int(line.max()) >= _LARGEST // width:  # dense again first: no overflow
            line = np.unique(line, return_inverse=True)[1]
        line = line * width + values
    _, first = np.unique(line, return_index=True)
    repeat = np.ones(len(rows), bool)
    repeat[first] = False
    keep[places[repeat]] = False
    return keep
