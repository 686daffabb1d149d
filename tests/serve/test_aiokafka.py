"""aiokafka against ``kafka-rebalance serve``: a group of two on our classic coordinator."""

from __future__ import annotations

import asyncio

import pytest

aiokafka = pytest.importorskip("aiokafka")
from kafka_rebalance.serve import Broker  # noqa: E402

pytestmark = pytest.mark.broker
RECORDS = 100
DEADLINE_S = 15


def test_an_aiokafka_group_of_two_consumes_every_record(tmp_path):
    """With ``--log``: the coordinator's rebalances are in the file, as Kafka 4.x logs them."""
    log = tmp_path / "broker.log"
    with Broker(group_initial_rebalance_delay_ms=0, num_partitions=3, log_path=str(log)) as served:
        asyncio.run(asyncio.wait_for(_group_of_two(served.bootstrap), DEADLINE_S))
    text = log.read_text()
    assert "Preparing to rebalance group ag in state Empty with old generation 0" in text
    assert "Stabilized group ag generation 2 with 2 members." in text


async def _group_of_two(bootstrap: str) -> None:
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(RECORDS):
            await producer.send("aio", value=b"v%d" % i, partition=i % 3)
        await producer.flush()
    finally:
        await producer.stop()
    consumers = [aiokafka.AIOKafkaConsumer("aio", bootstrap_servers=bootstrap, group_id="ag", client_id=f"aio-{i}",
                                           auto_offset_reset="earliest", session_timeout_ms=6000,
                                           heartbeat_interval_ms=200) for i in range(2)]
    seen: set[bytes] = set()
    try:
        for consumer in consumers:
            await consumer.start()
        while not (len(seen) == RECORDS and all(c.assignment() for c in consumers)):
            for consumer in consumers:
                batches = await consumer.getmany(timeout_ms=50)
                seen.update(record.value for records in batches.values() for record in records)
        owned = sorted(tp.partition for c in consumers for tp in c.assignment())
        assert owned == [0, 1, 2]
        assert seen == {b"v%d" % i for i in range(RECORDS)}
    finally:
        for consumer in consumers:
            await consumer.stop()
