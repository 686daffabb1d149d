"""librdkafka (confluent-kafka) consumers in a group on our coordinator, with the classic
protocol and with KIP-848's consumer protocol (ConsumerGroupHeartbeat)."""

from __future__ import annotations

import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from tests.serve.kio_client import Client, kio_request  # noqa: E402

pytestmark = pytest.mark.broker
RECORDS = 100
DEADLINE_S = 15


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_two_librdkafka_members_consume_every_record(served, group_protocol):
    producer = confluent_kafka.Producer({"bootstrap.servers": served.bootstrap})
    for i in range(RECORDS):
        producer.produce("rd", value=b"v%d" % i, partition=i % 3)
    assert producer.flush(10) == 0
    consumers = [confluent_kafka.Consumer({"bootstrap.servers": served.bootstrap, "group.id": "rg",
                                           "group.protocol": group_protocol, "auto.offset.reset": "earliest",
                                           "log_level": 3}) for _ in range(2)]
    try:
        for consumer in consumers:
            consumer.subscribe(["rd"])
        seen: set[bytes] = set()
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and not (len(seen) == RECORDS and all(c.assignment() for c in consumers)):
            for consumer in consumers:
                message = consumer.poll(0.05)
                if message is not None:
                    assert message.error() is None, message.error()
                    seen.add(message.value())
        assert seen == {b"v%d" % i for i in range(RECORDS)}
        owned = sorted(tp.partition for c in consumers for tp in c.assignment())
        assert owned == [0, 1, 2]
        assert served.call(lambda state: state.groups.shard.group_type("rg")) == group_protocol
        client = Client(served.bootstrap)
        listed = client.ask(kio_request("list_groups", 5, {}))
        assert [(g.group_id, g.group_type) for g in listed.groups] == [("rg", group_protocol)]
        if group_protocol == "consumer":
            (described,) = client.ask(kio_request("consumer_group_describe", 1, {"group_ids": ["rg"]})).groups
            assert (described.error_code, described.group_state, len(described.members)) == (0, "Stable", 2)
            assert sorted(p for m in described.members for t in m.assignment.topic_partitions for p in t.partitions) \
                == [0, 1, 2]
        client.close()
    finally:
        for consumer in consumers:
            consumer.close()
