"""From dicts (``ServerMember``) or a group snapshot to a ``ServerGroup``, and back."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, is_, itemgetter
from typing import Protocol, cast

import numpy as np

from kafka_rebalance.assignors.server.group import (
    ServerGroup,
    stable_member_order,
    subscription_iteration_order,
)
from kafka_rebalance.assignors.server.topic_ids import derived_topic_id, parse_topic_id, topic_id_keys
from kafka_rebalance.model import (
    UNASSIGNED,
    ColumnarGroup,
    GroupSnapshot,
    InvalidInput,
    capacity_after_puts,
    capacity_of_copy,
    java_hash_order,
    java_sorted,
    java_string_hashes,
)

MEMBER_ID = attrgetter("member_id")
SUBSCRIBED_TOPICS = attrgetter("subscribed_topics")
INSTANCE_ID = attrgetter("instance_id")

# How Kafka's uniform builders iterate the members of a dict or snapshot, and each member's
# current assignment: "coordinator", as a broker's group coordinator presents them (hash maps
# filled in the order given: members in the order they joined, assignments in the order of
# their record); "given", in the order given (Kafka's unit tests use TreeMaps and
# LinkedHashMaps). docs/assignment-json.md, "Kafka's iteration orders".
ITERATION_ORDERS = ("coordinator", "given")


def coordinator_member_order(member_ids: Sequence[str]) -> np.ndarray:
    """The order in which ``GroupSpec.memberIds()`` yields the members on a broker:
    ``TargetAssignmentBuilder`` puts them into a ``HashMap<String, ...>`` in the order of the
    group's member map, so they come out bucket by bucket of ``String.hashCode``, ties in the
    order given (the order the members joined)."""
    hashes = java_string_hashes(member_ids)
    order: np.ndarray = java_hash_order(hashes, capacity_after_puts(len(member_ids)))
    return order


def subscribed_name_order(names: Sequence[str], index: Mapping[str, int], topic_keys: np.ndarray,
                          hashed: bool = True) -> np.ndarray:
    """A member's subscribed topics that exist, as Kafka's homogeneous builder iterates them:
    ``new HashSet<>(TopicIds)``, where ``TopicIds`` walks the member's ``HashSet<String>`` of
    names (filled in the order given; not ``hashed``: the order given) and resolves each name
    to its topic id."""
    if hashed:
        by_name = java_hash_order(java_string_hashes(names), capacity_of_copy(len(names)))
    else:
        by_name = np.arange(len(names), dtype=np.int64)
    resolved = [index[names[i]] for i in by_name.tolist() if names[i] in index]
    unique = np.array(list(dict.fromkeys(resolved)), dtype=np.int64)
    return subscription_iteration_order(unique, topic_keys, names_order=unique)


@dataclass(frozen=True, slots=True)
class ServerMember:
    member_id: str
    subscribed_topics: tuple[str, ...]
    assigned: Mapping[str, tuple[int, ...]]  # current assignment: topic -> partitions
    instance_id: str | None = None
    rack: str | None = None


def resolve_topic_keys(names: Sequence[str], topic_ids: Mapping[str, str] | None) -> np.ndarray:
    ids = topic_ids or {}
    raw = [parse_topic_id(ids[n], f"topics.{n}.topic_id") if n in ids else derived_topic_id(n) for n in names]
    return topic_id_keys(raw)


Holdings = tuple[np.ndarray, np.ndarray]  # (held_indptr, held_partitions), as in ``ServerGroup``


class HeldPartitions(Protocol):
    """The current assignment of a group's members kept as arrays between computations (the
    coordinator's previous target, ``protocol.modern.consumer.target``)."""

    def current_assignment(self, topic_names: Sequence[str], partition_counts: np.ndarray,
                           member_index: Mapping[str, int]) -> tuple[np.ndarray, Holdings | None] | None:
        """The holder (index in ``member_index``, or -1) of every partition of the layout
        ``topic_names``/``partition_counts``, and the same member by member when it is at hand
        without a sort (else None). Each member's holdings are listed topic by topic in Java
        order, ascending (the order a target the assignors wrote has). None when some member's
        holdings are listed otherwise, or two members claim one partition: then only the
        members' ``assigned`` maps can say who Kafka would iterate first."""


