"""Partition assignors: pure functions of a group snapshot (Range, RoundRobin, Sticky,
CooperativeSticky, load-aware, plug-ins) and the strategy vote; the broker's server-side assignors of
consumer groups (KIP-848 ``uniform`` and ``range``) in ``assignors.server``."""

from kafka_rebalance.assignors.api import assign, assign_columnar, choose_strategy
from kafka_rebalance.assignors.base import (
    ColumnarAssignor,
    PartitionAssignor,
    SimplePartitionAssignor,
)
from kafka_rebalance.assignors.load_aware import LoadAwareAssignor, LoadAwareOptions
from kafka_rebalance.assignors.range import RangeAssignor
from kafka_rebalance.assignors.registry import available, get_assignor, register
from kafka_rebalance.assignors.roundrobin import RoundRobinAssignor
from kafka_rebalance.assignors.server import SERVER_ASSIGNORS, ServerMember, server_assign
from kafka_rebalance.assignors.sticky import CooperativeStickyAssignor, StickyAssignor, previous_owners
from kafka_rebalance.assignors.vote import select_strategy

__all__ = [
    "SERVER_ASSIGNORS",
    "ColumnarAssignor",
    "CooperativeStickyAssignor",
    "LoadAwareAssignor",
    "LoadAwareOptions",
    "PartitionAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "ServerMember",
    "SimplePartitionAssignor",
    "StickyAssignor",
    "assign",
    "assign_columnar",
    "available",
    "choose_strategy",
    "get_assignor",
    "previous_owners",
    "register",
    "select_strategy",
    "server_assign",
]
