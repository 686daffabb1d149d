"""The sticky engine's list path for small groups (assignors/sticky_small.py) gives the numpy
path's answer, partition for partition: subscriptions that overlap or nest, previous ownership
that is stale, contested (same or different generations), of unsubscribed topics or duplicated,
static members, and the cooperative re-aims that run the engine on its own answers."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.assignors.sticky import CooperativeStickyAssignor, sticky_owner, sticky_owner_columnar
from kafka_rebalance.assignors.sticky_small import is_small, sticky_owner_small
from kafka_rebalance.model import ColumnarGroup


def _group(rng: random.Random, max_members: int, max_topics: int, max_partitions: int) -> ColumnarGroup:
    topics = [f"t{i:02d}" for i in range(rng.randint(1, max_topics))]
    counts = [rng.randint(0, max_partitions) for _ in topics]
    offsets = np.concatenate(([0], np.cumsum(counts))).tolist()
    total = offsets[-1]
    m = rng.randint(1, max_members)
    shared = sorted(rng.sample(range(len(topics)), rng.randint(1, len(topics))))
    subs = [shared if rng.random() < 0.5 else sorted(rng.sample(range(len(topics)), rng.randint(1, len(topics)))) for _ in range(m)]
    owned: list[list[int]] = [[] for _ in range(m)]
    for p in range(total):
        for _ in range(rng.choice((0, 1, 1, 1, 2))):  # unowned, owned, or claimed twice
            owned[rng.randrange(m)].append(p)
    generations = [rng.choice((-1, 1, 2, 3)) for _ in range(m)]
    static = [f"s{rng.randrange(100)}" if rng.random() < 0.2 else None for _ in range(m)]
    ids = [f"C{rng.randrange(1000):03d}-{i}" for i in range(m)]
    return ColumnarGroup.from_arrays(
        topics, counts, ids,
        np.concatenate(([0], np.cumsum([len(s) for s in subs]))), [t for s in subs for t in s],
        np.concatenate(([0], np.cumsum([len(o) for o in owned]))), [p for o in owned for p in o],
        generations, static,
    )


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([(4, 3, 5), (8, 5, 8), (16, 8, 12)]))
def test_list_path_equals_numpy_path(seed: int, shape: tuple[int, int, int]) -> None:
    group = _group(random.Random(seed), *shape)
    assert is_small(group)
    np.testing.assert_array_equal(sticky_owner_small(group), sticky_owner_columnar(group))


def test_list_path_equals_numpy_path_on_larger_groups() -> None:
    """Up to 40 members over 12 topics of up to 30 partitions (some beyond the list path's
    size, compared all the same): the repair loop's chains,
    re-levels and regains all run."""
    rng = random.Random(20261126)
    for _ in range(150):
        group = _group(rng, 40, 12, 30)
        np.testing.assert_array_equal(sticky_owner_small(group), sticky_owner_columnar(group))


def test_cooperative_reaims_agree(monkeypatch) -> None:
    """The cooperative assignor runs the engine again on its own answer: the same either way."""
    rng = random.Random(7)
    groups = [_group(rng, 12, 6, 10) for _ in range(100)]
    small = [CooperativeStickyAssignor().assign_columnar(g) for g in groups]
    monkeypatch.setattr("kafka_rebalance.assignors.sticky.is_small", lambda group: False)
    for g, owner in zip(groups, small, strict=True):
        np.testing.assert_array_equal(CooperativeStickyAssignor().assign_columnar(g), owner)
        np.testing.assert_array_equal(sticky_owner(g), sticky_owner_columnar(g))
