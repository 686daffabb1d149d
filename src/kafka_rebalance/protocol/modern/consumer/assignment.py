"""Partition sets keyed by topic, and a member's reconciliation step (Kafka's
``modern/consumer/CurrentAssignmentBuilder``).

A partition set is a ``Mapping[str, frozenset[int]]`` (topic -> partition numbers) with no empty
entries. Kafka keys topics by their Uuid; this model keys them by name (a topic is never deleted
and recreated under the same name in a simulation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache

Partitions = Mapping[str, frozenset[int]]
EMPTY: Partitions = {}


def partitions(pairs: Mapping[str, Iterable[int]]) -> dict[str, frozenset[int]]:
    """A partition set from topic -> partition numbers, dropping empty topics."""
    out = {topic: frozenset(numbers) for topic, numbers in pairs.items()}
    return {topic: numbers for topic, numbers in out.items() if numbers}


def count(assignment: Partitions) -> int:
    return sum(len(numbers) for numbers in assignment.values())


def is_subset(small: Partitions, big: Partitions) -> bool:
    return all(numbers <= big.get(topic, frozenset()) for topic, numbers in small.items())


def union(a: Partitions, b: Partitions) -> dict[str, frozenset[int]]:
    out = dict(a)
    for topic, numbers in b.items():
        out[topic] = out.get(topic, frozenset()) | numbers
    return out


def difference(a: Partitions, b: Partitions) -> dict[str, frozenset[int]]:
    return partitions({topic: numbers - b.get(topic, frozenset()) for topic, numbers in a.items()})


def to_strings(assignment: Partitions) -> list[str]:
    """Kafka's ``TopicPartition.toString()`` of every partition, topics and numbers ascending."""
    out: list[str] = []
    for topic in sorted(assignment):
        numbers = assignment[topic]
        if type(numbers) is frozenset:
            out.extend(_topic_strings(topic, numbers))
        else:
            out.extend(f"{topic}-{number}" for number in sorted(numbers))
    return out


def sorted_numbers(numbers: frozenset[int]) -> tuple[int, ...]:
    """A partition set's numbers ascending."""
    if type(numbers) is frozenset:
        return _sorted_numbers(numbers)
    return tuple(sorted(numbers))


@lru_cache(maxsize=4096)
def _sorted_numbers(numbers: frozenset[int]) -> tuple[int, ...]:
    """Kept: a group's targets go to the assignor, and assignments to the wire, again and again
    unchanged while members reconcile (a frozenset keeps its hash)."""
    return tuple(sorted(numbers))


@lru_cache(maxsize=4096)
def _topic_strings(topic: str, numbers: frozenset[int]) -> tuple[str, ...]:
    """One topic's partition names, kept: the same frozensets are named again on every log line,
    callback and rebalance record while members reconcile."""
    return tuple(f"{topic}-{number}" for number in sorted(numbers))


class MemberAssignmentState(Enum):
    """A member's reconciliation state on the coordinator (Kafka's ``modern/MemberAssignmentState``)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """What the coordinator holds about a member's current assignment: its state, epochs, the
    partitions it may use (``assigned``) and those it must give up (``pending_revocation``)."""

    state: MemberAssignmentState = MemberAssignmentState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)

    def is_reconciled_to(self, target_epoch: int) -> bool:
        """Kafka's ``ModernGroupMember.isReconciledTo``."""
        return self.state is MemberAssignmentState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, epoch: int, state: MemberAssignmentState, assigned: Partitions,
                   pending_revocation: Partitions) -> MemberAssignment:
        """``updateMemberEpoch``: the previous epoch follows the epoch it replaces."""
        return MemberAssignment(state=state, member_epoch=epoch, previous_member_epoch=self.member_epoch,
                                assigned=assigned, pending_revocation=pending_revocation)


PartitionEpoch = Callable[[str, int], int]
"""The epoch of a partition's current owner, or -1 when nobody holds it."""


def _owns_any(owned: Partitions | None, revoking: Partitions) -> bool:
    if owned is None:  # not reported: the coordinator cannot know it was released
        return True
    return any(numbers & revoking.get(topic, frozenset()) for topic, numbers in owned.items())


def reconcile(member: MemberAssignment, target_epoch: int, target: Partitions,
              partition_epoch: PartitionEpoch, owned: Partitions | None) -> MemberAssignment:
    """One step of Kafka's ``CurrentAssignmentBuilder.build()``: the member's next state, or the
    same object when it cannot move yet. ``owned`` is what the member reported in this heartbeat
    (None: not reported)."""
    match member.state:
        case MemberAssignmentState.STABLE:
            if member.member_epoch != target_epoch:
                return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
            return member
        case MemberAssignmentState.UNREVOKED_PARTITIONS:
            if _owns_any(owned, member.pending_revocation):
                return member
            return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
        case MemberAssignmentState.UNRELEASED_PARTITIONS:
            return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)


def _next(member: MemberAssignment, epoch: int, target_epoch: int, target: Partitions,
          partition_epoch: PartitionEpoch, owned: Partitions | None) -> MemberAssignment:
    """Kafka's ``computeNextAssignment``: revoke first; assign only what nobody else holds."""
    has_unreleased = False
    assigned: dict[str, frozenset[int]] = {}
    revoking: dict[str, frozenset[int]] = {}
    pending: dict[str, frozenset[int]] = {}
    current = member.assigned
    nothing: frozenset[int] = frozenset()
    for topic in set(target) | set(current):
        wanted = target.get(topic, nothing)
        have = current.get(topic, nothing)
        if have == wanted:  # the common topic: nothing to revoke or add
            if have:
                assigned[topic] = have
            continue
        kept = have & wanted
        to_revoke = have - kept
        to_add = wanted - kept
        free = frozenset([p for p in to_add if partition_epoch(topic, p) == -1]) if to_add else to_add
        if len(free) != len(to_add):
            has_unreleased = True
        if kept:
            assigned[topic] = kept
        if to_revoke:
            revoking[topic] = to_revoke
        if free:
            pending[topic] = free
    if revoking and _owns_any(owned, revoking):
        return member.with_epoch(epoch, MemberAssignmentState.UNREVOKED_PARTITIONS, assigned, revoking)
    if pending:
        state = MemberAssignmentState.UNRELEASED_PARTITIONS if has_unreleased else MemberAssignmentState.STABLE
        return member.with_epoch(target_epoch, state, union(assigned, pending), {})
    state = MemberAssignmentState.UNRELEASED_PARTITIONS if has_unreleased else MemberAssignmentState.STABLE
    return member.with_epoch(target_epoch, state, assigned, {})
