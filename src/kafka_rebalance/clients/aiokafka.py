"""Drop-in EAGER assignors for aiokafka, running our assignors at the leader.

    from aiokafka import AIOKafkaConsumer
    from kafka_rebalance.clients.aiokafka import StickyPartitionAssignor
    consumer = AIOKafkaConsumer("orders", group_id="billing",
                                partition_assignment_strategy=[StickyPartitionAssignor()])

aiokafka rebalances eagerly only, so these are ``range``, ``roundrobin``, ``sticky`` (Java's
wire names) and ``load-aware`` (eager: its last assignment travels in its user data). Subscriptions are written as Java's ConsumerProtocolSubscription v3;
aiokafka's leader reads only the v0 fields of them, which is all an eager assignor uses.
``sticky`` keeps its last assignment as Java's StickyAssignorUserData (any form is read).
aiokafka does not pass the group generation to assignors, so that user data carries
generation -1 (docs/clients.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol

from kafka_rebalance.assignors import LoadAwareAssignor, LoadAwareOptions, PartitionAssignor
from kafka_rebalance.assignors.userdata import UserDataFormat, encode_sticky_user_data
from kafka_rebalance.clients.extras import require

require("aiokafka")

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor  # noqa: E402
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment  # noqa: E402
from aiokafka.structs import TopicPartition  # noqa: E402

from kafka_rebalance.clients import load  # noqa: E402
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
        return cls._assign(cluster, members)

    @classmethod
    def _assign(cls, cluster: ClusterMetadata, members: Mapping[str, _MemberMetadata], assignor: PartitionAssignor | None = None,
                loads_for: load.LoadsFor | None = None) -> dict[str, ConsumerProtocolMemberAssignment]:
        infos = [member_info(cls.name, member_id, _subscription(md)) for member_id, md in members.items()]
        topics = {t for info in infos for t in info.topics}
        partitions = {t: cluster.partitions_for_topic(t) for t in topics}
        loads = loads_for(partitions) if loads_for is not None else None
        result = assign_members(assignor or cls.name, partitions, infos, loads)
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


class LoadAwarePartitionAssignor(StickyPartitionAssignor):
    """``load-aware`` (EAGER; use an instance per consumer). ``load_source``: a callable, the
    partitions (aiokafka TopicPartitions) -> their loads, called at the leader; or None for the
    default, which measures through this consumer (``bind(consumer)``): end-offset growth since
    this leader's previous assignment plus the group's lag, read within ``measure_timeout_s``.
    ``max_count_skew`` and ``min_gain``: the assignor's options (docs/clients.md)."""

    name = "load-aware"

    def __init__(self, load_source: load.LoadSource | None = None, *, max_count_skew: int = 1, min_gain: float = 0.1,
                 measure_timeout_s: float = load.DEFAULT_MEASURE_TIMEOUT_S, user_data_format: str = UserDataFormat.JAVA):
        super().__init__(user_data_format)
        self.options = LoadAwareOptions.parse({"rebalance_protocol": "EAGER", "max_count_skew": max_count_skew, "min_gain": min_gain})
        self.load_source = load_source
        self.measure_timeout_s = measure_timeout_s
        self.latest_loads: dict[tuple[str, int], float] | None = None
        self._leader_loads = load.LeaderLoads()
        self._consumer: OffsetReader | None = None
        self._measuring: asyncio.Task[load.Offsets] | None = None

    def bind(self, consumer: OffsetReader) -> LoadAwarePartitionAssignor:
        """Measure loads through this consumer's connection (the default ``load_source``)."""
        self._consumer = consumer
        return self

    def metadata(self, topics: Iterable[str]) -> bytes:
        topics = tuple(sorted(topics))
        self._start_measuring(topics)
        return super().metadata(topics)

    def assign(self, cluster: ClusterMetadata, members: Mapping[str, _MemberMetadata]) -> dict[str, ConsumerProtocolMemberAssignment]:  # type: ignore[override]  # an instance method here
        return self._assign(cluster, members, LoadAwareAssignor(self.options), self._loads)

    def _loads(self, partitions_for_topic: Mapping[str, Collection[int] | None]) -> dict[load.Partition, float] | None:

        if self.load_source is not None:
            tps = [TopicPartition(t, p) for t, ps in sorted(partitions_for_topic.items()) for p in sorted(ps or ())]
            self.latest_loads = load.from_user_source(self.load_source, tps, lambda tp: (tp.topic, tp.partition))
            return self.latest_loads
        measuring, self._measuring = self._measuring, None
        self.latest_loads = None
        if self._consumer is None:
            load.cannot_measure("no consumer bound: call assignor.bind(consumer)")
        elif measuring is None or not measuring.done():
            if measuring is not None:
                measuring.cancel()
            load.cannot_measure(f"offsets not read within {self.measure_timeout_s:g} s")
        elif measuring.cancelled() or measuring.exception() is not None:
            error = None if measuring.cancelled() else measuring.exception()
            load.cannot_measure(load.one_line(error) if error else "cancelled")
        else:
            self.latest_loads = self._leader_loads.loads(measuring.result())
        return self.latest_loads

    def _start_measuring(self, topics: tuple[str, ...]) -> None:
        """Start reading offsets on the consumer's event loop: the assignment later runs inside
        the group coordinator's coroutine, which cannot await."""
        if self.load_source is not None or self._consumer is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._measuring is not None and not self._measuring.done():
            return  # one measurement at a time: the pending one is as fresh
        self._measuring = loop.create_task(asyncio.wait_for(_read_offsets(self._consumer, topics, self.measure_timeout_s / 2), self.measure_timeout_s))


class OffsetReader(Protocol):
    """What the default load source awaits on the bound AIOKafkaConsumer."""

    def partitions_for_topic(self, topic: str) -> set[int] | None: ...

    async def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]: ...

    async def beginning_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]: ...

    async def committed(self, partition: TopicPartition) -> int | None: ...


async def _read_offsets(consumer: OffsetReader, topics: tuple[str, ...], committed_timeout_s: float) -> load.Offsets:
    tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
    if not tps:
        raise ValueError("no partition metadata for the subscribed topics")
    def key(tp: TopicPartition) -> load.Partition:
        return (tp.topic, tp.partition)

    end = await consumer.end_offsets(tps)
    start = await consumer.beginning_offsets(tps)
    committed: dict[tuple[str, int], int | None] | None = None
    # This may wait for the rebalance under way: then the lag is unknown, growth still counts.
    with contextlib.suppress(TimeoutError):
        committed = {key(tp): await asyncio.wait_for(consumer.committed(tp), committed_timeout_s) for tp in tps}
    return load.Offsets({key(tp): int(v) for tp, v in end.items()}, committed, {key(tp): int(v) for tp, v in start.items()})


__all__ = ["LoadAwarePartitionAssignor", "RangePartitionAssignor", "RoundRobinPartitionAssignor", "StickyPartitionAssignor"]
