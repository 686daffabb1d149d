"""One librdkafka (confluent-kafka) consumer in its own process; the same JSON-lines protocol as
kafka_python_worker.py. Config keys: bootstrap, group, topic, client_id, session_ms,
heartbeat_ms, instance_id, and protocol: "range" (classic, EAGER), "cooperative-sticky"
(classic, COOPERATIVE) or "consumer" (KIP-848: the broker assigns; session and heartbeat are
the broker's)."""

from __future__ import annotations

import json
import sys
import threading
import time


def emit(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    config = json.loads(sys.argv[1])
    import confluent_kafka

    settings = {"bootstrap.servers": config["bootstrap"], "group.id": config["group"], "client.id": config["client_id"],
                "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 3,
                "topic.metadata.refresh.interval.ms": 1000}
    if config.get("instance_id"):
        settings["group.instance.id"] = config["instance_id"]
    if config["protocol"] == "consumer":
        settings["group.protocol"] = "consumer"
    else:
        settings.update({"partition.assignment.strategy": config["protocol"],
                         "session.timeout.ms": config.get("session_ms", 6000),
                         "heartbeat.interval.ms": config.get("heartbeat_ms", 500)})
    consumer = confluent_kafka.Consumer(settings)

    def on_assign(_consumer, partitions):
        emit({"assigned": sorted(tp.partition for tp in partitions)})

    def on_revoke(_consumer, partitions):
        emit({"revoked": sorted(tp.partition for tp in partitions)})

    emit({"ready": True})
    sys.stdin.readline()
    consumer.subscribe([config["topic"]], on_assign=on_assign, on_revoke=on_revoke)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    last = None
    while not stop.is_set():
        messages = consumer.consume(100, 0.2)
        records = [[m.partition(), m.offset()] for m in messages if m.error() is None]
        if records:
            offsets: dict[int, int] = {}
            for partition, offset in records:
                offsets[partition] = max(offsets.get(partition, 0), offset + 1)
            try:
                consumer.commit(offsets=[confluent_kafka.TopicPartition(config["topic"], p, o) for p, o in offsets.items()],
                                asynchronous=False)
                emit({"c": offsets})
            except confluent_kafka.KafkaException as error:  # a rebalance took them away first
                emit({"commit_failed": str(error)})
            emit({"r": records})
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != last:
            last = now
            emit({"a": now, "g": None, "t": round(time.monotonic(), 3)})
    consumer.close()
    emit({"closed": True})


if __name__ == "__main__":
    main()
