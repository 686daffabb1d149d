"""The coordinator's log records as typed events: what happened, not how a broker prints it.

``protocol.logformat`` has one formatter per Kafka log format and renders each record kind
below; the log parsers read the same kinds back. The list of record kinds exists once, here:
``RECORD_TYPES`` (and ``KIND`` on each class, the name the parsers and the pipeline use).

Every record carries the virtual time it happened (``time_ms``) and its ``group_id``; the
broker id and ``__consumer_offsets`` partition are properties of the coordinator that wrote the
line, so the formatter takes them as context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    member_id: str
    partitions: tuple[str, ...]  # TopicPartition.toString() ("t0-1")


@dataclass(frozen=True, slots=True)
class PreparingRebalance:
    """``Preparing to rebalance group G in state S with old generation N (reason: R)``."""

    KIND: ClassVar[str] = "preparing_rebalance"
    time_ms: int
    group_id: str
    state: str  # the group state the rebalance started from, as Kafka prints it ("Stable")
    old_generation: int
    reason: str


@dataclass(frozen=True, slots=True)
class Stabilized:
    """``Stabilized group G generation N with M members`` (the join phase completed)."""

    KIND: ClassVar[str] = "stabilized"
    time_ms: int
    group_id: str
    generation: int
    member_ids: tuple[str, ...]  # in join order
    leader: str
    protocol_name: str | None


@dataclass(frozen=True, slots=True)
class AssignmentReceived:
    """``Assignment received from leader L for group G for generation N ...`` (group Stable)."""

    KIND: ClassVar[str] = "assignment_received"
    time_ms: int
    group_id: str
    generation: int
    leader: str
    static_members: int
    assignment: tuple[MemberAssignment, ...]  # every member of the generation, in join order


@dataclass(frozen=True, slots=True)
class MemberFailed:
    """``Member M in group G has failed, removing it from the group`` (session or join/sync expiry)."""

    KIND: ClassVar[str] = "member_failed"
    time_ms: int
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class MemberLeft:
    """An explicit LeaveGroup (only the 3.7+/4.x coordinator logs it at INFO)."""

    KIND: ClassVar[str] = "member_left"
    time_ms: int
    group_id: str
    member_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class GroupEmpty:
    """``Group G with generation N is now empty``."""

    KIND: ClassVar[str] = "group_empty"
    time_ms: int
    group_id: str
    generation: int


LogRecord = PreparingRebalance | Stabilized | AssignmentReceived | MemberFailed | MemberLeft | GroupEmpty

RECORD_TYPES: tuple[type[LogRecord], ...] = (
    PreparingRebalance, Stabilized, AssignmentReceived, MemberFailed, MemberLeft, GroupEmpty,
)
RECORD_KINDS: tuple[str, ...] = tuple(t.KIND for t in RECORD_TYPES)
