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

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from kafka_rebalance.assignors.userdata import UserDataFormat, encode_sticky_user_data
from kafka_rebalance.clients.extras import require

require("aiokafka")

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor  # noqa: E402
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment  # noqa: E402

from kafka_rebalance.clients.group import ClusterMetadata, assign_members, member_info  # noqa: E402
from kafka_rebalance.protocol.wire import DEFAULT_GENERATION, Subscription, encode_subscription  # noqa: E402


class _MemberMetadata(Protocol):
    """aiokafka's decoded member metadata (ConsumerProtocolMemberMetadata), as its leader hands
    it to ``assign``."""

    @property
    def version(self) -> int: ...

    @property
    def subscription(self) -> Sequence[str]: ...

    @property
    def user_data(self) -> bytes | None: ...


class _TopicPartition(Protocol):
    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...


class _Assignment(Protocol):
    """aiokafka's decoded assignment (ConsumerProtocolMemberAssignment), as ``on_assignment`` gets it."""

    def partitions(self) -> Iterable[_TopicPartition]: ...


def _subscription(metadata: _MemberMetadata) -> Subscription:
    return Subscription(
        topics=tuple(metadata.subscription),
        user_data=bytes(metadata.user_data) if metadata.user_data is not None else None,
        version=int(metadata.version),
    )


class _LeaderAssignor(AbstractPartitionAssignor):  # type: ignore[misc]  # aiokafka ships no types
    """The leader side shared by all three: decode members, assign with ours, encode."""

    name = ""
    version = 0

    @classmethod
    def assign(cls, cluster: ClusterMetadata, members: Mapping[str, _MemberMetadata]) -> dict[str, ConsumerProtocolMemberAssignment]:
        infos = [member_info(cls.name, member_id, _subscription(md)) for member_id, md in members.items()]
        topics = {t for info in infos for t in info.topics}
        result = assign_members(cls.name, {t: cluster.partitions_for_topic(t) for t in topics}, infos)
        return {m: ConsumerProtocolMemberAssignment(cls.version, pairs, b"") for m, pairs in result.assignments.items()}


class RangePartitionAssignor(_LeaderAssignor):
    """Kafka's RangeAssignor."""

    name = "range"

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> bytes:
        return encode_subscription(Subscription(tuple(sorted(topics))))

    @classmethod
    def on_assignment(cls, assignment: _Assignment) -> None:
        pass


class RoundRobinPartitionAssignor(RangePartitionAssignor):
    """Kafka's RoundRobinAssignor."""

    name = "roundrobin"


class StickyPartitionAssignor(_LeaderAssignor):
    """Kafka's StickyAssignor; use an instance per consumer (it remembers its assignment)."""

    name = "sticky"

    def __init__(self, user_data_format: str = UserDataFormat.JAVA):
        self.user_data_format = UserDataFormat(user_data_format)
        self.member_assignment: list[str] | None = None

    def metadata(self, topics: Iterable[str]) -> bytes:
        user_data = None
        if self.member_assignment is not None:
            user_data = encode_sticky_user_data(self.member_assignment, DEFAULT_GENERATION, self.user_data_format)
        return encode_subscription(Subscription(tuple(sorted(topics)), user_data))

    def on_assignment(self, assignment: _Assignment) -> None:
        self.member_assignment = [f"{tp.topic}-{tp.partition}" for tp in assignment.partitions()]


__all__ = ["RangePartitionAssignor", "RoundRobinPartitionAssignor", "StickyPartitionAssignor"]
