"""One reconciliation step (``assignment.reconcile``), each case a fact from Kafka's
CurrentAssignmentBuilderTest (group-coordinator/src/test/java/org/apache/kafka/coordinator/group/
modern/consumer/CurrentAssignmentBuilderTest.java); topic ids t1/t2 are topics "a"/"b"."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance.protocol.modern.consumer.assignment import (
    MemberAssignment,
    MemberAssignmentState,
    Partitions,
    is_subset,
    partitions,
    reconcile,
    sorted_numbers,
    to_strings,
)

STABLE, UNREVOKED, UNRELEASED = MemberAssignmentState.STABLE, MemberAssignmentState.UNREVOKED_PARTITIONS, MemberAssignmentState.UNRELEASED_PARTITIONS


def p(a: Sequence[int] = (), b: Sequence[int] = ()) -> Partitions:
    return partitions({"a": a, "b": b})


def member(state: MemberAssignmentState, epoch: int, previous: int, assigned: Partitions,
           revoking: Partitions | None = None) -> MemberAssignment:
    return MemberAssignment(state, epoch, previous, assigned, revoking or {})


def held_by(epoch: int, *free: tuple[str, int]):
    return lambda topic, number: -1 if (topic, number) in free else epoch


CASES = [
    ("testStableToStable", member(STABLE, 10, 10, p([1, 2, 3], [4, 5, 6])), 11, p([1, 2, 3], [4, 5, 6]),
     held_by(10), None, member(STABLE, 11, 10, p([1, 2, 3], [4, 5, 6]))),
    ("testStableToStableWithNewPartitions", member(STABLE, 10, 10, p([1, 2, 3], [4, 5, 6])), 11,
     p([1, 2, 3, 4], [4, 5, 6, 7]), held_by(-1), None, member(STABLE, 11, 10, p([1, 2, 3, 4], [4, 5, 6, 7]))),
    ("testStableToUnrevokedPartitions", member(STABLE, 10, 10, p([1, 2, 3], [4, 5, 6])), 11,
     p([2, 3, 4], [5, 6, 7]), held_by(-1), None, member(UNREVOKED, 10, 10, p([2, 3], [5, 6]), p([1], [4]))),
    ("testStableToUnreleasedPartitions", member(STABLE, 10, 10, p([1, 2, 3], [4, 5, 6])), 11,
     p([1, 2, 3, 4], [4, 5, 6, 7]), held_by(10), None, member(UNRELEASED, 11, 10, p([1, 2, 3], [4, 5, 6]))),
    ("testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions",
     member(STABLE, 10, 10, p([1, 2, 3], [4, 5, 6])), 11, p([1, 2, 3], [4, 5, 7]), held_by(10), p(),
     member(UNRELEASED, 11, 10, p([1, 2, 3], [4, 5]))),
    ("testUnrevokedPartitionsToStable", member(UNREVOKED, 10, 10, p([2, 3], [5, 6]), p([1], [4])), 11,
     p([2, 3], [5, 6]), held_by(-1), p([2, 3], [5, 6]), member(STABLE, 11, 10, p([2, 3], [5, 6]))),
    ("testUnrevokedPartitionsToUnrevokedPartitions", member(UNREVOKED, 10, 10, p([2, 3], [5, 6]), p([1], [4])), 12,
     p([3], [6]), held_by(-1), p([2, 3], [5, 6]), member(UNREVOKED, 11, 10, p([3], [6]), p([2], [5]))),
    ("testUnrevokedPartitionsToUnreleasedPartitions", member(UNREVOKED, 11, 10, p([2, 3], [5, 6])), 11,
     p([2, 3, 4], [5, 6, 7]), held_by(10), p([2, 3], [5, 6]), member(UNRELEASED, 11, 11, p([2, 3], [5, 6]))),
    ("testUnreleasedPartitionsToStable", member(UNRELEASED, 11, 11, p([2, 3], [5, 6])), 12, p([2, 3], [5, 6]),
     held_by(10), None, member(STABLE, 12, 11, p([2, 3], [5, 6]))),
    ("testUnreleasedPartitionsToStableWithNewPartitions", member(UNRELEASED, 11, 11, p([2, 3], [5, 6])), 11,
     p([2, 3, 4], [5, 6, 7]), held_by(-1), None, member(STABLE, 11, 11, p([2, 3, 4], [5, 6, 7]))),
    ("testUnreleasedPartitionsToUnreleasedPartitions", member(UNRELEASED, 11, 11, p([2, 3], [5, 6])), 11,
     p([2, 3, 4], [5, 6, 7]), held_by(10), None, None),
    ("testUnreleasedPartitionsToUnrevokedPartitions", member(UNRELEASED, 11, 11, p([2, 3], [5, 6])), 12,
     p([3], [6]), held_by(10), None, member(UNREVOKED, 11, 11, p([3], [6]), p([2], [5]))),
]


@pytest.mark.parametrize(("name", "before", "target_epoch", "target", "epochs", "owned", "after"), CASES,
                         ids=[c[0] for c in CASES])
def test_kafka_current_assignment_builder_cases(name, before, target_epoch, target, epochs, owned, after) -> None:
    """Kafka's CurrentAssignmentBuilderTest.<name> (None as ``after``: the member stays as it is)."""
    result = reconcile(before, target_epoch, target, epochs, owned)
    assert result == (before if after is None else after)