def build_server_group(
    topics: Mapping[str, int],
    members: Sequence[ServerMember],
    topic_ids: Mapping[str, str] | None = None,
    iteration_order: str = "coordinator",
) -> ServerGroup:
    """The group of ``members``, numbered in Kafka's iteration order (``iteration_order``)."""
    check_iteration_order(iteration_order)
    names, index, counts, offsets = _topic_layout(topics)
    members = _in_iteration_order(members, iteration_order)
    claimed, holder = flatten_claims([m.assigned for m in members], index, counts, offsets)
    owner = owner_from_claims(claimed, holder, int(offsets[-1]))
    return _assemble(names, index, counts, members, owner, claim_positions(claimed, int(offsets[-1])),
                     topic_ids, iteration_order)


def build_server_group_from_held(topics: Mapping[str, int], members: Sequence[ServerMember],
                                 held: HeldPartitions) -> ServerGroup | None:
    """``build_server_group`` in the coordinator's iteration order, with the members' current
    assignment read from ``held`` (their ``assigned`` maps are not read): the same group,
    without a Python object per held partition. None where ``held`` cannot say (see
    ``HeldPartitions.current_assignment``)."""
    names, index, counts, _ = _topic_layout(topics)
    members = _in_iteration_order(members, "coordinator")
    current = held.current_assignment(names, counts, dict(zip(map(MEMBER_ID, members), range(len(members)), strict=True)))
    if current is None:
        return None
    owner, holdings = current
    # Every member's holdings are listed ascending: the claims' order is the partitions' own.
    return _assemble(names, index, counts, members, owner, None, None, "coordinator", holdings)


