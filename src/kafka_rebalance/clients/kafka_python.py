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

import threading
import time
from collections import namedtuple
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from kafka_rebalance.assignors import LoadAwareAssignor, LoadAwareOptions, PartitionAssignor
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
from kafka_rebalance.clients.load import (  # noqa: E402
    DEFAULT_MEASURE_TIMEOUT_S,
    LeaderLoads,
    LoadsFor,
    LoadSource,
    Offsets,
    Partition,
    cannot_measure,
    from_user_source,
    one_line,
)
from kafka_rebalance.model import RebalanceProtocol as OurProtocol  # noqa: E402
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
    def _assign(cls, cluster: ClusterMetadata, members: Iterable[_GroupMember], assignor: PartitionAssignor | None = None,
                loads_for: LoadsFor | None = None) -> tuple[dict[str, ConsumerProtocolAssignment], LeaderResult]:
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
        loads = loads_for(partitions) if loads_for is not None else None
        result = assign_members(assignor or cls.name, partitions, infos, loads)
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


class LoadAwarePartitionAssignor(_LeaderAssignor):
    """``load-aware``: sticky's counts, then the heaviest member's load lowered (docs/clients.md).

    ``load_source``: a callable, the partitions (kafka-python TopicPartitions) -> their loads
    (a mapping or a list in the same order), called at the leader; or None for the default,
    which measures at the leader through this consumer (``bind(consumer)`` after building it):
    end-offset growth since this leader's previous assignment plus the group's lag, read within
    ``measure_timeout_s``. ``rebalance_protocol``: "cooperative" (owned partitions travel in the
    subscription, as cooperative-sticky) or "eager" (the last assignment travels in the user
    data, as sticky). ``max_count_skew`` and ``min_gain``: the assignor's options."""

    name = "load-aware"
    DEFAULT_GENERATION_ID = DEFAULT_GENERATION

    def __init__(self, load_source: LoadSource | None = None, *, rebalance_protocol: str = "cooperative", max_count_skew: int = 1,
                 min_gain: float = 0.1, measure_timeout_s: float = DEFAULT_MEASURE_TIMEOUT_S, rack: str | None = None):
        self.options = LoadAwareOptions.parse({"rebalance_protocol": rebalance_protocol, "max_count_skew": max_count_skew, "min_gain": min_gain})
        self.version = 1 if self.options.rebalance_protocol is OurProtocol.COOPERATIVE else 0
        self.load_source = load_source
        self.measure_timeout_s = measure_timeout_s
        self.rack = rack
        self.member_assignment: list[TopicPartition] | None = None
        self.generation = DEFAULT_GENERATION
        self.latest_loads: dict[tuple[str, int], float] | None = None  # what the last assignment used
        self._leader_loads = LeaderLoads()
        self._consumer: OffsetReader | None = None
        self._topics: tuple[str, ...] = ()
        # (when read, end offsets, log start offsets): read at bind and at each JoinGroup
        self._end_offsets: tuple[float, dict[tuple[str, int], int], dict[tuple[str, int], int]] | None = None
        self._end_error: str | None = None
        self._committed: dict[tuple[str, int], int | None] | None = None  # read when the group was stable

    def bind(self, consumer: OffsetReader) -> LoadAwarePartitionAssignor:
        """Measure loads through this consumer's connection (the default ``load_source``). Call
        it before the first ``poll``: it reads the group's committed offsets and the end offsets
        now (bounded by ``measure_timeout_s``), so the first assignment has them."""
        self._consumer = consumer
        topics = tuple(sorted(consumer.subscription() or ()))
        if self.load_source is None and topics:
            timeout_ms = int(self.measure_timeout_s * 1000)
            for read, keep in ((_read_committed, self._keep_committed), (_read_end_offsets, self._keep_end_offsets)):
                done: Future[Any] = Future()
                try:
                    done.set_result(read(consumer, topics, timeout_ms))
                except Exception as exc:  # the first assignment logs what is missing
                    done.set_exception(exc)
                keep(done)
        return self

    def _keep_committed(self, done: Future[dict[Partition, int | None]]) -> None:
        if done.exception() is None:
            self._committed = done.result()

    def _keep_end_offsets(self, done: Future[tuple[dict[Partition, int], dict[Partition, int]]]) -> None:
        error = done.exception()
        if error is None:
            self._end_offsets = (time.monotonic(), *done.result())
        else:
            self._end_error = one_line(error)

    def supported_protocols(self) -> list[RebalanceProtocol]:
        if self.options.rebalance_protocol is OurProtocol.COOPERATIVE:
            return [RebalanceProtocol.COOPERATIVE]
        return [RebalanceProtocol.EAGER]

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolSubscription:
        topics = tuple(sorted(topics))
        self._start_measuring(topics)
        if self.options.rebalance_protocol is OurProtocol.COOPERATIVE:
            owned = _by_topic(self.member_assignment or ())
            user_data = encode_cooperative_user_data(self.generation)
            return _to_kafka_python(Subscription(tuple(sorted(topics)), user_data, owned, self.generation, self.rack))
        names = [f"{tp.topic}-{tp.partition}" for tp in self.member_assignment or ()]
        sticky_data = encode_sticky_user_data(names, self.generation) if self.member_assignment is not None else None
        return _to_kafka_python(Subscription(tuple(sorted(topics)), sticky_data, generation_id=self.generation, rack_id=self.rack))

    def on_assignment(self, assignment: ConsumerProtocolAssignment, generation: int) -> None:
        self.member_assignment = assignment.partitions()
        self.generation = generation
        self._refresh_committed(self._topics)

    def assign(self, cluster: ClusterMetadata, members: Iterable[_GroupMember]) -> dict[str, ConsumerProtocolAssignment]:
        assignments, self.latest_result = self._assign(cluster, members, LoadAwareAssignor(self.options), self._loads)
        return assignments

    def _loads(self, partitions_for_topic: Mapping[str, Collection[int] | None]) -> dict[Partition, float] | None:
        tps = [TopicPartition(t, p) for t, ps in sorted(partitions_for_topic.items()) for p in sorted(ps or ())]
        if self.load_source is not None:
            self.latest_loads = from_user_source(self.load_source, tps, lambda tp: (tp.topic, tp.partition))
            return self.latest_loads
        self.latest_loads = None
        measured = self._end_offsets
        if self._consumer is None:
            cannot_measure("no consumer bound: call assignor.bind(consumer)")
        elif measured is None or time.monotonic() - measured[0] > OFFSETS_MAX_AGE_S:
            cannot_measure(self._end_error or f"end offsets not read within {self.measure_timeout_s:g} s")
        else:
            _, end, start = measured
            self.latest_loads = self._leader_loads.loads(Offsets(end, self._committed, start))
        return self.latest_loads

    def _start_measuring(self, topics: tuple[str, ...]) -> None:
        """Read end offsets in a worker thread (this runs on kafka-python's network thread, and
        the assignment later runs there too, where nothing can wait for a reply)."""
        self._topics = topics
        if self.load_source is not None or self._consumer is None:
            return
        self._end_error = None
        _in_thread(_read_end_offsets, self._consumer, topics, int(self.measure_timeout_s * 1000)).add_done_callback(self._keep_end_offsets)

    def _refresh_committed(self, topics: tuple[str, ...]) -> None:
        """Read the group's committed offsets in a worker thread, when the group is stable (at
        bind, after each assignment): kafka-python cannot fetch them while a rebalance is on."""
        if self.load_source is not None or self._consumer is None or not topics:
            return
        _in_thread(_read_committed, self._consumer, topics, int(self.measure_timeout_s * 1000)).add_done_callback(self._keep_committed)


