"""``describe`` against ``serve`` (issue 34, section 4): DescribeGroups decoded for a classic
group, ConsumerGroupDescribe for a KIP-848 group, lag from ListOffsets and OffsetFetch."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("kio")
pytest.importorskip("aiokafka")
kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")

from click.testing import CliRunner  # noqa: E402
from kafka import KafkaProducer, TopicPartition  # noqa: E402

from kafka_rebalance.cli.app import cli  # noqa: E402
from kafka_rebalance.clients.describe import describe  # noqa: E402
from kafka_rebalance.serve import Broker  # noqa: E402
from tests.serve.control_helpers import Member, stable_with, wait_for  # noqa: E402

pytestmark = pytest.mark.broker
RECORDS = 30


def _produce(broker: Broker, topic: str, partitions: int) -> None:
    broker.create_topic(topic, partitions)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(RECORDS):
        producer.send(topic, value=b"v", partition=i % partitions)
    producer.flush(10)
    producer.close()


def test_a_classic_group_in_full():
    with Broker(group_initial_rebalance_delay_ms=0) as broker:
        _produce(broker, "orders", 3)
        # 4 records of partition 0 committed while the group is empty; its members commit nothing.
        committer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="billing",
                                        enable_auto_commit=False)
        committer.commit({TopicPartition("orders", 0): kafka.OffsetAndMetadata(4, "", -1)})
        committer.close()
        members = [Member(broker.bootstrap, "billing", "orders", name) for name in ("a", "b")]
        try:
            # On a loaded host a member's heartbeats can miss its 6 s session and the group
            # rebalances again: what is described is a Stable group, as this test means.
            for _ in range(3):
                stable_with(broker, "billing", members)
                owner = next(m for m in members if 0 in m.owned)
                result = describe(broker.bootstrap, "billing")
                if result["state"] == "Stable":
                    break
        finally:
            for member in members:
                member.stop()
    assert (result["group_type"], result["state"], result["assignor"]) == ("classic", "Stable", "range")
    assert result["member_metadata"] is True
    by_client = {m["client_id"]: m for m in result["members"]}
    assert sorted(by_client) == ["a", "b"] and all(m["topics"] == ["orders"] for m in by_client.values())
    assert sorted(p for m in by_client.values() for p in m["assigned"]) == ["orders-0", "orders-1", "orders-2"]
    assert "orders-0" in by_client[owner.client_id]["assigned"]
    lag = {row["partition"]: (row["committed"], row["end"], row["lag"]) for row in result["partitions"]}
    assert lag == {"orders-0": (4, 10, 6), "orders-1": (None, 10, 10), "orders-2": (None, 10, 10)}
    assert result["total_lag"] == 26 and result["balance"]["spread"] == 1


def test_a_consumer_group_in_full():
    with Broker(consumer_heartbeat_interval_ms=500) as broker:
        _produce(broker, "events", 4)
        consumers = [confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kip848",
                                               "client.id": name, "group.protocol": "consumer",
                                               "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                               "log_level": 3}) for name in ("a", "b")]
        try:
            for consumer in consumers:
                consumer.subscribe(["events"])

            def both_assigned() -> bool:
                for consumer in consumers:
                    consumer.poll(0.05)
                return all(c.assignment() for c in consumers) and len({tp.partition for c in consumers
                                                                       for tp in c.assignment()}) == 4
            wait_for(both_assigned, what="both assigned")
            time.sleep(0.5)
            result = describe(broker.bootstrap, "kip848")
            table = CliRunner().invoke(cli, ["describe", "--bootstrap-server", broker.bootstrap, "--group", "kip848"])
        finally:
            for consumer in consumers:
                consumer.close()
    assert (result["group_type"], result["assignor"], result["state"]) == ("consumer", "uniform", "Stable")
    assert result["group_epoch"] >= 1 and result["member_metadata"] is True
    members = {m["client_id"]: m for m in result["members"]}
    assert sorted(members) == ["a", "b"] and all(m["topics"] == ["events"] for m in members.values())
    assert sorted(p for m in members.values() for p in m["assigned"]) == [f"events-{p}" for p in range(4)]
    assert all(m["assigned"] == m["target"] for m in members.values())
    assert result["total_lag"] == RECORDS  # nothing committed
    assert table.exit_code == 0, table.output
    assert "group epoch" in table.output and "target" in table.output