def test_remains_in_unrevoked_partitions() -> None:
    """CurrentAssignmentBuilderTest.testRemainsInUnrevokedPartitions: a member that does not
    report its partitions, or still reports one being revoked, stays where it is."""
    before = member(UNREVOKED, 10, 10, p([2, 3], [5, 6]), p([1], [4]))
    for owned in (None, p([1, 2, 3], [5, 6]), p([2, 3], [4, 5, 6])):
        assert reconcile(before, 12, p([3], [6]), held_by(-1), owned) is before


owned_sets = st.builds(lambda a, b: p(a, b), st.sets(st.integers(0, 5), max_size=6), st.sets(st.integers(0, 5), max_size=6))


@given(owned_sets, owned_sets, owned_sets, st.integers(0, 3))
def test_reconcile_never_assigns_a_held_partition(current: Partitions, target: Partitions, others: Partitions,
                                                  bump: int) -> None:
    """The rule of CurrentAssignmentBuilder.computeNextAssignment: a partition enters a member's
    assignment only when no other member holds it (currentPartitionEpoch == -1), and a member
    asked to revoke keeps its epoch and only a subset of what it had."""
    others = partitions({t: ps - current.get(t, frozenset()) for t, ps in others.items()})
    before = member(STABLE, 5, 4, current)
    result = reconcile(before, 5 + bump, target, held_by(7, *[(t, n) for t in "ab" for n in range(6)
                                                               if n not in others.get(t, frozenset())]), None)
    gained = partitions({t: ps - current.get(t, frozenset()) for t, ps in result.assigned.items()})
    assert not any(ps & others.get(t, frozenset()) for t, ps in gained.items())
    assert is_subset(result.assigned, partitions({t: current.get(t, frozenset()) | target.get(t, frozenset())
                                                  for t in "ab"}))
    if result.state is UNREVOKED:
        assert result.member_epoch == 5 and is_subset(result.assigned, current)


@given(st.dictionaries(st.sampled_from(["a", "b", "topic-x", "z"]), st.frozensets(st.integers(0, 40)), max_size=4),
       st.booleans())
def test_partition_names_are_kafkas_order_whether_kept_or_not(pairs: dict[str, frozenset[int]], as_sets: bool) -> None:
    """``TopicPartition.toString()`` of every partition, topics then numbers ascending, the same on
    a second call (kept per partition set) and for plain sets (not kept)."""
    assignment = {topic: set(numbers) if as_sets else numbers for topic, numbers in pairs.items()}
    expected = [f"{topic}-{number}" for topic in sorted(pairs) for number in sorted(pairs[topic])]
    assert to_strings(assignment) == expected  # type: ignore[arg-type]
    assert to_strings(assignment) == expected  # type: ignore[arg-type]
    for numbers in pairs.values():
        assert sorted_numbers(numbers) == tuple(sorted(numbers))
        assert sorted_numbers(set(numbers)) == tuple(sorted(numbers))  # type: ignore[arg-type]
