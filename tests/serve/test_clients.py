"""Real clients are the oracle (issue 34, section 2): each client library, in its own processes,
in a group on ``kafka-rebalance serve``. One scenario per client and protocol, in steps:

1. two members join, then a third: members that stay give up only what moves where the
   protocol is cooperative or KIP-848, and everything under EAGER (the rebalance listener's
   revocations);
2. the group of three consumes every record produced before and after;
3. a static member (group.instance.id) restarted within its session timeout gets back the
   partitions it had: killed, under the classic protocol (the coordinator keeps a static member
   until its session expires, and a JoinGroup with its instance id replaces it); closed, under
   KIP-848 (a static member leaves with epoch -2 and keeps its assignment; while one still holds
   the instance id a new one is answered UNRELEASED_INSTANCE_ID, fatal to librdkafka);
4. a member killed (SIGKILL) without leaving: its partitions move to the others within the
   session timeout, and each new owner starts where the killed one committed.

Every member is static (a dynamic member's restart is a new member: nothing to keep), but
KafkaJS's: it has no group.instance.id, and skips step 3. KafkaJS 2.2 comes from npm
(tests/serve/kafkajs: package.json and its lockfile), installed by ``npm ci`` on first use."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

pytest.importorskip("kio")
kafka = pytest.importorskip("kafka")

from kafka import KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from kafka_rebalance.serve import Broker  # noqa: E402
from tests.serve.workers.harness import KAFKAJS_DIR, Worker, assignments, settled, start, wait_until  # noqa: E402

pytestmark = pytest.mark.broker
PARTITIONS = 6
SESSION_MS = 6000
STEP_TIMEOUT_S = 20
QUIET_S = 0.5

# (client, assignor or protocol, incremental?)
CLIENTS = [
    ("kafka-python", "range", False),
    ("kafka-python", "ours-range", False),
    ("kafka-python", "ours-cooperative-sticky", True),
    ("aiokafka", "range", False),
    ("confluent-kafka", "range", False),
    ("confluent-kafka", "cooperative-sticky", True),
    ("confluent-kafka", "consumer", True),
    ("kafkajs", "roundrobin", False),
]
NPM_CI_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def kafkajs_installed():
    """``npm ci`` into tests/serve/kafkajs/node_modules (gitignored) unless it is there."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("KafkaJS needs Node.js and npm")
    if not (KAFKAJS_DIR / "node_modules" / "kafkajs").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=KAFKAJS_DIR, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=NPM_CI_TIMEOUT_S)


@pytest.fixture(scope="module")
def served():
    with Broker(group_initial_rebalance_delay_ms=500, consumer_heartbeat_interval_ms=500,
                consumer_session_timeout_ms=SESSION_MS) as broker:
        yield broker


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i in range(count):
        producer.send(topic, value=b"%d" % i, partition=i % PARTITIONS)
    producer.flush(10)
    producer.close()


def _consumed(workers: list[Worker]) -> set[tuple[int, int]]:
    return {record for w in workers for record in w.records}


@pytest.mark.parametrize(("client", "kind", "incremental"), CLIENTS, ids=[f"{c}-{k}" for c, k, _ in CLIENTS])
def test_a_client_group_on_serve(served, request, client, kind, incremental):
    if client == "kafkajs":
        request.getfixturevalue("kafkajs_installed")
    topic = group = f"{client}-{kind}"
    admin = KafkaAdminClient(bootstrap_servers=served.bootstrap, request_timeout_ms=5000)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    admin.close()
    _produce(served.bootstrap, topic, 60)
    produced = 60
    base = {"bootstrap": served.bootstrap, "group": group, "topic": topic, "session_ms": SESSION_MS, "heartbeat_ms": 500}
    key = "protocol" if client == "confluent-kafka" else "assignor"

    def worker(i: int) -> Worker:
        static = {} if client == "kafkajs" else {"instance_id": f"i{i}"}
        return Worker(client, {**base, key: kind, "client_id": f"m{i}", **static})

    workers = [worker(0), worker(1)]
    try:
        start(workers)
        assert settled(workers, PARTITIONS, QUIET_S, STEP_TIMEOUT_S), assignments(workers)

        # 1. A third member joins.
        before = assignments(workers)
        revoked_before = [len(w.revocations) for w in workers]
        workers.append(worker(2))
        start(workers[2:])
        after = settled(workers, PARTITIONS, QUIET_S, STEP_TIMEOUT_S)
        assert after, assignments(workers)
        for w, seen in zip(workers[:2], revoked_before, strict=True):
            revoked = [p for call in w.revocations[seen:] for p in call]
            if incremental:  # only what moved away, never what it keeps
                assert not set(revoked) & set(after[w.name]), (w.name, w.revocations, before, after)
            else:  # EAGER: everything it owned
                assert set(before[w.name]) <= set(revoked), (w.name, w.revocations, before, after)

        # 2. Every record, before and after the join.
        _produce(served.bootstrap, topic, 30)
        produced += 30
        everything = {(p, o) for p in range(PARTITIONS) for o in range(produced // PARTITIONS)}
        assert wait_until(lambda: _consumed(workers) >= everything, STEP_TIMEOUT_S), everything - _consumed(workers)

        # 3. A static member's restart keeps its partitions.
        if client != "kafkajs":
            kept = after["m1"]
            if kind == "consumer":
                workers[1].close()
            else:
                workers[1].kill()
            workers[1] = worker(1)
            start(workers[1:2])
            assert wait_until(lambda: workers[1].assignment == kept, STEP_TIMEOUT_S), (kept, assignments(workers))
            assert settled(workers, PARTITIONS, QUIET_S, STEP_TIMEOUT_S) == after

        # 4. A killed member's partitions move within the session timeout; the new owners
        # start where it committed.
        assert wait_until(lambda: all(workers[2].commits.get(p) == produced // PARTITIONS for p in after["m2"]), 5), \
            workers[2].commits
        read_before = {w.name: len(w.records) for w in workers[:2]}
        killed_at = time.monotonic()
        workers[2].kill()
        survivors = workers[:2]
        assert settled(survivors, PARTITIONS, 0, SESSION_MS / 1000 + 5), assignments(survivors)
        assert time.monotonic() - killed_at < SESSION_MS / 1000 + 5
        _produce(served.bootstrap, topic, 30)
        produced += 30
        assert wait_until(lambda: _consumed(survivors) >= {(p, produced // PARTITIONS - 1) for p in range(PARTITIONS)},
                          STEP_TIMEOUT_S)
        for p in after["m2"]:
            offsets = [o for w in survivors for q, o in w.records[read_before[w.name]:] if q == p]
            assert min(offsets) == workers[2].commits[p], (p, offsets, workers[2].commits)
    finally:
        for w in workers:
            w.kill()
