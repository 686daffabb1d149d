"""Mixed groups on serve: a rolling upgrade from kafka-python's own sticky assignors to ours
(both kinds in one group, whichever leads reads the other's subscriptions), and ``describe``
of such a group from the command line, DescribeGroups answered in full by our coordinator."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("kio")
kafka = pytest.importorskip("kafka")

from kafka import KafkaProducer  # noqa: E402

from kafka_rebalance.serve import Broker  # noqa: E402
from tests.serve.workers.harness import Worker, assignments, settled, start  # noqa: E402
from tests.serve.workers.harness import run_cli as cli  # noqa: E402

pytestmark = pytest.mark.broker
PARTITIONS = 8
QUIET_S, STEP_TIMEOUT_S = 1.5, 30


def _group(broker: Broker, group: str, assignors: dict[str, str]) -> dict[str, Worker]:
    """One kafka-python consumer per client id, with the assignor named (a key of
    kafka_python_worker.ASSIGNORS), started together."""
    base = {"bootstrap": broker.bootstrap, "group": group, "topic": group, "poll_ms": 500}
    members = {name: Worker("kafka-python", {**base, "client_id": name, "assignor": assignor})
               for name, assignor in assignors.items()}
    start(list(members.values()))
    return members


def _stable(members: dict[str, Worker]) -> dict[str, list[int]]:
    state = settled(list(members.values()), PARTITIONS, QUIET_S, STEP_TIMEOUT_S)
    assert state is not None, assignments(list(members.values()))
    return state


def test_rolling_upgrade_group_and_describe():
    """Two members on kafka-python's own StickyPartitionAssignor and two on ours form one group
    with a valid assignment, which ``describe`` shows in full; when one of ours leaves, the
    others keep what they had."""
    kinds = {"old-a": "sticky", "new-b": "ours-sticky", "old-c": "sticky", "new-d": "ours-sticky"}
    with Broker(group_initial_rebalance_delay_ms=0) as broker:
        broker.create_topic("upgrade", PARTITIONS)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        for i in range(40):
            producer.send("upgrade", key=f"k{i}".encode(), value=b"v")
        producer.flush()
        producer.close()
        members = _group(broker, "upgrade", kinds)
        try:
            before = _stable(members)
            assert all(len(p) == 2 for p in before.values())

            listed = cli("describe", "--bootstrap-server", broker.bootstrap, "--json")
            assert listed.returncode == 0, listed.stderr
            groups = {g["group"]: g for g in json.loads(listed.stdout)["groups"]}
            assert groups["upgrade"]["protocol"] == "sticky" and groups["upgrade"]["members"] == 4

            out = cli("describe", "--bootstrap-server", broker.bootstrap, "--group", "upgrade", "--json")
            assert out.returncode == 0, out.stderr
            info = json.loads(out.stdout)
            assert info["member_metadata"] is True and info["assignor"] == "sticky"
            assert {m["client_id"] for m in info["members"]} == set(kinds)
            assert sorted(p for m in info["members"] for p in m["assigned"]) == sorted(f"upgrade-{p}" for p in range(PARTITIONS))
            assert info["balance"]["spread"] == 0

            unknown = cli("describe", "--bootstrap-server", broker.bootstrap, "--group", "upgrade", "--json", "--what-if", "leave=x")
            assert unknown.returncode == 2 and "no such member" in unknown.stderr
            leaver = next(m["member_id"] for m in info["members"] if m["client_id"] == "new-b")
            what_if = cli("describe", "--bootstrap-server", broker.bootstrap, "--group", "upgrade", "--json",
                          "--what-if", f"leave={leaver}", "--what-if", "join=1", "--what-if", "strategy=sticky")
            assert what_if.returncode == 0, what_if.stderr
            w = json.loads(what_if.stdout)["what_if"]
            assert w["strategy"] == "sticky"
            assert set(w["assignment"]) == {m["member_id"] for m in info["members"]} - {leaver} | {"new-member-1"}

            members.pop("new-b").close()
            after = _stable(members)
            for name, parts in after.items():
                assert set(before[name]) <= set(parts), f"{name} lost {sorted(set(before[name]) - set(parts))}"
            table = cli("describe", "--bootstrap-server", broker.bootstrap, "--group", "upgrade")
            assert table.returncode == 0 and "upgrade" in table.stdout
        finally:
            for w in members.values():
                w.kill()


def test_describe_errors_are_one_line():
    with Broker() as broker:
        unknown = cli("describe", "--bootstrap-server", broker.bootstrap, "--group", "no-such-group")
        assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and "does not exist" in unknown.stderr, unknown.stderr
        bad = cli("describe", "--bootstrap-server", broker.bootstrap, "--group", "g", "--what-if", "explode=1")
        assert bad.returncode == 2 and "unknown change" in bad.stderr
    unreachable = cli("describe", "--bootstrap-server", "127.0.0.1:1", "--timeout", "5", timeout=30)
    assert unreachable.returncode == 2 and unreachable.stderr.count("\n") == 1, unreachable.stderr


def test_cooperative_rolling_upgrade_group():
    """kafka-python's own CooperativeStickyAssignor (subscription v1, no generation) and ours
    (v3) in one cooperative group: balanced, and members keep their partitions as one of each
    kind leaves (whichever kind leads reads the other's subscriptions)."""
    kinds = {"old-a": "cooperative-sticky", "new-b": "ours-cooperative-sticky",
             "old-c": "cooperative-sticky", "new-d": "ours-cooperative-sticky"}
    with Broker(group_initial_rebalance_delay_ms=0) as broker:
        broker.create_topic("coop-upgrade", PARTITIONS)
        members = _group(broker, "coop-upgrade", kinds)
        try:
            state = _stable(members)
            assert sorted(len(p) for p in state.values()) == [2, 2, 2, 2]
            for leaving in ("old-a", "new-b"):
                members.pop(leaving).close()
                after = _stable(members)
                for name, parts in after.items():
                    assert set(state[name]) <= set(parts), f"{name} lost {sorted(set(state[name]) - set(parts))}"
                state = after
        finally:
            for w in members.values():
                w.kill()
