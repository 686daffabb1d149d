"""Consumer-protocol bytes: round trips, the other clients' codecs reading ours and ours reading
theirs, every sticky user-data form, and the leader mapping with sparse partition numbers."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.assignors import assign
from kafka_rebalance.assignors.userdata import (
    UserDataFormat,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    sticky_user_data_format,
)
from kafka_rebalance.clients.group import MemberInfo, assign_members
from kafka_rebalance.model import InvalidInput, java_sort_key
from kafka_rebalance.protocol.wire import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

topic_names = st.text(alphabet="abcxyz._-0123456789", min_size=1, max_size=8).filter(lambda t: not t[-1].isdigit() or "-" not in t)
numbers = st.lists(st.integers(0, 2**31 - 1), max_size=6, unique=True).map(lambda xs: tuple(sorted(xs)))
pairs = st.dictionaries(topic_names, numbers, max_size=4).map(lambda d: tuple(sorted(d.items())))


@given(
    topics=st.lists(topic_names, max_size=5).map(tuple),
    user_data=st.none() | st.binary(max_size=20),
    owned=pairs,
    generation=st.integers(-1, 2**31 - 1),
    rack=st.none() | st.text(max_size=5),
    version=st.integers(0, 3),
)
def test_subscription_round_trip_every_version(topics, user_data, owned, generation, rack, version):
    sub = Subscription(topics, user_data, owned, generation, rack, version)
    back = decode_subscription(encode_subscription(sub))
    assert back.topics == tuple(sorted(set(topics), key=java_sort_key)) and back.user_data == user_data and back.version == version
    assert back.owned_partitions == (tuple((t, ps) for t, ps in owned if ps) if version >= 1 else ())
    assert back.generation_id == (generation if version >= 2 else -1)
    assert back.rack_id == (rack if version >= 3 else None)


@given(partitions=pairs, user_data=st.none() | st.binary(max_size=10), version=st.integers(0, 3))
def test_assignment_round_trip(partitions, user_data, version):
    a = Assignment(partitions, user_data, version)
    assert decode_assignment(encode_assignment(a)) == a


def test_known_bytes_of_a_v3_subscription():
    """ConsumerProtocolSubscription v3, field by field as Kafka's JSON schema lays it out."""
    data = encode_subscription(Subscription(("t",), b"", (("t", (0, 2)),), 4, "r1"))
    assert data.hex() == "0003" "00000001" "000174" "00000000" "00000001" "000174" "00000002" "00000000" "00000002" "00000004" "00027231"


def test_equal_subscriptions_give_equal_bytes():
    """Kafka's ConsumerProtocolTest.serializeSubscriptionShouldOrderTopics and
    serializeSubscriptionShouldOrderOwnedPartitions."""
    a = encode_subscription(Subscription(("foo", "bar"), None, (("foo", (1,)), ("bar", (0,)))))
    b = encode_subscription(Subscription(("bar", "foo"), None, (("bar", (0,)), ("foo", (1,)))))
    assert a == b


def test_future_assignment_version_with_an_extra_field():
    """Kafka's ConsumerProtocolTest.deserializeFutureAssignmentVersion: version 100 with a string
    field appended still reads its partitions."""
    data = struct.pack(">h", 100) + encode_assignment(Assignment((("foo", (0,)),), b""))[2:] + struct.pack(">h", 3) + b"bar"
    assert decode_assignment(data).partitions == (("foo", (0,)),)


def test_old_subscription_version():
    """Kafka's ConsumerProtocolTest.deserializeOldSubscriptionVersion: v0 has no owned partitions,
    generation or rack."""
    back = decode_subscription(encode_subscription(Subscription(("foo", "bar"), None, (("foo", (1,)),), 5, "r", version=0)))
    assert (back.user_data, back.owned_partitions, back.generation_id, back.rack_id) == (None, (), -1, None)


