"""Requests written with kio on a raw socket: what the broker answers, version by version."""

from __future__ import annotations

import datetime
import io
import socket
import struct
import threading
import time

import pytest

pytest.importorskip("kio")

from kio.index import load_response_schema  # noqa: E402
from kio.serial import entity_reader, entity_writer  # noqa: E402

from kafka_rebalance.serve.codec import build  # noqa: E402

pytestmark = pytest.mark.broker


class Client:
    """One connection: ``ask(request)`` writes it with a header and reads the response."""

    def __init__(self, bootstrap: str):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def ask(self, request):
        self.correlation_id += 1
        header_schema = request.__header_schema__
        out = io.BytesIO()
        entity_writer(header_schema)(out, header_schema(request_api_key=request.__api_key__,
                                                        request_api_version=request.__version__,
                                                        correlation_id=self.correlation_id, client_id="test"))
        entity_writer(type(request))(out, request)
        self.sock.sendall(struct.pack(">i", out.tell()) + out.getvalue())
        size = struct.unpack(">i", self._read(4))[0]
        frame = self._read(size)
        schema = load_response_schema(request.__api_key__, request.__version__)
        header, used = entity_reader(schema.__header_schema__)(frame, 0)
        assert header.correlation_id == self.correlation_id
        return entity_reader(schema)(frame, used)[0]

    def _read(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            assert chunk, "connection closed"
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def _request(api: str, version: int, values: dict):
    from kio.index import load_request_schema
    from kio.schema.index import api_key_map

    key = next(k for k, name in api_key_map.items() if name == api)
    return build(load_request_schema(key, version), values)


def _produce(client: Client, topic: str, values: list[bytes]):
    from kio.records.schema import NewRecordBatch, Record
    from kio.records.writers import write_new_batch

    stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    out = io.BytesIO()
    write_new_batch(out, NewRecordBatch(producer_id=-1, producer_epoch=-1, base_sequence=-1, attributes=0, records=tuple(
        Record(attributes=0, timestamp=stamp, offset=i, key=None, value=v, headers=()) for i, v in enumerate(values))))
    return client.ask(_request("produce", 9, {"acks": 1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": out.getvalue()}]}]}))


def test_metadata_auto_creates_a_topic_with_the_default_partitions(served):
    client = Client(served.bootstrap)
    response = client.ask(_request("metadata", 12, {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": True}))
    (topic,) = response.topics
    assert (topic.name, topic.error_code, len(topic.partitions)) == ("fresh", 0, 3)
    response = client.ask(_request("metadata", 12, {"topics": [{"name": "absent"}], "allow_auto_topic_creation": False}))
    assert response.topics[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    response = client.ask(_request("metadata", 1, {"topics": [{"name": "bad name!"}]}))
    assert response.topics[0].error_code == 17  # INVALID_TOPIC_EXCEPTION
    client.close()


def test_produce_assigns_offsets_and_a_waiting_fetch_is_woken_by_it(served):
    client, producer = Client(served.bootstrap), Client(served.bootstrap)
    first = _produce(producer, "wake", [b"a", b"b"])
    assert first.responses[0].partition_responses[0].base_offset == 0
    fetch = _request("fetch", 12, {"max_wait": 5000, "min_bytes": 1, "max_bytes": 1 << 20, "session_epoch": -1,
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
    fetch = _request("fetch", 4, {"max_wait": 200, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
        {"topic": "quiet", "partitions": [{"partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20}]}]})
    started = time.monotonic()
    partition = client.ask(fetch).responses[0].partitions[0]
    assert 0.15 < time.monotonic() - started < 2
    assert (partition.error_code, partition.records) == (0, b"")
    out_of_range = _request("fetch", 4, {"max_wait": 0, "topics": [
        {"topic": "quiet", "partitions": [{"partition": 0, "fetch_offset": 9, "partition_max_bytes": 1 << 20}]}]})
    assert client.ask(out_of_range).responses[0].partitions[0].error_code == 1  # OFFSET_OUT_OF_RANGE
    client.close()


def test_a_corrupt_batch_is_answered_corrupt_message(served):
    client = Client(served.bootstrap)
    response = client.ask(_request("produce", 9, {"acks": -1, "timeout": 5000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b"\0" * 70}]}]}))
    assert response.responses[0].partition_responses[0].error_code == 2  # CORRUPT_MESSAGE
    client.close()


def test_create_delete_and_grow_topics(served):
    client = Client(served.bootstrap)
    created = client.ask(_request("create_topics", 7, {"timeout": 5000, "topics": [
        {"name": "a", "num_partitions": 2, "replication_factor": 1},
        {"name": "b", "num_partitions": -1, "replication_factor": 3}]}))
    assert [(t.name, t.error_code, t.num_partitions) for t in created.topics] == [("a", 0, 2), ("b", 38, -1)]
    again = client.ask(_request("create_topics", 7, {"timeout": 5000, "topics": [
        {"name": "a", "num_partitions": 2, "replication_factor": 1}]}))
    assert again.topics[0].error_code == 36  # TOPIC_ALREADY_EXISTS
    grown = client.ask(_request("create_partitions", 3, {"timeout": 5000, "topics": [{"name": "a", "count": 4}]}))
    assert grown.results[0].error_code == 0
    assert served.call(lambda state: len(state.topics["a"].partitions)) == 4
    deleted = client.ask(_request("delete_topics", 5, {"timeout": 5000, "topic_names": ["a", "zzz"]}))
    assert [(r.name, r.error_code) for r in deleted.responses] == [("a", 0), ("zzz", 3)]
    client.close()


def test_find_coordinator_names_this_broker_in_every_version(served):
    client = Client(served.bootstrap)
    port = int(served.bootstrap.rsplit(":", 1)[1])
    assert client.ask(_request("find_coordinator", 3, {"key": "g"})).port == port
    response = client.ask(_request("find_coordinator", 6, {"coordinator_keys": ["g", "h"]}))
    assert [(c.key, c.node_id, c.port) for c in response.coordinators] == [("g", 0, port), ("h", 0, port)]
    client.close()
