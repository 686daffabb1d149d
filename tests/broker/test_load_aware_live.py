"""Real kafka-python consumers with our LoadAwarePartitionAssignor (default load source: the
leader measures end-offset growth and lag through its own connection) on the real broker,
while a producer writes 40 times more to partitions 0 and 3 than to the others. Cooperative-
sticky's round-robin over three consumers puts 0 and 3 on one consumer; load-aware must not,
and must not after a consumer leaves either."""

from __future__ import annotations

import threading

import pytest

from tests.broker.conftest import Worker, wait_stable
from tests.serve.workers.harness import start

pytestmark = pytest.mark.broker

TOPIC, GROUP, PARTITIONS, HOT = "hot-cold", "hot-cold-group", 6, (0, 3)


def _owner_of(assignment: dict[str, list[int]], partition: int) -> str:
    return next(name for name, parts in assignment.items() if partition in parts)


class SkewedProducer:
    """40 times more records to the hot partitions than to the others, a backlog first (so the
    first leader sees the lag), then continuously (so later leaders see the growth)."""

    def __init__(self, broker: str, topic: str):
        from kafka import KafkaAdminClient, KafkaProducer
        from kafka.admin import NewTopic

        KafkaAdminClient(bootstrap_servers=broker).create_topics([NewTopic(topic, PARTITIONS, 1)])
        self.topic = topic
        self.producer = KafkaProducer(bootstrap_servers=broker, linger_ms=20)
        self.stop = threading.Event()
        self.send_round(10)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def send_round(self, times: int = 1) -> None:
        for p in range(PARTITIONS):
            for _ in range((40 if p in HOT else 1) * times):
                self.producer.send(self.topic, value=b"x" * 100, partition=p)
        self.producer.flush()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.send_round()
            self.stop.wait(0.2)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.producer.close()


def test_hot_partitions_end_on_different_consumers(broker, workers):
    producer = SkewedProducer(broker, TOPIC)
    try:
        members = {name: Worker(broker, GROUP, TOPIC, name, "load-aware") for name in ("la1", "la2", "la3")}
        workers.extend(members.values())
        start(list(members.values()))
        three = wait_stable(list(members.values()), PARTITIONS)
        assert sorted(len(p) for p in three.values()) == [2, 2, 2]
        assert _owner_of(three, HOT[0]) != _owner_of(three, HOT[1]), f"hot partitions together: {three}"
        assert sum(w.times_led for w in members.values()) >= 1

        leaver = _owner_of(three, 1) if _owner_of(three, 1) not in (_owner_of(three, 0),) else "la2"
        members[leaver].close()
        del members[leaver]
        two = wait_stable(list(members.values()), PARTITIONS)
        assert _owner_of(two, HOT[0]) != _owner_of(two, HOT[1]), f"hot partitions together: {two}"
        for w in members.values():
            w.close()
    finally:
        producer.close()
