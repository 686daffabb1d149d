"""Real kafka-python members in threads, and the coordinator's view of a group, for the tests of
rebalances on command (``serve/control.py``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor

from kafka_rebalance.serve import Broker

DEADLINE_S = 20


class Member(ConsumerRebalanceListener):
    """A kafka-python consumer polling in its own thread; its listener's calls recorded."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str, assignor: Any = RangePartitionAssignor,
                 **config: Any):
        self.client_id = client_id
        self.revoked: list[set[int]] = []
        self.assigned: list[set[int]] = []
        self.owned: set[int] = set()
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        settings: dict[str, Any] = dict(session_timeout_ms=6000, heartbeat_interval_ms=300, enable_auto_commit=False,
                                        auto_offset_reset="earliest", partition_assignment_strategy=[assignor])
        settings.update(config)
        self._consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=client_id, **settings)
        # The topic's metadata before the group: a kafka-python 3.0.12 leader that assigns without
        # it now and then stalls for good (tests/serve/test_kafka_python.py).
        self._consumer.partitions_for_topic(topic)
        self._consumer.subscribe([topic], listener=self)
        self._thread = threading.Thread(target=self._run, name=client_id, daemon=True)
        self._thread.start()

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.revoked.append({tp.partition for tp in revoked})

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.assigned.append({tp.partition for tp in assigned})

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._consumer.poll(timeout_ms=100)
                self.owned = {tp.partition for tp in self._consumer.assignment()}
            self._consumer.close()
        except BaseException as error:  # the test thread reports it
            self.errors.append(error)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def classic_view(broker: Broker, group: str) -> tuple[str, int, dict[str, str]] | None:
    """(state, generation, client id -> member id) of a classic group, read on the broker's loop."""

    def look(state: Any) -> tuple[str, int, dict[str, str]] | None:
        found = state.groups.shard.classic.group(group)
        if found is None:
            return None
        return found.state.value, found.generation, {m.client_id: m.member_id for m in found.members.values()}

    return broker.call(look)


def wait_for(condition: Callable[[], object], timeout_s: float = DEADLINE_S, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} not reached within {timeout_s} s")


def stable_with(broker: Broker, group: str, members: list[Member], after_generation: int = 0
                ) -> tuple[str, int, dict[str, str]]:
    """Waits until the group is Stable past ``after_generation`` with exactly these members, each
    owning some partitions and none owned twice."""

    def check() -> tuple[str, int, dict[str, str]] | None:
        view = classic_view(broker, group)
        if view is None or view[0] != "Stable" or view[1] <= after_generation:
            return None
        if sorted(view[2]) != sorted(m.client_id for m in members) or not all(m.owned for m in members):
            return None
        owned = [p for m in members for p in m.owned]
        if len(owned) != len(set(owned)):  # a member's view is still the previous generation's
            return None
        for member in members:
            assert not member.errors, member.errors
        return view

    return wait_for(check, what=f"{group} stable with {[m.client_id for m in members]} after {after_generation}")
