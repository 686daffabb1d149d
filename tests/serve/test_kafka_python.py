"""kafka-python against ``kafka-rebalance serve``: topics, produce, fetch, and a consumer group
whose coordinator is our ``GroupCoordinatorShard``."""

from __future__ import annotations

import threading
import time

import pytest

kafka = pytest.importorskip("kafka")

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from kafka_rebalance.serve import Broker  # noqa: E402

pytestmark = pytest.mark.broker
RECORDS = 100
DEADLINE_S = 8


def _create_and_produce(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    try:
        result = admin.create_topics([NewTopic(topic, 3, 1)])
        assert [(t["name"], t["error_code"], t["num_partitions"]) for t in result["topics"]] == [(topic, 0, 3)]
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i in range(RECORDS):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)
    producer.flush(10)
    producer.close()


def test_produce_then_read_back_with_assign_and_seek(served):
    _create_and_produce(served.bootstrap, "orders")
    consumer = KafkaConsumer(bootstrap_servers=served.bootstrap, consumer_timeout_ms=5000, enable_auto_commit=False)
    partitions = [TopicPartition("orders", p) for p in range(3)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    values = []
    for record in consumer:
        assert record.value == b"v%d" % int(record.key[1:])
        assert record.partition == int(record.key[1:]) % 3
        values.append(record.value)
        if len(values) == RECORDS:
            break
    assert sorted(values) == sorted(b"v%d" % i for i in range(RECORDS))
    assert consumer.end_offsets(partitions) == {tp: 34 if tp.partition == 0 else 33 for tp in partitions}
    consumer.close()


def test_a_group_of_two_consumes_every_record():
    """Two kafka-python consumers in one classic group (range) on our coordinator: between them
    they read every record, each partition owned by one of them once the group is stable.

    The group's first rebalance waits 500 ms (``group.initial.rebalance.delay.ms``, Kafka's
    default 3 s, is there for this): a kafka-python leader that assigns before its first
    metadata of the topic ("No partition metadata for topic") now and then stops for good in
    ``ensure_coordinator_ready`` with no request in flight (kafka-python 3.0.12; seen from the
    broker: nothing more on any of its connections until ``close``). A second attempt, with a
    fresh group, covers the rare case left."""
    with Broker(group_initial_rebalance_delay_ms=500, num_partitions=3) as served:
        _create_and_produce(served.bootstrap, "events")
        group = "g0"
        seen, final = _group_of_two(served.bootstrap, group)
        if not _complete(seen, final):
            group = "g1"
            seen, final = _group_of_two(served.bootstrap, group)
        admin = KafkaAdminClient(bootstrap_servers=served.bootstrap, request_timeout_ms=5000)
        committed = admin.list_group_offsets({group: None})[group]  # OffsetFetch v8+, every partition
        admin.close()
    assert {tp.partition: o.offset for tp, o in committed.items()} == {0: 34, 1: 33, 2: 33}
    assert set().union(*seen.values()) == EVERYTHING
    assert all(final.values()), final
    assert sorted(p for parts in final.values() for p in parts) == [0, 1, 2]


EVERYTHING = {b"v%d" % i for i in range(RECORDS)}


def _complete(seen: dict[str, set[bytes]], final: dict[str, set[int]]) -> bool:
    """Every record read, and the members' views agree on one generation: each owns some
    partitions, none twice (under EAGER a member's view lags while the other's is new)."""
    one_owner_each = sorted(p for parts in final.values() for p in parts) == [0, 1, 2]
    return len(final) == 2 and all(final.values()) and one_owner_each and set().union(*seen.values()) >= EVERYTHING


def _group_of_two(bootstrap: str, group: str) -> tuple[dict[str, set[bytes]], dict[str, set[int]]]:
    seen: dict[str, set[bytes]] = {}
    owned: dict[str, set[int]] = {}
    stop = threading.Event()
    errors: list[BaseException] = []

    def consume(name: str) -> None:
        try:
            consumer = KafkaConsumer("events", bootstrap_servers=bootstrap, group_id=group, client_id=name,
                                     auto_offset_reset="earliest", session_timeout_ms=6000,
                                     heartbeat_interval_ms=200, enable_auto_commit=False)
            seen[name] = set()
            while not stop.is_set():
                for tp, records in consumer.poll(timeout_ms=100).items():
                    seen[name].update(r.value for r in records)
                    consumer.commit({tp: kafka.OffsetAndMetadata(records[-1].offset + 1, "", -1)})
                owned[name] = {tp.partition for tp in consumer.assignment()}
            consumer.close()
        except BaseException as error:  # reported by the test thread
            errors.append(error)

    threads = [threading.Thread(target=consume, args=(f"member-{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + DEADLINE_S
    final: dict[str, set[int]] = {}
    while time.monotonic() < deadline and not errors:
        final = {name: set(parts) for name, parts in owned.items()}
        if _complete(seen, final):
            break
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(10)
    assert not errors
    return seen, final
