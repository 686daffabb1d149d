"""``story.in_story_order`` sorts a table of events as ``Table.sort_by(SORT_KEYS)`` does (stable,
nulls last, texts by their bytes), whatever its chunks: both engines hand their stories a table
in this order."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse.story import SORT_KEYS, in_story_order

TEXTS = st.one_of(st.none(), st.sampled_from(["", "a", "b", "B", "ab", "a b", "é", "z\u00e9", "g-10", "g-9", "g-1"]))


@st.composite
def events(draw: st.DrawFn) -> pa.Table:
    count = draw(st.integers(0, 60))
    seqs = st.one_of(st.none(), st.integers(-5, 5)) if draw(st.booleans()) else st.integers(-5, 5)
    columns = {"cluster": draw(st.lists(TEXTS, min_size=count, max_size=count)),
               "group": draw(st.lists(TEXTS, min_size=count, max_size=count)),
               "source": draw(st.lists(TEXTS, min_size=count, max_size=count)),
               "seq": draw(st.lists(seqs, min_size=count, max_size=count)),
               "row": list(range(count))}  # which row is which: ties keep their order
    schema = pa.schema([("cluster", pa.string()), ("group", pa.string()), ("source", pa.string()),
                        ("seq", pa.int64()), ("row", pa.int64())])
    table = pa.Table.from_pydict(columns, schema=schema)
    cuts = sorted(draw(st.lists(st.integers(0, count), max_size=4)))
    bounds = [0, *cuts, count]
    return pa.concat_tables([table.slice(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)] or [table])


@settings(max_examples=300, deadline=None)
@given(events())
def test_in_story_order_sorts_as_arrow_sorts(table: pa.Table) -> None:
    assert in_story_order(table).equals(table.sort_by(SORT_KEYS))


def test_in_story_order_puts_missing_texts_last_and_keeps_ties_in_order() -> None:
    table = pa.table({"cluster": ["c", "c", "c", None], "group": [None, "b", "a", "a"], "source": ["s"] * 4,
                      "seq": [1, 1, 1, 0], "row": [0, 1, 2, 3]})
    assert in_story_order(table).column("row").to_pylist() == [2, 1, 0, 3]
