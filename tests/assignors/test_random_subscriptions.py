"""Kafka's testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription, scaled down:
random partition counts and random subscriptions, a quarter of the consumers leave, and the
rest claim what they had. This is the shape where the sticky repair has to move load along
chains of overlapping topic classes (assignors/sticky.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.assignors.checks import is_balanced, owners_subscribe, subscribed_partitions
from kafka_rebalance.assignors.sticky import previous_owners
from kafka_rebalance.model import ColumnarGroup


def _group(names, counts, subscriptions, keep, owned=None):
    indptr = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum([len(subscriptions[m]) for m in keep], out=indptr[1:])
    topics = np.concatenate([np.asarray(subscriptions[m], dtype=np.int64) for m in keep])
    kwargs = {}
    if owned is not None:
        owned_indptr = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum([len(owned[m]) for m in keep], out=owned_indptr[1:])
        kwargs = dict(
            owned_indptr=owned_indptr,
            owned_partitions=np.concatenate([owned[m] for m in keep]).astype(np.int64),
            generations=np.ones(len(keep), dtype=np.int64),
        )
    return ColumnarGroup.from_arrays(names, counts, [f"c{m:04d}" for m in keep], indptr, topics, **kwargs)


def _second_round(seed: int, topics: int = 60, members: int = 300, mean_partitions: int = 60):
    rng = random.Random(seed)
    names = [f"topic{t:03d}" for t in range(topics)]
    counts = [rng.randint(1, 2 * mean_partitions - 1) for _ in range(topics)]
    subscriptions = [sorted({rng.randrange(topics) for _ in range(rng.randint(1, 15))}) for _ in range(members)]
    everyone = list(range(members))
    first = get_assignor("sticky").assign_columnar(_group(names, counts, subscriptions, everyone))
    owned = [np.flatnonzero(first == m) for m in everyone]
    leaving = {rng.randrange(members) for _ in range(members // 4)}
    keep = [m for m in everyone if m not in leaving]
    return _group(names, counts, subscriptions, keep, owned)


def _follow_up(group: ColumnarGroup, owner: np.ndarray) -> ColumnarGroup:
    """Every member claims what it was given, one generation later."""
    given = np.flatnonzero(owner >= 0)
    order = given[np.argsort(owner[given], kind="stable")]
    counts = np.bincount(owner[given], minlength=group.num_members)
    return ColumnarGroup.from_arrays(
        group.topic_names, group.partition_counts, group.member_ids, group.subscription_indptr,
        group.subscription_topics, np.concatenate(([0], np.cumsum(counts))), order,
        np.full(group.num_members, 2),
    )


@pytest.mark.parametrize("seed", range(4))
def test_sticky_balances_random_subscriptions_after_members_leave(seed):
    group = _second_round(seed)
    owner = get_assignor("sticky").assign_columnar(group)
    assert owners_subscribe(group, owner)
    assert (owner[subscribed_partitions(group)] >= 0).all()
    assert is_balanced(group, owner)
    # Every partition of a returning member stays unless balance moves it: most of them here.
    prev = previous_owners(group)
    claimed = prev >= 0
    assert (owner[claimed] == prev[claimed]).mean() > 0.9


@pytest.mark.parametrize("seed", range(4))
def test_cooperative_follow_up_completes_random_subscriptions_without_revoking(seed):
    group = _second_round(seed)
    assignor = get_assignor("cooperative-sticky")
    owner = assignor.assign_columnar(group)
    assert owners_subscribe(group, owner)
    final = assignor.assign_columnar(_follow_up(group, owner))
    given = owner >= 0
    assert (final[given] == owner[given]).all()
    assert (final[subscribed_partitions(group)] >= 0).all()
    assert is_balanced(group, final)
