"""Small value types of the shared vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kafka_rebalance.model.errors import InvalidInput


class GroupProtocol(StrEnum):
    """Kafka's ``group.protocol``: which group protocol a consumer (and its group) speaks.
    CLASSIC is JoinGroup/SyncGroup with client-side strategies, CONSUMER is KIP-848's
    ConsumerGroupHeartbeat with a server-side assignor."""

    CLASSIC = "classic"
    CONSUMER = "consumer"


class ServerAssignorName(StrEnum):
    """The server-side assignors of a KIP-848 consumer group (``group.consumer.assignors``)."""

    UNIFORM = "uniform"
    RANGE = "range"


class RebalanceProtocol(StrEnum):
    """Kafka's ConsumerPartitionAssignor.RebalanceProtocol; COOPERATIVE ranks above EAGER."""

    EAGER = "EAGER"
    COOPERATIVE = "COOPERATIVE"

    @property
    def rank(self) -> int:
        return 1 if self is RebalanceProtocol.COOPERATIVE else 0


@dataclass(frozen=True, order=True, slots=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, text: str, field: str = "partition") -> TopicPartition:
        """Parse Kafka's TopicPartition.toString() form: the partition number follows the last '-'."""
        topic, sep, number = text.rpartition("-")
        if not sep or not topic or not number.isdigit() or not number.isascii():
            raise InvalidInput(field, f"{text!r} is not 'topic-partition' with a partition number")
        return cls(topic, int(number))