def test_newer_versions_read_as_v3_and_garbage_is_one_clear_error():
    data = bytearray(encode_subscription(Subscription(("t",), None, (), 3, None)))
    data[1] = 9  # a future version, with an extra field appended
    assert decode_subscription(bytes(data) + b"\x00\x01").generation_id == 3
    with pytest.raises(InvalidInput, match="subscription"):
        decode_subscription(b"\x00\x01\x00\x00\x00\x05")
    assert decode_assignment(b"") == Assignment(version=0)


def test_kafka_python_and_aiokafka_read_our_bytes_and_we_read_theirs():
    kp = pytest.importorskip("kafka.protocol.consumer.metadata")
    aio = pytest.importorskip("aiokafka.coordinator.protocol")
    ours = encode_subscription(Subscription(("t", "u"), b"xy", (("t", (1, 5)),), 7, "rack"))
    theirs = kp.ConsumerProtocolSubscription.decode(ours)
    assert (theirs.topics, theirs.generation_id, theirs.rack_id) == (["t", "u"], 7, "rack")
    assert decode_subscription(theirs.encode()) == decode_subscription(ours)
    assert aio.ConsumerProtocolMemberMetadata.decode(ours).subscription == ["t", "u"]
    a = encode_assignment(Assignment((("t", (3,)),), b""))
    assert kp.ConsumerProtocolAssignment.decode(a).partitions()[0].partition == 3
    assert aio.ConsumerProtocolMemberAssignment.decode(a).partitions()[0].partition == 3


@given(owned=st.lists(st.sampled_from(["a-0", "a-7", "b.c-3", "x-y-12"]), unique=True), generation=st.integers(-1, 1000))
def test_sticky_user_data_both_forms(owned, generation):
    for fmt in UserDataFormat:
        data = encode_sticky_user_data(owned, generation, fmt)
        assert sticky_user_data_format(data) is fmt
        got, gen = decode_sticky_user_data(data)
        assert sorted(got) == sorted(owned) and gen == generation


def test_kafka_python_reads_our_kafka_python_form():
    ud = pytest.importorskip("kafka.coordinator.assignors.sticky.user_data")
    data = encode_sticky_user_data(["t-0", "t-3"], 5, UserDataFormat.KAFKA_PYTHON)
    decoded = ud.StickyAssignorUserData.decode(data)
    assert decoded.generation == 5 and [tuple(x) for x in decoded.previous_assignment][0][1] == [0, 3]


def test_java_v0_user_data_and_cooperative_generation():
    v0 = struct.pack(">ih", 1, 1) + b"a" + struct.pack(">ii", 1, 3)
    assert decode_sticky_user_data(v0) == (["a-3"], -1)
    assert decode_cooperative_user_data(encode_cooperative_user_data(9)) == 9
    assert decode_cooperative_user_data(None) is None and decode_cooperative_user_data(b"x") == -1


@given(
    sparse=st.lists(st.integers(0, 40), min_size=1, max_size=12, unique=True),
    n_members=st.integers(1, 5),
    strategy=st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]),
    data=st.data(),
)
def test_sparse_numbers_assign_like_dense_ones(sparse, n_members, strategy, data):
    """Any set of partition numbers: the same answer as our assign() on 0..n-1, renumbered in order."""
    ids = sorted(sparse)
    names = [f"m{i}" for i in range(n_members)]
    owner_of = data.draw(st.lists(st.integers(-1, n_members - 1), min_size=len(ids), max_size=len(ids)))
    owned = {m: [ids[k] for k, o in enumerate(owner_of) if o == i] for i, m in enumerate(names)}
    members = [MemberInfo(m, ("t",), (("t", tuple(owned[m])),) if owned[m] else (), 3) for m in names]
    got = assign_members(strategy, {"t": set(ids)}, members).assignments
    dense = assign(
        {"topics": {"t": len(ids)}, "members": [{"member_id": m, "topics": ["t"], "owned": [f"t-{ids.index(p)}" for p in owned[m]], "generation": 3} for m in names]},
        strategy,
    )["assignment"]
    for m in names:
        expected = [ids[int(p.rsplit("-", 1)[1])] for p in dense[m]]
        assert [n for _, ns in got[m] for n in ns] == expected
