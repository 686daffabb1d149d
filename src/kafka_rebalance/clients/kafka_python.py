"""Drop-in partition assignors for kafka-python (3.x), running our assignors at the leader.

    from kafka import KafkaConsumer
    from kafka_rebalance.clients.kafka_python import CooperativeStickyPartitionAssignor
    consumer = KafkaConsumer("orders", group_id="billing",
                             partition_assignment_strategy=[CooperativeStickyPartitionAssignor])

Names on the wire are Java's (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``), so
one group can mix these with Java consumers, librdkafka and kafka-python's own assignors.
``supported_protocols()`` is kafka-python's (cooperative-sticky: COOPERATIVE only), because
kafka-python refuses to mix EAGER and COOPERATIVE assignors in one consumer.

Where kafka-python and Java differ, these follow Java (docs/clients.md):
- subscriptions are written as ConsumerProtocolSubscription v3 (owned partitions, generation,
  rack), not v0/v1, so a leader can tell stale claims from current ones;
- a topic a member gets no partitions of is left out of its assignment (kafka-python's range
  lists it with no partitions);
- sticky results are Kafka's (balance first, then stickiness; older-generation owners take
  back what must move), computed on arrays.
Eager ``sticky`` user data is written in kafka-python's version-prefixed form by default, so a
rolling upgrade from kafka-python's own StickyPartitionAssignor keeps its stickiness (its
leaders read only that form); pass ``user_data_format="java"`` in a group shared with Java or
librdkafka sticky consumers. Both forms are read.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from kafka_rebalance.assignors.userdata import (
    UserDataFormat,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from kafka_rebalance.clients.extras import require

require("kafka", "kafka-python")

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription  # noqa: E402
from kafka.structs import TopicPartition  # noqa: E402

from kafka_rebalance.clients.group import (  # noqa: E402
    ClusterMetadata,
    LeaderResult,
    MemberInfo,
    PartitionMovements,
    assign_members,
    member_info,
)
from kafka_rebalance.protocol.wire import (  # noqa: E402
    DEFAULT_GENERATION,
    Subscription,
    decode_subscription,
    encode_subscription,
)

MemberMetadata = namedtuple("MemberMetadata", ["subscription", "partitions", "generation"])


class _EncodesItself(Protocol):
    def encode(self) -> bytes: ...


class _DecodedSubscription(Protocol):
    """kafka-python's decoded member metadata; the fields of later versions (owned partitions,
    generation, rack) are read with ``getattr`` as older objects lack them."""

    @property
    def topics(self) -> Sequence[str]: ...

    @property
    def user_data(self) -> bytes | bytearray | _EncodesItself | None: ...


class _GroupMember(Protocol):
    """A member as kafka-python hands it to the leader's ``assign``."""

    @property
    def member_id(self) -> str: ...

    @property
    def metadata(self) -> bytes | bytearray | memoryview | _DecodedSubscription: ...


def _subscription(metadata: bytes | bytearray | memoryview | _DecodedSubscription) -> Subscription:
    """A member's metadata as kafka-python hands it to the leader (decoded object or bytes)."""
    if isinstance(metadata, bytes | bytearray | memoryview):
        return decode_subscription(bytes(metadata))
    user_data = metadata.user_data
    if user_data is not None and not isinstance(user_data, bytes | bytearray):
        user_data = user_data.encode()  # kafka-python's StickyAssignorUserData object
    owned = tuple(
        (tp[0], tuple(tp[1])) if isinstance(tp, tuple) else (tp.topic, tuple(tp.partitions))
        for tp in (getattr(metadata, "owned_partitions", None) or ())
    )
    generation = getattr(metadata, "generation_id", None)
    return Subscription(
        topics=tuple(metadata.topics),
        user_data=bytes(user_data) if user_data is not None else None,
        owned_partitions=owned,
        generation_id=DEFAULT_GENERATION if generation is None else int(generation),
        rack_id=getattr(metadata, "rack_id", None),
        version=int(getattr(metadata, "version", 0) or 0),
    )


def _sticky_info_from_object(strategy: str, member: _GroupMember) -> MemberInfo | None:
    """The eager sticky assignor's view of a member whose metadata is kafka-python's decoded
    subscription carrying its ``StickyAssignorUserData`` object: read the object's fields
    instead of encoding it to bytes and decoding those (what ``member_info`` would read)."""
    if strategy != "sticky":
        return None
    metadata = member.metadata
    user_data = getattr(metadata, "user_data", None)
    previous = getattr(user_data, "previous_assignment", None)
    if previous is None or isinstance(metadata, bytes | bytearray | memoryview):
        return None
    owned: dict[str, list[int]] = {}
    entry: Any
    for entry in previous:
        topic, parts = (entry[0], entry[1]) if isinstance(entry, tuple) else (entry.topic, entry.partitions)
        owned.setdefault(topic, []).extend(parts)
    version = int(getattr(user_data, "version", 1) or 0)
    generation = int(getattr(user_data, "generation", DEFAULT_GENERATION)) if version >= 1 else DEFAULT_GENERATION
    return MemberInfo(member.member_id, tuple(metadata.topics), tuple((t, tuple(ps)) for t, ps in owned.items()),
                      generation, getattr(member, "group_instance_id", None), getattr(metadata, "rack_id", None))


def _to_kafka_python(sub: Subscription) -> ConsumerProtocolSubscription:
    """Our bytes, read back by kafka-python: what goes on the wire is exactly our encoding."""
    return ConsumerProtocolSubscription.decode(encode_subscription(sub))


