"""Rebalances on command for a KIP-848 consumer group, with librdkafka's ``group.protocol=consumer``:
an expired member is fenced and rejoins; a coordinator move replays the group from its records;
the server assignor decides the assignment."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("kio")
confluent_kafka = pytest.importorskip("confluent_kafka")

from kafka_rebalance.serve import Broker  # noqa: E402
from tests.serve.control_helpers import wait_for  # noqa: E402

pytestmark = pytest.mark.broker
TOPIC = "events"


def _consumer(broker: Broker, client_id: str) -> Any:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cg",
                                         "client.id": client_id, "group.protocol": "consumer",
                                         "auto.offset.reset": "earliest", "log_level": 3})
    consumer.subscribe([TOPIC])
    return consumer


def _members(broker: Broker) -> dict[str, tuple[str, int]] | None:
    """client id -> (member id, epoch) of the consumer group, once Stable."""

    def look(state: Any) -> dict[str, tuple[str, int]] | None:
        group = state.groups.shard.consumer_groups.get("cg")
        if group is None or group.state.value.lower() != "stable":
            return None
        return {m.client_id: (m.member_id, m.member_epoch) for m in group.members.values()}

    return broker.call(look)


def _poll_until(consumers: list[Any], condition: Any, what: str) -> Any:
    def step() -> Any:
        for consumer in consumers:
            message = consumer.poll(0.05)
            assert message is None or message.error() is None, message.error()
        return condition()

    return wait_for(step, what=what)


def test_an_expired_consumer_group_member_is_fenced_and_rejoins():
    with Broker(consumer_heartbeat_interval_ms=500) as broker:
        broker.create_topic(TOPIC, 4)
        consumers = [_consumer(broker, name) for name in ("a", "b")]
        try:
            before = _poll_until(consumers, lambda: (m := _members(broker)) and len(m) == 2 and m, "two members")
            assert broker.expire_member("cg", client_id="b") == f"expired {before['b'][0]} of cg"
            after = _poll_until(consumers, lambda: (m := _members(broker)) and len(m) == 2
                                and m["b"] != before["b"] and m, "b back")
            assert after["a"][0] == before["a"][0]
            # The group is Stable on the coordinator before b's client has applied its new
            # assignment (librdkafka reconciles on its next heartbeat): wait for the clients.
            _poll_until(consumers, lambda: sorted(tp.partition for c in consumers for tp in c.assignment()) == [0, 1, 2, 3],
                        "every partition owned by a client")
        finally:
            for consumer in consumers:
                consumer.close()


def test_a_coordinator_move_replays_the_consumer_group():
    with Broker(consumer_heartbeat_interval_ms=500) as broker:
        broker.create_topic(TOPIC, 4)
        consumers = [_consumer(broker, name) for name in ("a", "b")]
        try:
            before = _poll_until(consumers, lambda: (m := _members(broker)) and len(m) == 2
                                 and all(c.assignment() for c in consumers) and m, "two members")
            broker.move_coordinator("COORDINATOR_LOAD_IN_PROGRESS", 1000)
            assert _members(broker) is None
            _poll_until(consumers, lambda: _members(broker), "the group replayed")
            end = time.monotonic() + 3
            while time.monotonic() < end:  # heartbeats reach the new coordinator; no member is fenced
                for consumer in consumers:
                    consumer.poll(0.05)
            assert _members(broker) == before
        finally:
            for consumer in consumers:
                consumer.close()



@pytest.mark.parametrize(("assignor", "expected"), [
    ("range", [["events-0", "other-0"], ["events-1", "other-1"]]),  # a range of each topic per member
    ("uniform", [["events-0", "events-1"], ["other-0", "other-1"]]),  # the partitions dealt as one list
])
def test_the_server_assignor_decides_the_consumer_groups_assignment(assignor, expected):
    """``server_assignor`` set before the group forms decides the members' assignment (two topics
    of two partitions, two members)."""
    with Broker(consumer_heartbeat_interval_ms=500) as broker:
        broker.create_topic(TOPIC, 2)
        broker.create_topic("other", 2)
        assert broker.set_server_assignor(assignor) == f"server assignor {assignor}"
        consumers = []
        for name in ("a", "b"):
            consumer = _consumer(broker, name)
            consumer.subscribe([TOPIC, "other"])
            consumers.append(consumer)
        try:
            def owned() -> list[list[str]] | None:
                parts = sorted(sorted(f"{tp.topic}-{tp.partition}" for tp in c.assignment()) for c in consumers)
                return parts if sum(map(len, parts)) == 4 and all(parts) else None

            assert _poll_until(consumers, owned, "two members, 4 partitions") == expected
        finally:
            for consumer in consumers:
                consumer.close()
