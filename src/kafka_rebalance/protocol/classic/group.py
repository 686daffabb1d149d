"""A classic group's state, as Kafka's GroupMetadata (``ClassicGroup``) keeps it: its members
(``MemberMetadata``), its states and their valid transitions, and the broker settings its
coordinator applies (``CoordinatorConfig``). The coordinator (``coordinator.py``) changes a
group only through the methods here, which keep Kafka's counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from kafka_rebalance.model import java_string_hash
from kafka_rebalance.protocol.classic.coordinator_events import (
    ConsumerProtocolSubscription,
    JoinGroupRequestProtocol,
)
from kafka_rebalance.protocol.effects import StateTable

# KIP-394: a new member's JoinGroup is held at most this long (GroupCoordinator.NewMemberJoinTimeoutMs).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class GroupState(Enum):
    """Kafka's ClassicGroupState; the value is the name Kafka prints and filters by."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


GROUP_STATES: StateTable[GroupState] = StateTable("classic group", {
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
})


class PartitionStatus(Enum):
    LOADING = "loading"
    LOADED = "loaded"


@dataclass(slots=True)
class CoordinatorConfig:
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = 2**31 - 1
    offsets_topic_num_partitions: int = 50
    broker_id: int = 0

    def allows_session_timeout(self, session_timeout_ms: int) -> bool:
        return self.group_min_session_timeout_ms <= session_timeout_ms <= self.group_max_session_timeout_ms


def coordinator_partition(group_id: str, num_partitions: int = 50) -> int:
    """abs(String.hashCode(group.id)) % offsets.topic.num.partitions; abs(MIN_VALUE) is 0 as in Kafka's Utils.abs."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


@dataclass(slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[JoinGroupRequestProtocol, ...]
    protocol_names: tuple[str, ...] = ()
    session_deadline: int = 0
    timer_armed: bool = False
    is_new: bool = False
    join_connection: str | None = None  # awaiting a JoinGroup response
    sync_connection: str | None = None  # awaiting a SyncGroup response
    assignment: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.protocol_names = tuple(p.name for p in self.protocols)

    def metadata(self, protocol_name: str | None) -> ConsumerProtocolSubscription:
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        return self.protocols[0].metadata

    def same_metadata(self, protocols: tuple[JoinGroupRequestProtocol, ...]) -> bool:
        if len(protocols) != len(self.protocols):
            return False
        for mine, theirs in zip(self.protocols, protocols, strict=True):
            if (mine.name != theirs.name or mine.metadata.topics != theirs.metadata.topics
                    or mine.metadata.owned_partitions != theirs.metadata.owned_partitions):
                return False
        return True


@dataclass(slots=True)
class ClassicGroup:
    """The state of one group (Kafka's GroupMetadata)."""

    group_id: str
    partition: int
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)  # in join order
    pending_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending_sync: set[str] = field(default_factory=set)
    offsets: dict[str, int] = field(default_factory=dict)
    in_initial_delay: bool = False
    new_member_added: bool = False
    initial_remaining_ms: int = 0
    # Counted as members come, go and join, as Kafka's GroupMetadata counts them
    # (numMembersAwaitingJoin, supportedProtocols): asked at every JoinGroup of a rebalance,
    # a walk over the members made a rebalance of n members cost n * n. Members are added,
    # removed, replaced and given a JoinGroup connection or protocols only through the methods
    # below, which keep the counts.
    awaiting_join: int = 0  # members with a JoinGroup response pending
    supported_protocols: Counter[str] = field(default_factory=Counter)  # protocol -> members listing it

    def transition(self, target: GroupState) -> None:
        self.state = GROUP_STATES.check(self.state, target)

    def max_rebalance_timeout(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_joined(self) -> bool:
        return not self.pending_members and self.awaiting_join == len(self.members)

    def supports_one_of(self, names: Iterable[str]) -> bool:
        """Whether every member lists one of ``names`` (the same one)."""
        return any(self.supported_protocols[name] == len(self.members) for name in set(names))

    def add_member(self, member: MemberMetadata) -> None:
        """``member`` joins, or takes the place of the member of its id (a record listing a
        member twice: the last one is the member)."""
        replaced = self.members.get(member.member_id)
        if replaced is not None:
            self._count(replaced, -1)
        self.members[member.member_id] = member  # in the place of the one replaced
        self._count(member, 1)

    def pop_member(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count(member, -1)
        return member

    def replace_member(self, old_id: str, replacement: MemberMetadata) -> None:
        """``replacement`` takes ``old_id``'s place in join order (the leader choice and the
        assignors' order depend on it)."""
        self._count(self.members[old_id], -1)
        self.members = {(replacement.member_id if k == old_id else k): (replacement if k == old_id else v)
                        for k, v in self.members.items()}
        self._count(replacement, 1)

    def set_join_connection(self, member: MemberMetadata, connection: str | None) -> None:
        self.awaiting_join += (connection is not None) - (member.join_connection is not None)
        member.join_connection = connection

    def update_protocols(self, member: MemberMetadata, protocols: tuple[JoinGroupRequestProtocol, ...]) -> None:
        self._count(member, -1)
        member.protocols = protocols
        member.protocol_names = tuple(p.name for p in protocols)
        self._count(member, 1)

    def _count(self, member: MemberMetadata, change: int) -> None:
        self.awaiting_join += change * (member.join_connection is not None)
        for name in set(member.protocol_names):
            self.supported_protocols[name] += change

    def static_count(self) -> int:
        return sum(1 for m in self.members.values() if m.group_instance_id is not None)


def protocols_for(names: Iterable[str], subscription: ConsumerProtocolSubscription) -> tuple[JoinGroupRequestProtocol, ...]:
    """The same subscription offered under several protocol names (tests, simple clients)."""
    return tuple(JoinGroupRequestProtocol(name, subscription) for name in names)


__all__ = [
    "GROUP_STATES", "NEW_MEMBER_JOIN_TIMEOUT_MS", "ClassicGroup", "CoordinatorConfig", "GroupState", "MemberMetadata",
    "PartitionStatus", "coordinator_partition", "protocols_for",
]
