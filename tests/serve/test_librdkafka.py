"""librdkafka (confluent-kafka) consumers in a group on our coordinator, with the classic
protocol and with KIP-848's consumer protocol (ConsumerGroupHeartbeat)."""

from __future__ import annotations

import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
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
    finally:
        for consumer in consumers:
            consumer.close()