def _by_topic(partitions: Iterable[TopicPartition]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    grouped: dict[str, set[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, set()).add(tp.partition)
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(grouped.items()))


class _LeaderAssignor(AbstractPartitionAssignor):  # type: ignore[misc]  # kafka-python ships no types
    """The leader side shared by all four: decode members, assign with ours, encode."""

    name = ""
    version = 0  # of the assignments written, as kafka-python's own classes write them
    latest_result: LeaderResult | None = None  # the last assignment this consumer made as leader

    @property
    def _latest_partition_movements(self) -> PartitionMovements | None:
        """kafka-python's attribute of the same name (its tests check ``are_sticky()``)."""
        return self.latest_result.movements if self.latest_result is not None else None

    @classmethod
    def _assign(cls, cluster: ClusterMetadata, members: Iterable[_GroupMember]) -> tuple[dict[str, ConsumerProtocolAssignment], LeaderResult]:
        infos: list[MemberInfo] = []
        topics: set[str] = set()
        for member in members:
            info = _sticky_info_from_object(cls.name, member)
            if info is None:
                sub = _subscription(member.metadata)
                info = member_info(cls.name, member.member_id, sub, getattr(member, "group_instance_id", None))
            infos.append(info)
            topics.update(info.topics)
        partitions = {t: cluster.partitions_for_topic(t) for t in topics}
        result = assign_members(cls.name, partitions, infos)
        out = {member_id: ConsumerProtocolAssignment(cls.version, pairs, b"") for member_id, pairs in result.assignments.items()}
        return out, result


class RangePartitionAssignor(_LeaderAssignor):
    """Kafka's RangeAssignor (static members first, then member ids, per topic)."""

    name = "range"

    @classmethod
    def assign(cls, cluster: ClusterMetadata, members: Iterable[_GroupMember]) -> dict[str, ConsumerProtocolAssignment]:
        return cls._assign(cluster, members)[0]

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolSubscription:
        return _to_kafka_python(Subscription(tuple(sorted(topics))))

    @classmethod
    def on_assignment(cls, assignment: ConsumerProtocolAssignment, generation: int | None = None) -> None:
        pass


class RoundRobinPartitionAssignor(RangePartitionAssignor):
    """Kafka's RoundRobinAssignor."""

    name = "roundrobin"


class StickyPartitionAssignor(_LeaderAssignor):
    """Kafka's StickyAssignor (EAGER): the last assignment and its generation travel in the
    subscription's user data."""

    name = "sticky"
    DEFAULT_GENERATION_ID = DEFAULT_GENERATION

    def __init__(self, user_data_format: str = UserDataFormat.KAFKA_PYTHON, rack: str | None = None):
        self.user_data_format = UserDataFormat(user_data_format)
        self.rack = rack
        self.member_assignment: list[TopicPartition] | None = None
        self.generation = DEFAULT_GENERATION

    def assign(self, cluster: ClusterMetadata, members: Iterable[_GroupMember]) -> dict[str, ConsumerProtocolAssignment]:
        assignments, self.latest_result = self._assign(cluster, members)
        return assignments

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolSubscription:
        return self._metadata(topics, self.member_assignment, self.generation, self.user_data_format, self.rack)

    @classmethod
    def _metadata(
        cls,
        topics: Iterable[str],
        member_assignment_partitions: Iterable[TopicPartition] | None,
        generation: int = -1,
        user_data_format: str = UserDataFormat.KAFKA_PYTHON,
        rack: str | None = None,
    ) -> ConsumerProtocolSubscription:
        """kafka-python's helper of the same name (its tests build members with it)."""
        user_data = None
        if member_assignment_partitions is not None:
            names = [f"{tp.topic}-{tp.partition}" for tp in member_assignment_partitions]
            user_data = encode_sticky_user_data(names, generation, UserDataFormat(user_data_format))
        # Java's consumer sends its generation in every v2+ subscription; EAGER members own
        # nothing when they rejoin (they revoked everything), so owned partitions stay empty.
        return _to_kafka_python(Subscription(tuple(sorted(topics)), user_data, generation_id=generation, rack_id=rack))

    @classmethod
    def parse_member_metadata(cls, metadata: bytes | bytearray | memoryview | _DecodedSubscription) -> MemberMetadata:
        info = member_info(cls.name, "", _subscription(metadata))
        return MemberMetadata(list(info.topics), [TopicPartition(t, p) for t, ps in info.owned for p in ps], info.generation)

    def on_assignment(self, assignment: ConsumerProtocolAssignment, generation: int) -> None:
        self.member_assignment = assignment.partitions()
        self.generation = generation


class CooperativeStickyPartitionAssignor(StickyPartitionAssignor):
    """Kafka's CooperativeStickyAssignor: owned partitions and generation travel in the
    subscription (v3); a partition moving between members is withheld for one rebalance."""

    name = "cooperative-sticky"
    version = 1

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.COOPERATIVE]

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolSubscription:
        owned = _by_topic(self.member_assignment or ())
        user_data = encode_cooperative_user_data(self.generation)
        return _to_kafka_python(Subscription(tuple(sorted(topics)), user_data, owned, self.generation, self.rack))


#: kafka-python's name for it, so either spelling drops in.
CooperativeStickyAssignor = CooperativeStickyPartitionAssignor

__all__ = [
    "CooperativeStickyAssignor",
    "CooperativeStickyPartitionAssignor",
    "RangePartitionAssignor",
    "RoundRobinPartitionAssignor",
    "StickyPartitionAssignor",
]
