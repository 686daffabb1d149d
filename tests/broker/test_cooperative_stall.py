"""The cooperative stall of issue 34, on serve and on Tansu: two kafka-python consumers with a
cooperative-sticky assignor (one topic, 6 partitions, session 10 s, heartbeat 1 s, ``poll(500)``
then a second of processing), the second started a few seconds after the first.

What breaks: kafka-python 3.0.12's ``join_group_async`` keeps a JoinGroup/SyncGroup task in
flight when ``poll``'s timeout expires mid-join, and on the next poll, if that task has finished
meanwhile (here: during the second of processing), starts a new one instead of taking its result
(``if self._join_task is None or self._join_task.is_done``). The assignment the coordinator
handed out is dropped, and the member rejoins with its old owned partitions. On Kafka's rules
(serve) a leader's JoinGroup in a Stable group starts a rebalance (GroupMetadataManager's
classicGroupJoinExistingMember: "Updating metadata for leader"), so the group rebalances every
~1.5 s; a follower's dropped join costs nothing there (its JoinGroup in a Stable group with
unchanged metadata gets the current assignment back), and pairs balance within seconds (the
test allows 25 s: with 15 s, one pair in fifteen had not yet). Tansu parks
every JoinGroup for a fixed ~5 s (Kafka completes the join phase as soon as every known member
has rejoined), so every join outlasts the poll, and a member can drop every assignment it is
given: the stall. The loop of poll (1.5 s) and Tansu's join (about 6 s, four loops) lock in
phase, so a member that drops one join tends to drop every one after it. Both assignors (ours
and kafka-python's own) go through the same kafka-python coordinator code; the leader's logs
show ours assigning 3 + 3 in every round, to members that never take it. Which pairs stall on
Tansu depends on start-up timing, not on the assignor (ours balanced 0 of 2 pairs where
kafka-python's own balanced 1-2 of 2 in two runs, and at least as often in two others), so no test
asserts a comparison there: it could only be an xfail, a test that cannot fail."""

from __future__ import annotations

import time

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from kafka_rebalance.serve import Broker
from tests.serve.workers.harness import Worker, one_owner_each, start, wait_until

pytestmark = pytest.mark.broker
PARTITIONS = 6
SECOND_AFTER_S = 3.0


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


def _pairs(bootstrap: str, topic: str, groups: dict[str, str]) -> dict[str, list[Worker]]:
    """One pair per group (group -> assignor kind), the first of each started now, the second
    ``SECOND_AFTER_S`` later."""
    config = dict(bootstrap=bootstrap, topic=topic, session_ms=10000, heartbeat_ms=1000, poll_ms=500, process_s=1.0)
    firsts = {g: Worker("kafka-python", {**config, "group": g, "assignor": kind, "client_id": f"{g}-a"})
              for g, kind in groups.items()}
    start(list(firsts.values()))
    time.sleep(SECOND_AFTER_S)
    seconds = {g: Worker("kafka-python", {**config, "group": g, "assignor": kind, "client_id": f"{g}-b"})
               for g, kind in groups.items()}
    start(list(seconds.values()))
    return {g: [firsts[g], seconds[g]] for g in groups}


def _balanced_within(pairs: dict[str, list[Worker]], timeout_s: float) -> dict[str, bool]:
    """Per group: whether its pair held 3 + 3 partitions at some moment within ``timeout_s``."""
    seen = dict.fromkeys(pairs, False)

    def check() -> bool:
        for group, pair in pairs.items():
            seen[group] = seen[group] or one_owner_each(pair, PARTITIONS)
        return all(seen.values())

    wait_until(check, timeout_s, step_s=0.05)
    return seen


def test_on_serve_our_cooperative_sticky_balances_the_pair_every_time():
    with Broker(group_initial_rebalance_delay_ms=3000) as served:
        _create_topic(served.bootstrap, "stall")
        groups = {f"ours-{i}": "ours-cooperative-sticky" for i in range(3)}
        pairs = _pairs(served.bootstrap, "stall", groups)
        try:
            balanced = _balanced_within(pairs, 25)
        finally:
            for pair in pairs.values():
                for worker in pair:
                    worker.kill()
    assert all(balanced.values()), (balanced, _histories(pairs))


def _histories(pairs: dict[str, list[Worker]]) -> dict[str, list[tuple[float, int | None, list[int]]]]:
    began = min(w.history[0][0] for pair in pairs.values() for w in pair if w.history)
    return {w.name: [(round(t - began, 1), g, a) for t, g, a in w.history] for pair in pairs.values() for w in pair}
