"""The bulk (pyarrow) parse of owned partitions must agree with the plain loop on any input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.model import InvalidInput, parse_partition_strings
from kafka_rebalance.model.columnar import _BULK_MIN

TOPICS = {"t": 0, "my-topic": 1, "a-1": 2, "é": 3}
COUNTS = np.array([3, 5, 2, 4], dtype=np.int64)
OFFSETS = np.concatenate(([0], np.cumsum(COUNTS)))

pieces = st.sampled_from(["t", "my-topic", "a-1", "é", "gone", "", "-", "x-", "1", "٣", "99999999999999999999999"])
numbers = st.one_of(st.integers(0, 7).map(str), st.sampled_from(["", "x", "-1", "+1", "١", "007", "1e3"]))
names = st.builds(lambda topic, sep, number: f"{topic}{sep}{number}", pieces, st.sampled_from(["-", "", "--"]), numbers)


def _loop(strings):
    out = []
    for i in range(0, len(strings), _BULK_MIN - 1):  # chunks below the bulk threshold take the loop
        out.append(parse_partition_strings(strings[i : i + _BULK_MIN - 1], TOPICS, OFFSETS, COUNTS, "owned"))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


@given(st.lists(names, min_size=1, max_size=40))
def test_bulk_and_loop_agree(sample):
    strings = (sample * (_BULK_MIN // len(sample) + 1))[: _BULK_MIN + 3]
    try:
        expected = _loop(strings)
    except InvalidInput as exc:
        with pytest.raises(InvalidInput) as info:
            parse_partition_strings(strings, TOPICS, OFFSETS, COUNTS, "owned")
        assert str(info.value) == str(exc)
        return
    got = parse_partition_strings(strings, TOPICS, OFFSETS, COUNTS, "owned")
    assert got.tolist() == expected.tolist()


def test_bulk_path_runs_and_handles_dashes_unknown_topics_and_out_of_range(monkeypatch):
    from kafka_rebalance.model import columnar

    calls = []
    real = columnar._parse_bulk
    monkeypatch.setattr(columnar, "_parse_bulk", lambda *a: calls.append(1) or real(*a))
    strings = ["t-1", "my-topic-4", "gone-1", "t-9", "é-2", "a-1-1", "a-1-2"] * 100
    got = columnar.parse_partition_strings(strings, TOPICS, OFFSETS, COUNTS, "owned")
    assert calls and got[:7].tolist() == [1, 3 + 4, -1, -1, 10 + 2, 8 + 1, -1]
