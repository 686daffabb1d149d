"""Requests written with kio on a raw socket: what the broker answers, version by version."""

from __future__ import annotations

import datetime
import io
import struct
import threading
import time

import pytest

pytest.importorskip("kio")

from tests.serve.kio_client import Client, kio_request  # noqa: E402

pytestmark = pytest.mark.broker


def _produce(client: Client, topic: str, values: list[bytes]):
    from kio.records.schema import NewRecordBatch, Record
    from kio.records.writers import write_new_batch

    stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    out = io.BytesIO()
    write_new_batch(out, NewRecordBatch(producer_id=-1, producer_epoch=-1, base_sequence=-1, attributes=0, records=tuple(
        Record(attributes=0, timestamp=stamp, offset=i, key=None, value=v, headers=()) for i, v in enumerate(values))))
    return client.ask(kio_request("produce", 9, {"acks": 1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": out.getvalue()}]}]}))


def test_metadata_auto_creates_a_topic_with_the_default_partitions(served):
    client = Client(served.bootstrap)
    response = client.ask(kio_request("metadata", 12, {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": True}))
    (topic,) = response.topics
    assert (topic.name, topic.error_code, len(topic.partitions)) == ("fresh", 0, 3)
    response = client.ask(kio_request("metadata", 12, {"topics": [{"name": "absent"}], "allow_auto_topic_creation": False}))
    assert response.topics[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    response = client.ask(kio_request("metadata", 1, {"topics": [{"name": "bad name!"}]}))
    assert response.topics[0].error_code == 17  # INVALID_TOPIC_EXCEPTION
    client.close()


def test_produce_assigns_offsets_and_a_waiting_fetch_is_woken_by_it(served):
    client, producer = Client(served.bootstrap), Client(served.bootstrap)
    first = _produce(producer, "wake", [b"a", b"b"])
    assert first.responses[0].partition_responses[0].base_offset == 0
    fetch = kio_request("fetch", 12, {"max_wait": 5000, "min_bytes": 1, "max_bytes": 1 << 20, "session_epoch": -1,
                                   "topics": [{"topic": "wake", "partitions": [
                                       {"partition": 0, "fetch_offset": 2, "partition_max_bytes": 1 << 20,
                                        "current_leader_epoch": -1, "last_fetched_epoch": -1,
                                        "log_start_offset": -1}]}]})
    timer = threading.Timer(0.3, lambda: _produce(producer, "wake", [b"c"]))
    started = time.monotonic()
    timer.start()
    response = client.ask(fetch)
    waited = time.monotonic() - started
    timer.join()
    partition = response.responses[0].partitions[0]
    assert 0.2 < waited < 3
    assert (partition.error_code, partition.high_watermark) == (0, 3)
    assert struct.unpack_from(">q", partition.records)[0] == 2
    client.close()
    producer.close()


def test_a_fetch_with_nothing_to_read_returns_after_max_wait(served):
    client = Client(served.bootstrap)
    _produce(client, "quiet", [b"a"])
    fetch = kio_request("fetch", 4, {"max_wait": 200, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
        {"topic": "quiet", "partitions": [{"partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20}]}]})
    started = time.monotonic()
    partition = client.ask(fetch).responses[0].partitions[0]
    assert 0.15 < time.monotonic() - started < 2
    assert (partition.error_code, partition.records) == (0, b"")
    out_of_range = kio_request("fetch", 4, {"max_wait": 0, "topics": [
        {"topic": "quiet", "partitions": [{"partition": 0, "fetch_offset": 9, "partition_max_bytes": 1 << 20}]}]})
    assert client.ask(out_of_range).responses[0].partitions[0].error_code == 1  # OFFSET_OUT_OF_RANGE
    client.close()


def test_a_corrupt_batch_is_answered_corrupt_message(served):
    client = Client(served.bootstrap)
    response = client.ask(kio_request("produce", 9, {"acks": -1, "timeout": 5000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b"\0" * 70}]}]}))
    assert response.responses[0].partition_responses[0].error_code == 2  # CORRUPT_MESSAGE
    client.close()


def test_create_delete_and_grow_topics(served):
    client = Client(served.bootstrap)
    created = client.ask(kio_request("create_topics", 7, {"timeout": 5000, "topics": [
        {"name": "a", "num_partitions": 2, "replication_factor": 1},
        {"name": "b", "num_partitions": -1, "replication_factor": 3}]}))
    assert [(t.name, t.error_code, t.num_partitions) for t in created.topics] == [("a", 0, 2), ("b", 38, -1)]
    again = client.ask(kio_request("create_topics", 7, {"timeout": 5000, "topics": [
        {"name": "a", "num_partitions": 2, "replication_factor": 1}]}))
    assert again.topics[0].error_code == 36  # TOPIC_ALREADY_EXISTS
    grown = client.ask(kio_request("create_partitions", 3, {"timeout": 5000, "topics": [{"name": "a", "count": 4}]}))
    assert grown.results[0].error_code == 0
    assert served.call(lambda state: len(state.topics["a"].partitions)) == 4
    deleted = client.ask(kio_request("delete_topics", 5, {"timeout": 5000, "topic_names": ["a", "zzz"]}))
    assert [(r.name, r.error_code) for r in deleted.responses] == [("a", 0), ("zzz", 3)]
    client.close()


def test_find_coordinator_names_this_broker_in_every_version(served):
    client = Client(served.bootstrap)
    port = int(served.bootstrap.rsplit(":", 1)[1])
    assert client.ask(kio_request("find_coordinator", 3, {"key": "g"})).port == port
    response = client.ask(kio_request("find_coordinator", 6, {"coordinator_keys": ["g", "h"]}))
    assert [(c.key, c.node_id, c.port) for c in response.coordinators] == [("g", 0, port), ("h", 0, port)]
    client.close()