def flatten_claims(assigned: Sequence[Mapping[str, Collection[int]]], index: Mapping[str, int], counts: np.ndarray,
                   offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every partition in ``assigned`` (one map per member) that exists in the layout, as
    (global partition, member's position in ``assigned``), in the order listed. Each map is
    read whole at C speed; topics missing from ``index`` are dropped."""
    run_names: list[str] = []
    run_parts: list[Collection[int]] = []
    runs_per_member: list[int] = []
    for held in assigned:
        run_names.extend(held)
        run_parts.extend(held.values())
        runs_per_member.append(len(held))
    lookup = {t: index.get(t, -1) for t in dict.fromkeys(run_names)}  # few distinct names: map at C speed
    run_topic = np.fromiter(map(lookup.__getitem__, run_names), dtype=np.int64, count=len(run_names))
    lengths = np.fromiter(map(len, run_parts), dtype=np.int64, count=len(run_parts))
    partition = None
    if bool((lengths == 1).all()):  # one partition per run: no iterator per run
        try:
            partition = np.fromiter(map(itemgetter(0), cast(list[Sequence[int]], run_parts)), dtype=np.int64,
                                    count=len(run_parts))
        except TypeError:  # sets (the coordinator's targets), not sequences
            partition = None
    if partition is None:
        partition = np.fromiter(chain.from_iterable(run_parts), dtype=np.int64, count=int(lengths.sum()))
    topic = np.repeat(run_topic, lengths)
    holder = np.repeat(np.repeat(np.arange(len(assigned), dtype=np.int64), runs_per_member), lengths)
    # A topic missing from the layout is -1: its count is read as 0 (and the layout may have none).
    count = np.append(counts, 0)[topic]
    exists = (topic >= 0) & (partition >= 0) & (partition < count)
    return offsets[topic[exists]] + partition[exists], holder[exists]


def _topic_layout(topics: Mapping[str, int]) -> tuple[list[str], dict[str, int], np.ndarray, np.ndarray]:
    """Topic names in Java order, their indices, partition counts and global offsets."""
    for name, count in topics.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidInput(f"topics.{name}", f"expected a partition count, got {count!r}")
    names = java_sorted(topics)
    index = {name: i for i, name in enumerate(names)}
    counts = np.array([topics[n] for n in names], dtype=np.int64)
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return names, index, counts, offsets


def _in_iteration_order(members: Sequence[ServerMember], iteration_order: str) -> Sequence[ServerMember]:
    """``members`` (distinct ids checked) in the order Kafka's builders iterate them."""
    ids = list(map(MEMBER_ID, members))
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        duplicate = next(member_id for member_id in ids if member_id in seen or seen.add(member_id))  # type: ignore[func-returns-value]
        raise InvalidInput("members", f"duplicate member_id {duplicate!r}")
    if iteration_order == "coordinator" and len(members) > 1:
        return list(map(members.__getitem__, coordinator_member_order(ids).tolist()))
    return members


def _assemble(names: list[str], index: dict[str, int], counts: np.ndarray, members: Sequence[ServerMember],
              owner: np.ndarray, claim_position: np.ndarray | None, topic_ids: Mapping[str, str] | None,
              iteration_order: str, holdings: Holdings | None = None) -> ServerGroup:
    """The group of ``members`` (numbered as listed) holding ``owner``."""
    subscriptions = list(map(SUBSCRIBED_TOPICS, members))
    member_class, class_lists = subscription_classes(subscriptions, index)
    topic_keys = resolve_topic_keys(names, topic_ids)
    return ServerGroup.build(
        topic_names=names,
        partition_counts=counts,
        topic_keys=topic_keys,
        member_ids=list(map(MEMBER_ID, members)),
        member_class=member_class,
        class_topic_lists=class_lists,
        current_owner=owner,
        held=holdings,
        instance_ids=list(map(INSTANCE_ID, members)),
        same_subscriptions=same_topic_names(subscriptions),
        subscription_sequence=(subscribed_name_order(members[0].subscribed_topics, index, topic_keys,
                                                     hashed=iteration_order == "coordinator") if members else None),
        claim_position=claim_position,
        hashed_assignments=iteration_order == "coordinator",
    )


def check_iteration_order(iteration_order: str) -> None:
    if iteration_order not in ITERATION_ORDERS:
        raise InvalidInput("iteration_order", f"expected one of {', '.join(ITERATION_ORDERS)}, got {iteration_order!r}")


def same_topic_names(subscriptions: Sequence[Sequence[str]]) -> bool:
    """Does every member name the same topics (Kafka's HOMOGENEOUS)? Members usually share one
    list object, so each distinct object is turned into a set once."""
    firsts, _ = distinct_objects(subscriptions)
    sets = {frozenset(subscriptions[i]) for i in firsts}
    return len(sets) <= 1


def distinct_objects(items: Sequence[object]) -> tuple[list[int], np.ndarray]:
    """The position of the first of each distinct object in ``items`` (by identity, not value),
    and each item's number among them: found in C, without a Python step per item (members
    usually share a few subscription objects)."""
    if items and all(map(is_, items, repeat(items[0]))):  # one object shared by all: the usual group
        return [0], np.zeros(len(items), dtype=np.int64)
    identities = np.fromiter(map(id, items), dtype=np.uint64, count=len(items))
    _, firsts, inverse = np.unique(identities, return_index=True, return_inverse=True)
    return firsts.tolist(), inverse.reshape(-1).astype(np.int64)


def claim_positions(claimed: np.ndarray, total: int) -> np.ndarray:
    """Each partition's position among the claims as listed (its first claim; ``total`` for
    an unclaimed one)."""
    position = np.full(total, total, dtype=np.int64)
    position[claimed[::-1]] = np.arange(len(claimed) - 1, -1, -1, dtype=np.int64)  # the first claim wins
    return position


def subscription_classes(topic_lists: Sequence[Sequence[str]], index: Mapping[str, int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each member's subscription class, and each class's topic indices (ascending). Topics
    missing from ``index`` are dropped; equal sets share a class whatever their order."""
    class_of_set: dict[bytes, int] = {}
    class_lists: list[np.ndarray] = []
    resolved: dict[tuple[str, ...], int] = {}
    firsts, which = distinct_objects(topic_lists)  # each distinct object is read once
    object_class = np.zeros(len(firsts), dtype=np.int64)
    for k, first in enumerate(firsts):
        key = tuple(topic_lists[first])
        c = resolved.get(key)
        if c is None:
            topic_set = np.array(sorted({index[t] for t in key if t in index}), dtype=np.int64)
            c = class_of_set.setdefault(topic_set.tobytes(), len(class_lists))
            if c == len(class_lists):
                class_lists.append(topic_set)
            resolved[key] = c
        object_class[k] = c
    return object_class[which], class_lists


def owner_from_claims(partitions: np.ndarray, holders: np.ndarray, total: int) -> np.ndarray:
    """Owner array from (partition, member) claims. A partition claimed twice (never so in a
    real group: members' assignments are the previous target) stays with its first claimant."""
    owner = np.full(total, UNASSIGNED, dtype=np.int64)
    if len(partitions) and np.bincount(partitions, minlength=total).max() > 1:
        first = np.unique(partitions, return_index=True)[1]
        partitions, holders = partitions[first], holders[first]
    owner[partitions] = holders
    return owner


def server_group_from_snapshot(snapshot: GroupSnapshot, iteration_order: str = "coordinator") -> tuple[ServerGroup, ColumnarGroup]:
    """The consumer group of a snapshot; also its ``ColumnarGroup`` (same member and partition
    numbering), whose bulk parser read the ``owned`` strings and whose writer prints the result.
    The group's ``iteration_order`` is Kafka's member order (``iteration_order``)."""
    check_iteration_order(iteration_order)
    columnar = ColumnarGroup.from_snapshot(snapshot)
    names = columnar.topic_names
    index = {name: i for i, name in enumerate(names)}
    member_class, class_lists = subscription_classes([m.topics for m in snapshot.members], index)
    ids = {n: topic_id for n in names if (topic_id := snapshot.topics[n].topic_id) is not None}
    topic_keys = resolve_topic_keys(names, ids)
    owner = owner_from_claims(columnar.owned_partitions, columnar.owned_member, columnar.num_partitions)
    order = (coordinator_member_order(columnar.member_ids) if iteration_order == "coordinator"
             else np.arange(columnar.num_members, dtype=np.int64))
    first = snapshot.members[int(order[0])].topics if len(order) else ()
    group = ServerGroup.build(
        topic_names=names,
        partition_counts=columnar.partition_counts,
        topic_keys=topic_keys,
        member_ids=columnar.member_ids,
        member_class=member_class,
        class_topic_lists=class_lists,
        current_owner=owner,
        instance_ids=columnar.group_instance_ids,
        same_subscriptions=same_topic_names([m.topics for m in snapshot.members]),
        subscription_sequence=(subscribed_name_order(first, index, topic_keys, hashed=iteration_order == "coordinator")
                               if len(order) else None),
        claim_position=claim_positions(columnar.owned_partitions, columnar.num_partitions),
        hashed_assignments=iteration_order == "coordinator",
        iteration_order=order,
    )
    return group, columnar


def target_assignment(group: ServerGroup, owner: np.ndarray) -> dict[str, dict[str, tuple[int, ...]]]:
    """Owner array -> member id -> topic -> ascending partitions (topics in Java order)."""
    assigned = np.flatnonzero(owner >= 0)
    assigned = assigned[stable_member_order(owner[assigned], group.num_members)]
    member = owner[assigned]
    topic = group.partition_topic[assigned]
    result: dict[str, dict[str, tuple[int, ...]]] = {mid: {} for mid in group.member_ids}
    if not len(assigned):
        return result
    # Runs: one per (member, topic), in member order, topics in Java order within a member.
    run_starts = np.flatnonzero(np.concatenate(([True], (member[1:] != member[:-1]) | (topic[1:] != topic[:-1]))))
    run_tuples = runs_as_tuples(assigned - group.topic_offsets[topic], np.diff(np.append(run_starts, len(assigned))))
    run_names = np.array(group.topic_names, dtype=object)[topic[run_starts]].tolist()
    run_member = member[run_starts]
    holders = np.flatnonzero(np.diff(run_member, prepend=-1))
    bounds = np.append(holders, len(run_member)).tolist()
    ids = group.member_ids
    for m, a, b in zip(run_member[holders].tolist(), bounds[:-1], bounds[1:], strict=True):
        result[ids[m]] = dict(zip(run_names[a:b], run_tuples[a:b], strict=True))
    return result


def runs_as_tuples(numbers: np.ndarray, sizes: np.ndarray) -> list[tuple[int, ...]]:
    """``numbers`` (partition numbers, at least 0) cut into consecutive tuples of ``sizes``
    (each at least 1). Where nearly every run is one partition (each member one partition of
    each topic, as ``range`` deals many topics), equal 1-tuples are one object: a table of them
    is indexed in C instead of a tuple made per run (8x faster at 500,000 runs), and the few
    longer runs are sliced on their own."""
    if not len(sizes):
        return []
    starts = np.cumsum(sizes) - sizes
    longer = np.flatnonzero(sizes > 1)
    largest = int(numbers.max())
    if 16 * len(longer) <= len(sizes) and largest < len(numbers):
        singles = np.fromiter(zip(range(largest + 1)), dtype=object, count=largest + 1)
        tuples: list[tuple[int, ...]] = singles[numbers[starts]].tolist()
        for i, lo, hi in zip(longer.tolist(), starts[longer].tolist(), (starts[longer] + sizes[longer]).tolist(), strict=True):
            tuples[i] = tuple(numbers[lo:hi].tolist())
        return tuples
    flat = numbers.tolist()
    return list(map(tuple, map(flat.__getitem__, map(slice, starts.tolist(), (starts + sizes).tolist()))))
