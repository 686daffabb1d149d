"""Listener work in the classic simulator: ``revocation_ms`` / ``assignment_ms`` are charged to
the application thread as in the consumer-group simulator, so the lab compares like with like.

Kafka's facts: the eager consumer runs ``onPartitionsRevoked`` before it sends JoinGroup
(``ConsumerCoordinator.onJoinPrepare`` precedes ``AbstractCoordinator.sendJoinGroupRequest`` in
``joinGroupIfNeeded``), and ``onPartitionsAssigned`` returns (``onJoinComplete``) before the next
``poll`` fetches the committed offsets (``updateFetchPositions`` -> OffsetFetch). The heartbeat
thread is not held up by either."""

from __future__ import annotations

from typing import Any

from kafka_rebalance.sim import load_scenario, run_simulation


def eager_join(**config: Any) -> Any:
    return run_simulation(load_scenario({
        "name": "listener", "group": "g", "topics": {"t": 4},
        "consumers": [{"id": c, "subscribe": ["t"], "strategies": ["range"]} for c in ("a", "b")],
        "produce": [{"topic": "t", "records_per_s": 40, "keys": 40}],
        "events": [{"at_ms": 0, "join": "a"}, {"at_ms": 10000, "join": "b"}],
        "end_ms": 30000, "config": config,
    }))


def second_rebalance(result: Any) -> Any:
    rebalance = result.rebalances[-1]
    assert rebalance.end_ms is not None
    return rebalance


def test_revocation_work_delays_the_eager_rejoin() -> None:
    """a revokes everything before rejoining: the rebalance that b's join starts lasts at least
    the revocation work longer (JoinGroup leaves a's application thread after the listener)."""
    free = second_rebalance(eager_join())
    charged = second_rebalance(eager_join(revocation_ms=700))
    assert (charged.end_ms - charged.start_ms) - (free.end_ms - free.start_ms) >= 700


def test_assignment_work_delays_the_start_of_consumption() -> None:
    """Partitions are consumed only once onPartitionsAssigned has returned and the committed
    offsets are fetched: each ownership interval after b's join starts later by the work."""
    def first_starts(result: Any) -> dict[str, int]:
        table = result.ownership
        starts: dict[str, int] = {}
        for member, start in zip(table.member, table.start_ms, strict=True):
            if member == "b":
                starts.setdefault(member, int(start))
        return starts

    free = first_starts(eager_join())
    charged = first_starts(eager_join(assignment_ms=400))
    assert charged["b"] - free["b"] >= 400


def test_no_listener_work_by_default() -> None:
    """Scenarios without revocation/assignment work run exactly as before (the golden outputs)."""
    assert eager_join().to_json() == eager_join(revocation_ms=0, assignment_ms=0).to_json()
