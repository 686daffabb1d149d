"""One aiokafka consumer in its own process; the same JSON-lines protocol as
kafka_python_worker.py (config keys: bootstrap, group, topic, client_id, session_ms,
heartbeat_ms, instance_id; aiokafka's assignors are EAGER only: its own range)."""

from __future__ import annotations

import asyncio
import json
import sys
import time


def emit(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main() -> None:
    config = json.loads(sys.argv[1])
    import aiokafka
    from aiokafka import ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            emit({"revoked": sorted(tp.partition for tp in revoked)})

        async def on_partitions_assigned(self, assigned):
            emit({"assigned": sorted(tp.partition for tp in assigned)})

    consumer = aiokafka.AIOKafkaConsumer(
        bootstrap_servers=config["bootstrap"], group_id=config["group"], client_id=config["client_id"],
        group_instance_id=config.get("instance_id"), auto_offset_reset="earliest", enable_auto_commit=False,
        session_timeout_ms=config.get("session_ms", 6000), heartbeat_interval_ms=config.get("heartbeat_ms", 500),
        metadata_max_age_ms=1000)
    consumer.subscribe([config["topic"]], listener=Listener())
    emit({"ready": True})
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)
    stop = asyncio.ensure_future(loop.run_in_executor(None, sys.stdin.readline))
    await consumer.start()
    last = None
    try:
        while not stop.done():
            batches = await consumer.getmany(timeout_ms=200)
            records = [[r.partition, r.offset] for rs in batches.values() for r in rs]
            if records:
                emit({"r": records})  # before the commit, as the kafka-python worker tells them
                offsets = {tp.partition: rs[-1].offset + 1 for tp, rs in batches.items()}
                try:
                    await consumer.commit({tp: rs[-1].offset + 1 for tp, rs in batches.items()})
                    emit({"c": offsets})
                except Exception as error:  # a rebalance took them away first: not committed
                    emit({"commit_failed": type(error).__name__})
            generation = consumer._coordinator.generation
            now = sorted(tp.partition for tp in consumer.assignment())
            if (now, generation) != last:
                last = (now, generation)
                emit({"a": now, "g": generation, "t": round(time.monotonic(), 3)})
    finally:
        await consumer.stop()
    emit({"closed": True})


if __name__ == "__main__":
    asyncio.run(main())