class OffsetReader(Protocol):
    """What the default load source calls on the bound KafkaConsumer (public, thread-safe)."""

    def subscription(self) -> set[str] | None: ...

    def partitions_for_topic(self, topic: str) -> set[int] | None: ...

    def end_offsets(self, partitions: list[TopicPartition], timeout_ms: int | None = None) -> dict[TopicPartition, int]: ...

    def beginning_offsets(self, partitions: list[TopicPartition], timeout_ms: int | None = None) -> dict[TopicPartition, int]: ...

    def committed(self, partition: TopicPartition, timeout_ms: int | None = None) -> int | None: ...


_T = TypeVar("_T")

# The newest end offsets read are used when the JoinGroup's own read has not come back yet (the
# assignment cannot wait for it), if they are at most this old.
OFFSETS_MAX_AGE_S = 30.0


def _in_thread(read: Callable[..., _T], *args: Any) -> Future[_T]:
    future: Future[_T] = Future()

    def run() -> None:
        try:
            future.set_result(read(*args))
        except Exception as exc:  # any failure: the leader logs it and uses equal loads
            future.set_exception(exc)

    threading.Thread(target=run, name="load-aware-offsets", daemon=True).start()
    return future


def _partitions(consumer: OffsetReader, topics: tuple[str, ...]) -> list[TopicPartition]:
    tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
    if not tps:
        raise ValueError("no partition metadata for the subscribed topics")
    return tps


def _read_end_offsets(consumer: OffsetReader, topics: tuple[str, ...], timeout_ms: int) -> tuple[dict[Partition, int], dict[Partition, int]]:
    """End and log start offsets, through the consumer's public (thread-safe) calls."""
    deadline = time.monotonic() + timeout_ms / 1000
    tps = _partitions(consumer, topics)
    end = consumer.end_offsets(tps, timeout_ms=timeout_ms)
    start = consumer.beginning_offsets(tps, timeout_ms=max(1, int((deadline - time.monotonic()) * 1000)))
    return {(tp.topic, tp.partition): int(v) for tp, v in end.items()}, {(tp.topic, tp.partition): int(v) for tp, v in start.items()}


def _read_committed(consumer: OffsetReader, topics: tuple[str, ...], timeout_ms: int) -> dict[Partition, int | None]:
    deadline = time.monotonic() + timeout_ms / 1000
    out: dict[tuple[str, int], int | None] = {}
    for tp in _partitions(consumer, topics):
        value = consumer.committed(tp, timeout_ms=max(1, int((deadline - time.monotonic()) * 1000)))
        out[(tp.topic, tp.partition)] = None if value is None else int(value)
    return out


__all__ = [
    "CooperativeStickyAssignor",
    "CooperativeStickyPartitionAssignor",
    "LoadAwarePartitionAssignor",
    "RangePartitionAssignor",
    "RoundRobinPartitionAssignor",
    "StickyPartitionAssignor",
]
