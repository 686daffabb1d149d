"""``ascii_id_order`` (RangeAssignor.sortMemberIds's order on arrays) against Python's sort."""

from __future__ import annotations

import random
import string

import numpy as np
import pytest

from kafka_rebalance.assignors.server.id_order import ascii_id_order


def python_order(ids: tuple[str, ...]) -> np.ndarray:
    return np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_random_ids_around_word_boundaries(seed: int) -> None:
    """Shared prefixes and lengths at and around 8 and 16 bytes (where the integer keys cut
    the ids), duplicates included (index order among equal ids)."""
    rng = random.Random(seed)
    for _ in range(2000):
        prefix = "p" * rng.choice([0, 1, 7, 8, 9, 15, 16, 17])
        alphabet = rng.choice(["ab", "a0", string.ascii_letters + string.digits + "-_"])
        lengths = [0, 1, 7, 8, 9, 15, 16, 17, rng.randint(0, 30)]
        ids = tuple(prefix + "".join(rng.choice(alphabet) for _ in range(rng.choice(lengths))) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.3:
            ids += ids[: rng.randint(0, len(ids))]
        order = ascii_id_order(ids)
        assert order is not None
        assert order.tolist() == python_order(ids).tolist(), ids


@pytest.mark.parametrize("ids", [
    tuple(f"member{i}" for i in range(5000)),  # ServerSideAssignorBenchmark's ids
    tuple(f"consumer-{i % 7}-{i:08x}-{(i * 2654435761) % 2**32:08x}" for i in range(3000)),
    (*(f"member{i}" for i in range(4999)), "newMember"),  # the JMH incremental shapes' joiner
    ("newMember", *(f"member{i}" for i in range(4999))),
    (*(f"member{i}" for i in range(2000)), "m", "", "zz", *(f"member{i}" for i in range(2000, 3000))),
    (*(f"consumer-{i:08d}-{i % 3}" for i in range(3000)), "consumer-", "consumer-00000007-1", "aaa"),
    ("same",) * 5,
    ("",),
    ("", "", "a"),
])
def test_large_and_degenerate_groups(ids: tuple[str, ...]) -> None:
    order = ascii_id_order(ids)
    assert order is not None
    assert order.tolist() == python_order(ids).tolist()


def test_ids_in_no_order_with_ties() -> None:
    """Random ids (Kafka's own are random: introsort's case), then the same with duplicates and
    ids sharing their first 8 bytes after a shared prefix (introsort finds ties: the stable sort
    decides), then ids already in order (timsort's case)."""
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "-_"
    ids = ["".join(rng.choice(alphabet) for _ in range(22)) for _ in range(3000)]
    tied = ids + rng.sample(ids, 300) + [ids[0][:8] + "x" * rng.randint(0, 12) for _ in range(50)]
    rng.shuffle(tied)
    for case in (ids, tied, sorted(ids)):
        order = ascii_id_order(tuple(case))
        assert order is not None
        assert order.tolist() == python_order(tuple(case)).tolist()


@pytest.mark.parametrize("ids", [("a\x00", "a"), ("é", "a"), ()])
def test_not_handled(ids: tuple[str, ...]) -> None:
    """Non-ASCII ids (Java compares UTF-16 units), ids holding a NUL, no ids: the caller sorts."""
    assert ascii_id_order(ids) is None


@pytest.mark.parametrize("seed", range(3))
def test_a_few_ids_outside_the_prefix_most_share(seed: int) -> None:
    """Up to one id in 64 without the prefix the rest share (shorter than it, a prefix of it,
    equal to one of the others, before or after them), anywhere among them."""
    rng = random.Random(seed)
    for _ in range(30):
        prefix = rng.choice(["member", "consumer-group-7-", "p" * 8, "p" * 9])
        ids = [prefix + str(rng.randint(0, 10**rng.randint(1, 12))) for _ in range(rng.randint(64, 400))]
        for _ in range(rng.randint(1, len(ids) // 64)):
            outsider = rng.choice(["", prefix[:rng.randint(0, len(prefix) - 1)], "newMember", "zz",
                                   prefix[:-1] + "~" + str(rng.randint(0, 99))])
            ids.insert(rng.randint(0, len(ids)), outsider)
        order = ascii_id_order(tuple(ids))
        assert order is not None
        assert order.tolist() == python_order(tuple(ids)).tolist(), ids

