from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "examples" / "scenarios"



def base(consumers, events, *, strategies=("cooperative-sticky",), topics=None, end_ms=60000, **config):
    """A small scenario dict: consumers by name, all subscribing to t0."""
    return {
        "name": "test",
        "group": "test-group",
        "config": {"network_latency_ms": 2, **config},
        "topics": topics or {"t0": 3},
        "consumers": [c if isinstance(c, dict) else {"id": c, "strategies": list(strategies), "subscribe": ["t0"]}
                      for c in consumers],
        "produce": [{"topic": "t0", "records_per_s": 50, "keys": 30}],
        "events": events,
        "end_ms": end_ms,
    }


def never_two_owners(result) -> None:
    """No partition is owned by two members at once (ownership intervals of a result JSON)."""
    by_partition: dict[str, list[tuple[int, int]]] = {}
    for o in result["ownership"]:
        by_partition.setdefault(o["partition"], []).append((o["start_ms"], o["end_ms"]))
    for intervals in by_partition.values():
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
            assert start >= end


def settled_without_loss(run, members=None) -> None:
    """A run's end state after churn: no partition ever had two owners, no record was lost, the
    group is Stable (with exactly ``members``, when given) and every partition has one owner."""
    result = run.to_json()
    assert run.ownership_conflicts == 0
    never_two_owners(result)
    assert result["metrics"]["records_lost"] == 0
    assert run.final_group_state == "Stable"
    if members is not None:
        assert sorted(run.final_members) == sorted(members)
    owned = sorted(p for parts in result["final_assignment"].values() for p in parts)
    assert owned == sorted(run.produced.partition)
