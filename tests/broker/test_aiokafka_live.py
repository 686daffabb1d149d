"""Real aiokafka consumers with our StickyPartitionAssignor on the real broker: three join, one
leaves cleanly, the other two keep what they had and take over its partitions."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.broker

TOPIC, GROUP, PARTITIONS = "aio-orders", "aio-group", 6


async def _settled(consumers, deadline_s: float = 60) -> dict[str, list[int]]:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    last, stable_since = None, loop.time()
    while loop.time() < end:
        await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers.values()))
        now = {name: sorted(tp.partition for tp in c.assignment()) for name, c in consumers.items()}
        if now != last:
            last, stable_since = now, loop.time()
        owned = sorted(p for ps in now.values() for p in ps)
        sizes = [len(ps) for ps in now.values()]
        if owned == list(range(PARTITIONS)) and max(sizes) - min(sizes) <= 1 and loop.time() - stable_since > 2:
            return now
    pytest.fail(f"aiokafka group did not settle: {last}")


def test_aiokafka_sticky_group_on_a_real_broker(broker):
    from aiokafka import AIOKafkaConsumer
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    from kafka_rebalance.clients.aiokafka import StickyPartitionAssignor

    KafkaAdminClient(bootstrap_servers=broker).create_topics([NewTopic(TOPIC, PARTITIONS, 1)])

    async def scenario():
        consumers = {}
        for name in ("a1", "a2", "a3"):
            c = AIOKafkaConsumer(TOPIC, bootstrap_servers=broker, group_id=GROUP, client_id=name,
                                 partition_assignment_strategy=[StickyPartitionAssignor()],
                                 session_timeout_ms=6000, heartbeat_interval_ms=500, auto_offset_reset="earliest")
            await c.start()
            consumers[name] = c
        try:
            before = await _settled(consumers)
            assert sorted(len(p) for p in before.values()) == [2, 2, 2]
            await consumers.pop("a2").stop()
            after = await _settled(consumers)
            for name, parts in after.items():
                assert set(before[name]) <= set(parts), f"{name} lost {set(before[name]) - set(parts)}"
        finally:
            for c in consumers.values():
                await c.stop()

    asyncio.run(asyncio.wait_for(scenario(), 120))
