from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.model import (
    ColumnarGroup,
    GroupSnapshot,
    InvalidInput,
    TopicPartition,
    java_sort_key,
    java_sorted,
    java_string_hash,
    java_string_hashes,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("my-group", -1906497762), ("test-group", 627841412), ("polygenelubricants", -2147483648), ("", 0)],
)
def test_java_string_hash_check_values(text, expected):
    assert java_string_hash(text) == expected
    assert java_string_hashes([text, text]).tolist() == [expected, expected]


@given(st.lists(st.one_of(st.text(max_size=40), st.text("member-0123456789", max_size=60)), max_size=20))
def test_java_string_hashes_is_string_hash_code_of_each(strings):
    """The batch (ASCII in one encode, else UTF-16 code units, surrogate pairs too) agrees
    with the one-string Horner loop, empty strings included."""
    assert java_string_hashes(strings).tolist() == [java_string_hash(s) for s in strings]


def test_java_order_is_utf16_code_units():
    # U+FF5E (BMP) sorts after U+1F600 (a surrogate pair, 0xD83D...) in Java, before it in Python.
    names = ["\uff5e", "\U0001f600", "B", "a"]
    assert sorted(names, key=java_sort_key) == ["B", "a", "\U0001f600", "\uff5e"]
    assert java_sorted(names) == ["B", "a", "\U0001f600", "\uff5e"]


@given(st.lists(st.text()))
def test_java_sorted_is_the_order_of_javas_key(names):
    """ASCII names sorted as they are, others by Java's key: the same order either way."""
    assert java_sorted(names) == sorted(names, key=java_sort_key)


def test_topic_partition_parse_uses_the_last_dash():
    assert TopicPartition.parse("my-topic-12") == TopicPartition("my-topic", 12)
    assert str(TopicPartition("a-b", 3)) == "a-b-3"
    for bad in ("t", "t-", "-1", "t-x", "t-+1"):
        with pytest.raises(InvalidInput):
            TopicPartition.parse(bad)


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        ([], "snapshot: expected a JSON object"),
        ({"members": []}, "topics: expected an object"),
        ({"topics": {"t": -1}, "members": []}, "topics.t: partition count must not be negative"),
        ({"topics": {"t": True}, "members": []}, "topics.t: expected a partition count"),
        ({"topics": {"t": {"partitions": 2, "racks": [["r"]]}}, "members": []}, "topics.t.racks: has 1 entries for 2 partitions"),
        ({"topics": {}, "members": [{"member_id": "", "topics": []}]}, "members[0].member_id: expected a non-empty string"),
        ({"topics": {}, "members": [{"member_id": "a", "topics": []}, {"member_id": "a", "topics": []}]}, "members[1].member_id: duplicate member_id 'a'"),
        ({"topics": {}, "members": [{"member_id": "a"}]}, "members[0].topics: missing"),
        ({"topics": {}, "members": [{"member_id": "a", "topics": "t"}]}, "members[0].topics: expected a list of strings"),
        ({"topics": {}, "members": [{"member_id": "a", "topics": [], "generation": "1"}]}, "members[0].generation: expected an integer"),
        ({"topics": {"t": 1}, "members": [{"member_id": "a", "topics": [], "owned": ["t"]}]}, "members[0].owned: 't' is not 'topic-partition'"),
        ({"strategy": 3, "topics": {}, "members": []}, "strategy: expected a non-empty string"),
    ],
)
def test_schema_errors_name_the_field(snapshot, message):
    with pytest.raises(InvalidInput) as info:
        ColumnarGroup.from_snapshot(GroupSnapshot.from_dict(snapshot))
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_snapshot_round_trips_through_dict():
    data = {
        "strategy": "sticky",
        "topics": {"t0": 3, "t1": {"partitions": 2, "racks": [["r0", "r1"], ["r1", "r2"]]}},
        "members": [
            {"member_id": "c0", "topics": ["t0", "t1"], "owned": ["t0-0", "t1-1"], "generation": 3, "rack": "r0", "strategies": ["cooperative-sticky", "range"]},
            {"member_id": "c1", "topics": ["t0"], "group_instance_id": "i1"},
        ],
    }
    assert GroupSnapshot.from_dict(data).to_dict() == data
