"""The library entry points: ``assign`` (dict in, dict out) and ``assign_columnar`` (arrays)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kafka_rebalance.assignors.base import PartitionAssignor
from kafka_rebalance.assignors.registry import get_assignor
from kafka_rebalance.assignors.server import assign_consumer_group
from kafka_rebalance.assignors.vote import select_strategy
from kafka_rebalance.model import ColumnarGroup, GroupSnapshot


def choose_strategy(snapshot: GroupSnapshot, strategy: str | None = None) -> str:
    """An explicit strategy, else the snapshot's, else the members' vote. Members that list no
    strategies vote with a Java consumer's default list (range, cooperative-sticky)."""
    if strategy:
        return strategy
    if snapshot.strategy:
        return snapshot.strategy
    return select_strategy([m.effective_strategies for m in snapshot.members])


def assign(snapshot: Mapping[str, Any], strategy: str | None = None) -> dict[str, Any]:
    """Assign a group snapshot (the JSON of docs/assignment-json.md) and return the
    output object: ``{"strategy", "protocol", "assignment": {member: [partition, ...]}}``.
    A consumer-group snapshot (``"group_protocol": "consumer"``) goes to the server-side
    assignors and its output also says ``"group_protocol": "consumer"``.

    Raises ``InvalidInput`` (a ``ValueError``) naming the field for input breaking the contract.
    """
    parsed = GroupSnapshot.from_dict(snapshot)
    if parsed.group_protocol == "consumer":
        return assign_consumer_group(parsed, strategy)
    name = choose_strategy(parsed, strategy)
    assignor = get_assignor(name).configured(parsed.strategy_options)
    group = ColumnarGroup.from_snapshot(parsed)
    owner = assignor.assign_columnar(group)
    return {
        "strategy": assignor.name or name,
        "protocol": assignor.protocol.value,
        "assignment": group.assignment_lists(owner),
    }


def assign_columnar(group: ColumnarGroup, strategy: str | PartitionAssignor) -> np.ndarray:
    """Assign a group already held as arrays; returns the owner (member index or -1) of every
    global partition. See ``ColumnarGroup.from_arrays``."""
    assignor = strategy if isinstance(strategy, PartitionAssignor) else get_assignor(strategy)
    return assignor.assign_columnar(group)
