"""Drop-in EAGER assignors for aiokafka, running our assignors at the leader.

    from aiokafka import AIOKafkaConsumer
    from kafka_rebalance.clients.aiokafka import StickyPartitionAssignor
    consumer = AIOKafkaConsumer("orders", group_id="billing",
                                partition_assignment_strategy=[StickyPartitionAssignor()])

aiokafka rebalances eagerly only, so these are ``range``, ``roundrobin`` and ``sticky``
(Java's wire names). Subscriptions are written as Java's ConsumerProtocolSubscription v3;
aiokafka's leader reads only the v0 fields of them, which is all an eager assignor uses.
``sticky`` keeps its last assignment as Java's StickyAssignorUserData (any form is read).
aiokafka does not pass the group generation to assignors, so that user data carries
generation -1 (docs/clients.md).
"""

from __future__ import annotations

from kafka_rebalance.assignors.userdata import UserDataFormat, encode_sticky_user_data
from kafka_rebalance.clients.extras import require

require("aiokafka")

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor  # noqa: E402
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment  # noqa: E402

from kafka_rebalance.clients.group import assign_members, member_info  # noqa: E402
from kafka_rebalance.protocol.wire import DEFAULT_GENERATION, Subscription, encode_subscription  # noqa: E402


def _subscription(metadata) -> Subscription:
    return Subscription(
        topics=tuple(metadata.subscription),
        user_data=bytes(metadata.user_data) if metadata.user_data is not None else None,
        version=int(metadata.version),
    )


class RangePartitionAssignor(AbstractPartitionAssignor):
    """Kafka's RangeAssignor."""

    name = "range"
    version = 0

    @classmethod
    def assign(cls, cluster, members):
        infos = [member_info(cls.name, member_id, _subscription(md)) for member_id, md in members.items()]
        topics = {t for info in infos for t in info.topics}
        result = assign_members(cls.name, {t: cluster.partitions_for_topic(t) for t in topics}, infos)
        return {m: ConsumerProtocolMemberAssignment(cls.version, pairs, b"") for m, pairs in result.assignments.items()}

    @classmethod
    def metadata(cls, topics) -> bytes:
        return encode_subscription(Subscription(tuple(sorted(topics))))

    @classmethod
    def on_assignment(cls, assignment) -> None:
        pass


class RoundRobinPartitionAssignor(RangePartitionAssignor):
    """Kafka's RoundRobinAssignor."""

    name = "roundrobin"


class StickyPartitionAssignor(RangePartitionAssignor):
    """Kafka's StickyAssignor; use an instance per consumer (it remembers its assignment)."""

    name = "sticky"

    def __init__(self, user_data_format: str = UserDataFormat.JAVA):
        self.user_data_format = UserDataFormat(user_data_format)
        self.member_assignment: list[str] | None = None

    def metadata(self, topics) -> bytes:  # type: ignore[override]
        user_data = None
        if self.member_assignment is not None:
            user_data = encode_sticky_user_data(self.member_assignment, DEFAULT_GENERATION, self.user_data_format)
        return encode_subscription(Subscription(tuple(sorted(topics)), user_data))

    def on_assignment(self, assignment) -> None:  # type: ignore[override]
        self.member_assignment = [f"{tp.topic}-{tp.partition}" for tp in assignment.partitions()]


__all__ = ["RangePartitionAssignor", "RoundRobinPartitionAssignor", "StickyPartitionAssignor"]
