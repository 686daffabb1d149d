"""Invariants of KIP-848 consumer groups over random schedules (hypothesis): a partition never
has two owners at once (the coordinator hands it over only once released), no record is lost,
and after the last event and a quiet period the group is Stable with every partition owned by
exactly one live member. (Pauses stay shorter than the rebalance and session timeouts; stalls,
crashes, restarts and leaves are unrestricted.)"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.sim import load_scenario, run_simulation

NAMES = ["c1", "c2", "c3", "c4"]

event = st.one_of(
    st.builds(lambda n: {"join": n}, st.sampled_from(NAMES)),
    st.builds(lambda n: {"leave": n}, st.sampled_from(NAMES)),
    st.builds(lambda n: {"crash": n}, st.sampled_from(NAMES)),
    st.builds(lambda n, d: {"restart": n, "after_ms": d}, st.sampled_from(NAMES), st.integers(0, 20000)),
    # A process paused (GC) past its rebalance or session timeout comes back as a zombie and consumes
    # until its next heartbeat tells it it was fenced, as a real one does: pauses stay below both.
    st.builds(lambda n, d: {"pause": n, "for_ms": d}, st.sampled_from(NAMES), st.integers(100, 25000)),
    st.builds(lambda n, d: {"stall": n, "for_ms": d}, st.sampled_from(NAMES), st.integers(100, 40000)),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 120000), event), max_size=10),
       st.sampled_from(["uniform", "range"]), st.booleans(), st.sampled_from([0.0, 2.0]))
def test_random_schedules_keep_the_invariants(schedule: list[tuple[int, dict[str, Any]]], assignor: str,
                                             static: bool, cost: float) -> None:
    events = [{"at_ms": 0, "join": n} for n in NAMES] + [{"at_ms": at, **e} for at, e in schedule]
    events.append({"at_ms": 200000, "join": NAMES[0]})  # someone is surely there at the end
    consumers = [{"id": n, "subscribe": ["t0", "t1"], "processing_ms_per_record": cost,
                  "max_poll_interval_ms": 30000, **({"group_instance_id": n} if static else {})} for n in NAMES]
    scenario = load_scenario({
        "name": "random", "group": "g", "group_protocol": "consumer", "assignor": assignor,
        "topics": {"t0": 5, "t1": 3}, "consumers": consumers,
        "config": {"revocation_ms": 200, "network_jitter_ms": 3},
        "produce": [{"topic": "t0", "records_per_s": 50, "keys": 40}, {"topic": "t1", "records_per_s": 20, "keys": 20}],
        "events": events, "end_ms": 400000,
    })
    run = run_simulation(scenario)
    assert run.ownership_conflicts == 0
    by_partition: dict[str, list[tuple[int, int]]] = {}
    for o in run.to_json()["ownership"]:
        by_partition.setdefault(o["partition"], []).append((o["start_ms"], o["end_ms"]))
    for intervals in by_partition.values():
        intervals.sort()
        assert all(b[0] >= a[1] for a, b in zip(intervals, intervals[1:], strict=False))
    assert run.to_json()["metrics"]["records_lost"] == 0
    assert run.final_group_state == "Stable"
    owned = sorted(p for parts in run.to_json()["final_assignment"].values() for p in parts)
    assert owned == sorted([f"t0-{i}" for i in range(5)] + [f"t1-{i}" for i in range(3)])
