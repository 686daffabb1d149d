"""Kafka 4.x's server-side assignors (KIP-848 consumer groups): ``uniform`` and ``range``.

The broker computes a consumer group's target assignment from every member's subscription and
current assignment. ``server_assign`` is the dict API; ``server_assign_columnar`` works on a
``ServerGroup`` (arrays) and is what the benchmarks time.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from kafka_rebalance.assignors.server.build import (
    ITERATION_ORDERS,
    HeldPartitions,
    Holdings,
    ServerMember,
    build_server_group,
    build_server_group_from_held,
    coordinator_member_order,
    flatten_claims,
    server_group_from_snapshot,
    target_assignment,
)
from kafka_rebalance.assignors.server.group import ServerGroup, member_major
from kafka_rebalance.assignors.server.range import range_assign
from kafka_rebalance.assignors.server.topic_ids import derived_topic_id, format_topic_id
from kafka_rebalance.assignors.server.uniform import uniform_assign
from kafka_rebalance.model import GroupSnapshot, InvalidInput

SERVER_ASSIGNORS: tuple[str, ...] = ("uniform", "range")
DEFAULT_SERVER_ASSIGNOR = "uniform"

_ASSIGNORS: dict[str, Callable[[ServerGroup], np.ndarray]] = {"uniform": uniform_assign, "range": range_assign}


def check_server_assignor(name: str) -> str:
    if name not in _ASSIGNORS:
        raise InvalidInput("strategy", f"unknown server-side assignor {name!r} (known: {', '.join(SERVER_ASSIGNORS)})")
    return name


def choose_server_assignor(snapshot: GroupSnapshot, strategy: str | None = None) -> str:
    """An explicit strategy, else the snapshot's, else the one most members name as their
    ``server_assignor`` (``ConsumerGroup.computePreferredServerAssignor``; a tie goes to
    ``uniform``), else Kafka's default ``uniform``. Classic assignor names are an error."""
    for i, member in enumerate(snapshot.members):
        if member.server_assignor is not None and member.server_assignor not in _ASSIGNORS:
            raise InvalidInput(
                f"members[{i}].server_assignor",
                f"unsupported assignor {member.server_assignor!r} (known: {', '.join(SERVER_ASSIGNORS)})",
            )
    chosen = strategy or snapshot.strategy
    if chosen is None:
        votes = {name: 0 for name in SERVER_ASSIGNORS}
        for member in snapshot.members:
            if member.server_assignor is not None:
                votes[member.server_assignor] += 1
        best = max(votes.values())
        chosen = next(name for name in SERVER_ASSIGNORS if votes[name] == best) if best else DEFAULT_SERVER_ASSIGNOR
    if chosen not in _ASSIGNORS:
        raise InvalidInput(
            "strategy",
            f"{chosen!r} is not a server-side assignor; a consumer group (group_protocol consumer) "
            f"takes one of: {', '.join(SERVER_ASSIGNORS)}",
        )
    return chosen


def assign_consumer_group(snapshot: GroupSnapshot, strategy: str | None = None) -> dict[str, object]:
    """The output object of a consumer-group snapshot (docs/assignment-json.md, "Consumer
    groups"): the full target assignment, nothing withheld."""
    name = choose_server_assignor(snapshot, strategy)
    group, columnar = server_group_from_snapshot(snapshot)
    owner = server_assign_columnar(name, group)
    return {
        "group_protocol": "consumer",
        "strategy": name,
        "protocol": "COOPERATIVE",
        "assignment": columnar.assignment_lists(owner),
    }


def server_assign_columnar(assignor: str, group: ServerGroup) -> np.ndarray:
    """The target owner (member index, or -1) of every global partition of ``group``."""
    return _ASSIGNORS[check_server_assignor(assignor)](group)


def server_assign(
    assignor: str,
    topics: Mapping[str, int],
    members: Sequence[ServerMember],
    topic_ids: Mapping[str, str] | None = None,
    partition_racks: Mapping[str, Sequence[Sequence[str]]] | None = None,
    iteration_order: str = "coordinator",
) -> dict[str, dict[str, tuple[int, ...]]]:
    """The target assignment: member id -> topic -> partitions (ascending), every member present.

    ``topics`` maps a topic name to its partition count; ``topic_ids`` optionally gives Kafka's
    base64 Uuid of a topic (else one is derived from the name, see ``topic_ids``). Subscribed
    topics missing from ``topics`` are ignored, as the coordinator resolves subscriptions
    against the metadata image; so are assigned partitions that no longer exist.
    ``partition_racks`` is accepted for the coordinator's sake but Kafka's server-side
    assignors do not use racks, so neither do these. Raises ``InvalidInput`` on bad input.
    Python's cycle collector is paused while it runs (process-wide) and restored after.

    ``uniform`` depends on the order Kafka iterates members and each member's assignment in:
    ``iteration_order="coordinator"`` (the default) iterates them as a broker's coordinator does:
    hash tables filled with ``members`` in the order they joined and each ``assigned`` in the
    order of its record; ``"given"`` iterates everything as listed (as Kafka's unit tests do with
    a ``TreeMap`` and ``LinkedHashMap``). docs/assignment-json.md, "Kafka's iteration orders".
    """
    check_server_assignor(assignor)
    del partition_racks  # see docstring: Kafka's uniform and range builders ignore racks
    # Reading and writing a large group makes hundreds of thousands of tuples and dicts, none in
    # a reference cycle; the cycle collector would walk the caller's whole heap again and again
    # meanwhile (10-20% of the time at 500,000 partitions), so it waits until the answer is made.
    # The pause is process-wide: a thread that disables collection meanwhile sees it enabled again.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        group = build_server_group(topics, members, topic_ids, iteration_order)
        owner = server_assign_columnar(assignor, group)
        return target_assignment(group, owner)
    finally:
        if was_enabled:
            gc.enable()


__all__ = [
    "ITERATION_ORDERS",
    "coordinator_member_order",
    "DEFAULT_SERVER_ASSIGNOR",
    "assign_consumer_group",
    "choose_server_assignor",
    "SERVER_ASSIGNORS",
    "ServerGroup",
    "HeldPartitions",
    "Holdings",
    "ServerMember",
    "build_server_group",
    "build_server_group_from_held",
    "flatten_claims",
    "member_major",
    "server_group_from_snapshot",
    "check_server_assignor",
    "derived_topic_id",
    "format_topic_id",
    "server_assign",
    "server_assign_columnar",
    "target_assignment",
]
