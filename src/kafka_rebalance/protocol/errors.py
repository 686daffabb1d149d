"""Kafka's protocol error codes (``org.apache.kafka.common.protocol.Errors``), shared by every
machine of the protocol layer, and the exception an illegal state transition raises.

Append-only: other layers and branches name these members.
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """The numeric codes are Kafka's (Errors.java); only the ones the group protocols use."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    REQUEST_TIMED_OUT = 7
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    UNKNOWN_SUBSCRIPTION_ID = 117


class IllegalStateTransition(RuntimeError):
    """A transition the state machine's table does not allow (a bug in the caller or in us)."""
