"""`kafka-rebalance describe` against the real broker, and a rolling-upgrade group on it."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.broker.conftest import SRC, Worker, start_together, wait_stable

pytestmark = pytest.mark.broker


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", "from kafka_rebalance.cli import main; main()", *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_rolling_upgrade_group_and_describe(broker, workers):
    """Two members on kafka-python's own StickyPartitionAssignor and two on ours form one group
    with a valid assignment; when one of ours leaves, the others keep what they had."""
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    KafkaAdminClient(bootstrap_servers=broker).create_topics([NewTopic("upgrade", 8, 1)])
    producer = KafkaProducer(bootstrap_servers=broker)
    for i in range(40):
        producer.send("upgrade", key=f"k{i}".encode(), value=b"v")
    producer.flush()
    kinds = {"old-a": "kafka-python-sticky", "new-b": "sticky", "old-c": "kafka-python-sticky", "new-d": "sticky"}
    members = {name: Worker(broker, "upgrade-group", "upgrade", name, kind) for name, kind in kinds.items()}
    workers.extend(members.values())
    start_together(list(members.values()))
    before = wait_stable(list(members.values()), 8)
    assert all(len(p) == 2 for p in before.values())

    listed = cli("describe", "--bootstrap-server", broker, "--json")
    assert listed.returncode == 0, listed.stderr
    groups = {g["group"]: g for g in json.loads(listed.stdout)["groups"]}
    # Tansu leaves the chosen protocol out of DescribeGroups (docs/clients.md); Kafka names it.
    assert groups["upgrade-group"]["protocol"] in ("sticky", None) and groups["upgrade-group"]["members"] == 4

    out = cli("describe", "--bootstrap-server", broker, "--group", "upgrade-group", "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    # Tansu returns no member metadata: describe says so and assigns nothing from it.
    refusal = "no such member" if info["member_metadata"] else "no member metadata"
    described = cli("describe", "--bootstrap-server", broker, "--group", "upgrade-group", "--json", "--what-if", "leave=" + "x")
    assert described.returncode == 2 and refusal in described.stderr
    assert info["assignor"] in ("sticky", None) and len(info["members"]) == 4
    assert {m["member_id"].rsplit("-", 5)[0] for m in info["members"]} == set(kinds)
    if any(m["assigned"] for m in info["members"]):  # Kafka; Tansu returns member ids only (docs/clients.md)
        assert sorted(p for m in info["members"] for p in m["assigned"]) == sorted(f"upgrade-{p}" for p in range(8))
        assert {m["client_id"] for m in info["members"]} == set(kinds)
        assert info["balance"]["spread"] == 0
    leaver = next(m["member_id"] for m in info["members"] if m["member_id"].startswith("new-b-"))
    what_if = cli("describe", "--bootstrap-server", broker, "--group", "upgrade-group", "--json", "--what-if", f"leave={leaver}", "--what-if", "join=1", "--what-if", "strategy=sticky")
    if info["member_metadata"]:
        assert what_if.returncode == 0, what_if.stderr
        w = json.loads(what_if.stdout)["what_if"]
        assert w["strategy"] == "sticky" and set(w["assignment"]) == {m["member_id"] for m in info["members"]} - {leaver} | {"new-member-1"}
    else:
        assert what_if.returncode == 2 and "no member metadata" in what_if.stderr

    members["new-b"].close()
    del members["new-b"]
    after = wait_stable(list(members.values()), 8)
    for name, parts in before.items():
        if name in after:
            assert set(parts) <= set(after[name]), f"{name} lost {sorted(set(parts) - set(after[name]))}"
    table = cli("describe", "--bootstrap-server", broker, "--group", "upgrade-group")
    assert table.returncode == 0 and "upgrade-group" in table.stdout
    for w in members.values():
        w.close()


def test_describe_errors_are_one_line(broker):
    unknown = cli("describe", "--bootstrap-server", broker, "--group", "no-such-group")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and "does not exist" in unknown.stderr
    start = time.monotonic()
    unreachable = cli("describe", "--bootstrap-server", "127.0.0.1:1", "--timeout", "5")
    assert unreachable.returncode == 2 and unreachable.stderr.count("\n") == 1, unreachable.stderr
    assert time.monotonic() - start < 30
    bad = cli("describe", "--bootstrap-server", broker, "--group", "g", "--what-if", "explode=1")
    assert bad.returncode == 2 and "unknown change" in bad.stderr


def test_cooperative_rolling_upgrade_group(broker, workers):
    """kafka-python's own CooperativeStickyAssignor (subscription v1, no generation) and ours
    (v3) in one cooperative group: balanced, and members keep their partitions as one of each
    kind leaves (whichever kind leads reads the other's subscriptions)."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    KafkaAdminClient(bootstrap_servers=broker).create_topics([NewTopic("coop-upgrade", 8, 1)])
    kinds = {"old-a": "kafka-python-cooperative", "new-b": "cooperative", "old-c": "kafka-python-cooperative", "new-d": "cooperative"}
    members = {name: Worker(broker, "coop-upgrade", "coop-upgrade", name, kind) for name, kind in kinds.items()}
    workers.extend(members.values())
    start_together(list(members.values()))
    state = wait_stable(list(members.values()), 8)
    assert sorted(len(p) for p in state.values()) == [2, 2, 2, 2]
    for leaving in ("old-a", "new-b"):
        members.pop(leaving).close()
        after = wait_stable(list(members.values()), 8)
        for name, parts in after.items():
            assert set(state[name]) <= set(parts), f"{name} lost {sorted(set(state[name]) - set(parts))}"
        state = after
    for w in members.values():
        w.close()
