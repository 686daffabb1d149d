"""From dicts (``ServerMember``) or a group snapshot to a ``ServerGroup``, and back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter

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
    java_sort_key,
    java_string_hashes,
)

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


def build_server_group(
    topics: Mapping[str, int],
    members: Sequence[ServerMember],
    topic_ids: Mapping[str, str] | None = None,
    iteration_order: str = "coordinator",
) -> ServerGroup:
    """The group of ``members``, numbered in Kafka's iteration order (``iteration_order``)."""
    check_iteration_order(iteration_order)
    for name, count in topics.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidInput(f"topics.{name}", f"expected a partition count, got {count!r}")
    names = sorted(topics, key=java_sort_key)
    index = {name: i for i, name in enumerate(names)}
    counts = np.array([topics[n] for n in names], dtype=np.int64)
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    seen: set[str] = set()
    for member in members:
        if member.member_id in seen:
            raise InvalidInput("members", f"duplicate member_id {member.member_id!r}")
        seen.add(member.member_id)
    if iteration_order == "coordinator" and len(members) > 1:
        members = [members[i] for i in coordinator_member_order([m.member_id for m in members]).tolist()]

    member_class, class_lists = subscription_classes([m.subscribed_topics for m in members], index)
    # Current assignment, flattened: (member, topic, partition), extended member by member at C
    # speed (a member's map is read whole; topics missing from ``topics`` are dropped below).
    run_names: list[str] = []
    run_parts: list[Sequence[int]] = []
    runs_per_member: list[int] = []
    for m in members:
        run_names.extend(m.assigned)
        run_parts.extend(m.assigned.values())
        runs_per_member.append(len(m.assigned))
    lookup = {t: index.get(t, -1) for t in dict.fromkeys(run_names)}  # few distinct names: map at C speed
    run_topic = np.fromiter(map(lookup.__getitem__, run_names), dtype=np.int64, count=len(run_names))
    lengths = np.fromiter(map(len, run_parts), dtype=np.int64, count=len(run_parts))
    if bool((lengths == 1).all()):  # one partition per run: no iterator per run
        partition = np.fromiter(map(itemgetter(0), run_parts), dtype=np.int64, count=len(run_parts))
    else:
        partition = np.fromiter(chain.from_iterable(run_parts), dtype=np.int64, count=int(lengths.sum()))
    topic = np.repeat(run_topic, lengths)
    holder = np.repeat(np.repeat(np.arange(len(members), dtype=np.int64), runs_per_member), lengths)
    exists = ((topic >= 0) & (partition >= 0) & (partition < counts[topic]) if len(topic)
              else np.zeros(0, dtype=bool))
    owner = owner_from_claims(offsets[topic[exists]] + partition[exists], holder[exists], int(offsets[-1]))
    topic_keys = resolve_topic_keys(names, topic_ids)
    claimed = offsets[topic[exists]] + partition[exists]
    return ServerGroup.build(
        topic_names=names,
        partition_counts=counts,
        topic_keys=topic_keys,
        member_ids=[m.member_id for m in members],
        member_class=member_class,
        class_topic_lists=class_lists,
        current_owner=owner,
        instance_ids=[m.instance_id for m in members],
        same_subscriptions=same_topic_names([m.subscribed_topics for m in members]),
        subscription_sequence=(subscribed_name_order(members[0].subscribed_topics, index, topic_keys,
                                                     hashed=iteration_order == "coordinator") if members else None),
        claim_position=claim_positions(claimed, int(offsets[-1])),
        hashed_assignments=iteration_order == "coordinator",
    )


def check_iteration_order(iteration_order: str) -> None:
    if iteration_order not in ITERATION_ORDERS:
        raise InvalidInput("iteration_order", f"expected one of {', '.join(ITERATION_ORDERS)}, got {iteration_order!r}")


def same_topic_names(subscriptions: Sequence[Sequence[str]]) -> bool:
    """Does every member name the same topics (Kafka's HOMOGENEOUS)? Members usually share one
    list object, so each distinct object is turned into a set once."""
    distinct = {id(s): s for s in subscriptions}
    sets = {frozenset(s) for s in {tuple(s) for s in distinct.values()}}
    return len(sets) <= 1


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
    # Members usually share one list object: each distinct object is read once.
    by_object: dict[int, int] = {}
    classes: list[int] = []
    for topics in topic_lists:
        c = by_object.get(id(topics))
        if c is None:
            key = tuple(topics)
            c = resolved.get(key)
            if c is None:
                topic_set = np.array(sorted({index[t] for t in key if t in index}), dtype=np.int64)
                c = class_of_set.setdefault(topic_set.tobytes(), len(class_lists))
                if c == len(class_lists):
                    class_lists.append(topic_set)
                resolved[key] = c
            by_object[id(topics)] = c
        classes.append(c)
    return np.array(classes, dtype=np.int64), class_lists


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
