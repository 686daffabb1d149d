"""StickyAssignor's user data: Kafka's StickyAssignorUserData v1 bytes, and the assignor hooks."""

from __future__ import annotations

import pytest

from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.assignors.userdata import decode_sticky_user_data, encode_sticky_user_data
from kafka_rebalance.model import InvalidInput


def test_encoding_is_kafkas_struct():
    data = encode_sticky_user_data(["t0-0", "t0-2"], 5)
    assert data == bytes.fromhex("00000001" "0002" "7430" "00000002" "00000000" "00000002" "00000005")
    assert decode_sticky_user_data(data) == (["t0-0", "t0-2"], 5)


def test_version_0_has_no_generation():
    v0 = bytes.fromhex("00000001" "0001" "61" "00000001" "00000003")
    assert decode_sticky_user_data(v0) == (["a-3"], -1)


def test_garbage_is_invalid_input():
    with pytest.raises(InvalidInput, match="user_data"):
        decode_sticky_user_data(b"\x00\x00\x00\x05\x00")


def test_sticky_assignor_remembers_its_assignment_for_the_next_join():
    sticky = get_assignor("sticky")
    assert sticky.member_data([], -1, sticky.subscription_user_data(["t"])) == ([], -1)
    sticky.on_assignment(["my-topic-1", "t-0"], 7)
    assert sticky.member_data([], 7, sticky.subscription_user_data(["t"])) == (["my-topic-1", "t-0"], 7)
    # Kafka's StickyAssignor always reads ownership from user data, never from ownedPartitions.
    assert sticky.member_data(["t-9"], 7, None) == ([], -1)
    # Other assignors take what the subscription says.
    assert get_assignor("cooperative-sticky").member_data(["t-9"], 3, None) == (["t-9"], 3)
