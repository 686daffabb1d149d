"""``Traffic.leo_of`` (routes planned once per partition, what the simulator asks on every poll)
gives the log-end offsets of ``Traffic.leo`` (the definition, epoch by epoch) for any produce
entries and partition increases, at any time."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.sim.scenario import ProduceSpec
from kafka_rebalance.sim.traffic import Traffic


@st.composite
def traffic_cases(draw: st.DrawFn) -> tuple[Traffic, list[str], list[int]]:
    # Creation at some time, then partition increases (some at the same instant).
    created = draw(st.integers(0, 2000))
    epochs = [(created, draw(st.integers(1, 4)))]
    for _ in range(draw(st.integers(0, 3))):
        at = epochs[-1][0] + draw(st.integers(0, 3000))
        epochs.append((at, epochs[-1][1] + draw(st.integers(1, 3))))
    produce = [ProduceSpec(topic="t", records_per_s=draw(st.sampled_from((0.5, 5.0, 33.3, 200.0))),
                           keys=draw(st.integers(1, 50)), start_ms=draw(st.integers(0, 3000)),
                           end_ms=draw(st.none() | st.integers(0, 12000)))
               for _ in range(draw(st.integers(0, 3)))]
    partitions = [f"t-{p}" for p in range(epochs[-1][1] + 1)] + ["other-0"]
    times = draw(st.lists(st.integers(0, 15000), min_size=1, max_size=20))
    return Traffic(produce, {"t": epochs, "other": [(0, 1)]}, 15000), partitions, times


@settings(max_examples=300, deadline=None)
@given(traffic_cases())
def test_leo_of_is_leo(case: tuple[Traffic, list[str], list[int]]) -> None:
    traffic, partitions, times = case
    for t in times:
        expected = [traffic.leo(name.rpartition("-")[0], int(name.rpartition("-")[2]), t) for name in partitions]
        assert [traffic.leo_of(name, t) for name in partitions] == expected
        assert traffic.leo_many(partitions, t) == expected
