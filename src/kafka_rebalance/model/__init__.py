"""The shared vocabulary: topic-partitions, subscriptions, group snapshots and their columnar form."""

from kafka_rebalance.model.columnar import UNASSIGNED, ColumnarGroup, parse_partition_strings
from kafka_rebalance.model.errors import InvalidInput
from kafka_rebalance.model.java import (
    capacities_after_puts,
    capacities_of_copies,
    capacity_after_puts,
    capacity_of_copy,
    java_hash_order,
    java_order,
    java_sort_key,
    java_sorted,
    java_spread,
    java_string_hash,
    java_string_hashes,
    java_uuid_hashes,
    partition_topic_of,
    static_first_member_order,
    topic_offsets_of,
)
from kafka_rebalance.model.snapshot import (
    DEFAULT_CONSUMER_STRATEGIES,
    DEFAULT_GENERATION,
    GroupSnapshot,
    MemberSubscription,
    TopicMetadata,
)
from kafka_rebalance.model.types import GroupProtocol, RebalanceProtocol, ServerAssignorName, TopicPartition

__all__ = [
    "DEFAULT_CONSUMER_STRATEGIES",
    "DEFAULT_GENERATION",
    "UNASSIGNED",
    "ColumnarGroup",
    "GroupProtocol",
    "GroupSnapshot",
    "InvalidInput",
    "MemberSubscription",
    "RebalanceProtocol",
    "ServerAssignorName",
    "TopicMetadata",
    "TopicPartition",
    "capacities_after_puts",
    "capacities_of_copies",
    "capacity_after_puts",
    "capacity_of_copy",
    "java_hash_order",
    "java_spread",
    "java_string_hashes",
    "java_uuid_hashes",
    "java_order",
    "java_sort_key",
    "java_sorted",
    "java_string_hash",
    "parse_partition_strings",
    "partition_topic_of",
    "static_first_member_order",
    "topic_offsets_of",
]
