"""A ConsumerGroupHeartbeat checked on its own, before any group is looked up (Kafka 4.1's
``GroupCoordinatorService.consumerGroupHeartbeat``: ``throwIfConsumerGroupHeartbeatRequestIsInvalid``
runs before the request reaches the group's shard, so an invalid request never creates, finds
or changes a group), and the error Kafka answers a request with (its ``ApiException``s)."""

from __future__ import annotations

from collections.abc import Sequence

from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION,
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
)


class ProtocolError(Exception):
    """An error Kafka answers a request with (its ``ApiException``s)."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _empty(value: str | None) -> bool:
    """Kafka's ``throwIfEmptyString`` test: set, and blank once trimmed."""
    return value is not None and not value.strip()


def validate_heartbeat(request: ConsumerGroupHeartbeatRequest, assignors: Sequence[str]) -> None:
    """Kafka 4.1's ``throwIfConsumerGroupHeartbeatRequestIsInvalid`` (INVALID_REQUEST with its
    messages) and the server assignor check (UNSUPPORTED_ASSIGNOR; ``assignors``: the broker's
    ``group.consumer.assignors``). From version 1 (KIP-1082) the consumer names itself, so every
    request carries a member id."""
    epoch = request.member_epoch
    names_itself = (request.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or epoch > 0
                    or epoch == LEAVE_GROUP_MEMBER_EPOCH)
    if names_itself and not request.member_id.strip():
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if _empty(request.group_id):
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if _empty(request.instance_id):
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    if _empty(request.rack_id):
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if epoch == JOIN_GROUP_MEMBER_EPOCH:
        if request.rebalance_timeout_ms == -1:
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        # An empty list of names is a member subscribed to nothing, still in the group.
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex "
                                "must be non-null when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise ProtocolError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                            f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
                            f"{', '.join(assignors)}.")


__all__ = ["ProtocolError", "validate_heartbeat"]
