"""One cooperative-sticky group of librdkafka consumers (confluent-kafka) and ours
(kafka-python + CooperativeStickyPartitionAssignor) on the real broker: it forms with a valid,
balanced assignment, and as members leave, librdkafka's and ours take turns leading and every
survivor keeps what it had: each side reads the other's subscription bytes."""

from __future__ import annotations

import threading
import time

import pytest

from tests.broker.conftest import Worker, wait_stable
from tests.serve.workers.harness import start

pytestmark = pytest.mark.broker

TOPIC, GROUP = "mixed", "mixed-group"


class RdConsumer:
    """A librdkafka consumer polled in a thread, exposing its assignment like a Worker."""

    def __init__(self, broker: str, name: str):
        from confluent_kafka import Consumer

        self.name = name
        self.assignment: list[int] = []
        self.stop = threading.Event()
        self.consumer = Consumer({
            "bootstrap.servers": broker, "group.id": GROUP, "client.id": name,
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest",
        })
        self.consumer.subscribe([TOPIC])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(0.2)
            self.assignment = sorted(tp.partition for tp in self.consumer.assignment())
        self.consumer.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(20)


def test_librdkafka_and_ours_in_one_cooperative_group(broker, workers):
    pytest.importorskip("confluent_kafka")
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    KafkaAdminClient(bootstrap_servers=broker).create_topics([NewTopic(TOPIC, 8, 1)])
    rd = [RdConsumer(broker, "rd1"), RdConsumer(broker, "rd2")]  # first in: librdkafka leads
    try:
        time.sleep(1)
        ours = [Worker(broker, GROUP, TOPIC, n, "cooperative") for n in ("py1", "py2")]
        workers.extend(ours)
        start(ours)
        live = [*rd, *ours]
        state = wait_stable(live, 8)
        assert sorted(len(p) for p in state.values()) == [2, 2, 2, 2]
        assert sum(w.times_led for w in ours) == 0  # librdkafka led and read our bytes
        for leaving in (rd[0], rd[1]):  # after both leave, one of ours leads
            leaving.close()
            live.remove(leaving)
            after = wait_stable(live, 8)
            for name, parts in after.items():
                assert set(state[name]) <= set(parts), f"{name} lost {set(state[name]) - set(parts)}"
            state = after
        assert sum(w.times_led for w in ours) >= 1  # then ours led and read librdkafka's bytes
    finally:
        for c in rd:
            c.close()
