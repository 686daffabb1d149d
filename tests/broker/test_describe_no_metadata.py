"""``describe`` on a broker that returns no member metadata (Tansu): it says so, and prints no
lag, balance or strategy it cannot know (issue 34, section 4)."""

from __future__ import annotations

import json
import time

import pytest

from tests.serve.workers.harness import run_cli as cli

pytestmark = pytest.mark.broker
RECORDS = 32


def test_members_without_metadata_are_said_to_be_unknown(broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    KafkaAdminClient(bootstrap_servers=broker).create_topics([NewTopic("unread", 2, 1)])
    producer = KafkaProducer(bootstrap_servers=broker)
    for i in range(RECORDS):
        producer.send("unread", value=b"v", partition=i % 2)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer("unread", bootstrap_servers=broker, group_id="unread-group", enable_auto_commit=False,
                             session_timeout_ms=10000, heartbeat_interval_ms=500)
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(100)  # joins; reads, commits nothing
        out = cli("describe", "--bootstrap-server", broker, "--group", "unread-group", "--json")
        assert out.returncode == 0, out.stderr
        info = json.loads(out.stdout)
        table = cli("describe", "--bootstrap-server", broker, "--group", "unread-group")
        what_if = cli("describe", "--bootstrap-server", broker, "--group", "unread-group", "--what-if", "join=1")
    finally:
        consumer.close()
    assert len(info["members"]) == 1
    if info["member_metadata"]:
        pytest.skip("this broker returns member metadata")  # Kafka, or a Tansu that learnt to
    assert info["total_lag"] is None and info["balance"] is None and info["partitions"] == []
    assert table.returncode == 0
    assert "no member metadata" in table.stdout and "total lag -" in table.stdout
    assert "balance:" not in table.stdout and "what if" not in table.stdout
    assert what_if.returncode == 2 and "no member metadata" in what_if.stderr
