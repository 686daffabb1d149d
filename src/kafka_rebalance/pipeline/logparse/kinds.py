"""The closed vocabularies of the log story: what a parsed line is (``EventKind``), which side
and library wrote it, what a story makes of it (``MemberEventKind``, ``Cause``).

Each is a ``StrEnum``: its members are the strings the tables hold (a Parquet column stays
``string``, an event read back from Arrow compares equal to the member), and code that
dispatches on one ends in ``assert_never``, so adding a kind is a type error until every
reader handles it. ``catalogue.MESSAGES`` uses only ``EventKind`` members, and the story has a
handler for each (``group_story.GroupStory.handler_of``); tests enumerate both.
"""

from __future__ import annotations

from enum import StrEnum


class EventKind(StrEnum):
    """The kind of a parsed log line (``events.kind``), one per message family of the catalogue."""

    # broker, classic groups
    PREPARING_REBALANCE = "preparing_rebalance"
    STABILIZED = "stabilized"
    ASSIGNMENT_RECEIVED = "assignment_received"
    MEMBER_FAILED = "member_failed"
    MEMBER_LEFT = "member_left"
    MEMBER_JOINED = "member_joined"
    MEMBERS_NOT_REJOINED = "members_not_rejoined"
    GROUP_EMPTY = "group_empty"
    GROUP_DEAD = "group_dead"
    GROUP_LOADED = "group_loaded"
    GROUP_UNLOADED = "group_unloaded"
    COORDINATOR_LOADED = "coordinator_loaded"
    COORDINATOR_UNLOADED = "coordinator_unloaded"
    # the coordinator failed to write to __consumer_offsets: a group's metadata or offsets, or
    # any write to a partition (NotEnoughReplicas)
    GROUP_WRITE_FAILED = "group_write_failed"
    COORDINATOR_WRITE_FAILED = "coordinator_write_failed"
    # broker, KIP-848 consumer groups
    GROUP_EPOCH_BUMPED = "group_epoch_bumped"
    TARGET_ASSIGNMENT = "target_assignment"
    MEMBER_EPOCH = "member_epoch"
    MEMBER_FENCED = "member_fenced"
    SUBSCRIPTION_CHANGED = "subscription_changed"
    METADATA_CHANGED = "metadata_changed"
    GROUP_CONVERTED = "group_converted"
    CONVERSION_REFUSED = "conversion_refused"
    # clients
    CLIENT_JOIN_START = "client_join_start"
    CLIENT_REJOIN_REQUESTED = "client_rejoin_requested"
    CLIENT_JOINED = "client_joined"
    CLIENT_SYNCED = "client_synced"
    CLIENT_LEADER_ASSIGNED = "client_leader_assigned"
    CLIENT_ASSIGNED = "client_assigned"
    CLIENT_REVOKED = "client_revoked"
    CLIENT_LOST = "client_lost"
    CLIENT_LEAVE = "client_leave"
    CLIENT_POLL_TIMEOUT = "client_poll_timeout"
    CLIENT_HEARTBEAT_FAILED = "client_heartbeat_failed"
    CLIENT_COMMIT_FAILED = "client_commit_failed"
    CLIENT_RESET = "client_reset"
    CLIENT_JOIN_FAILED = "client_join_failed"
    CLIENT_COORDINATOR_LOST = "client_coordinator_lost"
    CLIENT_MEMBER_STATE = "client_member_state"
    CLIENT_RECONCILING = "client_reconciling"
    CLIENT_FENCED = "client_fenced"
    CLIENT_JOIN_STATE = "client_join_state"
    CLIENT_STREAMS_STATE = "client_streams_state"


# Lines about a coordinator (a ``__consumer_offsets`` partition), not a group: every group
# whose partition it is reads them (``group_story.GroupStory._moves_of``): a move, or a write refused.
COORDINATOR_KINDS: frozenset[EventKind] = frozenset((EventKind.COORDINATOR_LOADED, EventKind.COORDINATOR_UNLOADED,
                                                    EventKind.COORDINATOR_WRITE_FAILED))


class Side(StrEnum):
    """Who wrote a line: a broker (the group coordinator) or a client."""

    BROKER = "broker"
    CLIENT = "client"


class Library(StrEnum):
    """The software whose format string a line is (a shared wording is narrowed by the line's
    prefix, ``parse._context``)."""

    BROKER = "broker"
    BROKER_KIP848 = "broker-kip848"
    JAVA = "java"
    JAVA_KIP848 = "java-kip848"
    SPRING = "spring"
    KAFKA_PYTHON = "kafka-python"
    LIBRDKAFKA = "librdkafka"
    STREAMS = "streams"


class MemberEventKind(StrEnum):
    """What happened to a member (``member_events.kind``)."""

    JOINED = "joined"
    REJOINED = "rejoined"
    LEFT = "left"
    LEFT_TEMPORARILY = "left_temporarily"
    FAILED = "failed"
    FENCED = "fenced"
    POLL_TIMEOUT = "poll_timeout"
    LEAVE_REQUEST = "leave_request"
    HEARTBEAT_FAILED = "heartbeat_failed"
    COMMIT_FAILED = "commit_failed"
    GROUP_DEAD = "group_dead"
    COORDINATOR_LOADED = "coordinator_loaded"
    COORDINATOR_UNLOADED = "coordinator_unloaded"
    COORDINATOR_WRITE_FAILED = "coordinator_write_failed"
    CONVERTED = "converted"
    CONVERSION_REFUSED = "conversion_refused"


class Cause(StrEnum):
    """Why a rebalance happened (``causes.cause``, ``rebalances.cause``); ``causes.CAUSE_TITLES``
    says each in words."""

    JOINED = "joined"
    STATIC_JOINED = "static_joined"
    RESTARTED = "restarted"
    LEFT = "left"
    POLL_TIMEOUT = "poll_timeout"
    SESSION_TIMEOUT = "session_timeout"
    REBALANCE_TIMEOUT = "rebalance_timeout"
    METADATA_CHANGED = "metadata_changed"
    LEADER_REJOINED = "leader_rejoined"
    COORDINATOR_MOVED = "coordinator_moved"
    SYNC_TIMEOUT = "sync_timeout"
    STORAGE_ERROR = "storage_error"
    COORDINATOR_ERROR = "coordinator_error"
    UNKNOWN = "unknown"
    NOT_LOGGED = "not_logged"


class UnknownEventKind(ValueError):
    """An event whose kind no reader knows: a defect (the parser writes only ``EventKind``
    members), never dropped in silence."""

    def __init__(self, kind: object) -> None:
        super().__init__(f"unknown log event kind {kind!r} (known: {', '.join(EventKind)})")
        self.kind = kind


def event_kind(value: object) -> EventKind:
    """The ``EventKind`` a parsed line's ``kind`` names (a str after Arrow or JSON); anything
    else raises ``UnknownEventKind``."""
    if isinstance(value, str):
        try:
            return EventKind(value)
        except ValueError:
            pass
    raise UnknownEventKind(value)
