"""The group APIs on our coordinator: kio requests become the protocol's request dataclasses,
fed to one ``GroupCoordinatorShard`` through ``handle(event, now_ms)`` on the event loop's clock;
its outputs come back here.

Every request gets its own token as the shard's ``connection`` (the connection's id, the
correlation id and the request's index within a batch), so a response the shard sends later
(a JoinGroup held until the join phase completes, answered when another member's request or a
timer completes it) finds the request that waits for it. ``ArmTimer`` / ``CancelTimer`` become
``loop.call_at`` handles, one per timer (re-armed: replaced), that feed the timer back into
``handle``. The records the shard appends to ``__consumer_offsets`` are kept in ``records``, per
partition and in order: the log a coordinator loads.

A coordinator move (``move_coordinator`` then ``reload_from_records``, what ``serve/control.py``
drives): the requests waiting on the shard are answered with the move's error (Kafka's
``onResignation``), the shard resigns every ``__consumer_offsets`` partition, every group request
gets that error while the move lasts, and a new shard loads every partition from the records
(``PartitionLoading``, then ``PartitionLoaded``: Kafka's ``replay`` and ``onLoaded``).

The consumer protocol's bytes (a JoinGroup member's subscription, a SyncGroup assignment) are
read with ``protocol/wire.py``; a response hands back the bytes the member sent for the same
value, as Kafka passes them through untouched (so their version and user data survive).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar, assert_never

from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.classic.group import CoordinatorConfig
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.modern.consumer import coordinator_events as ce
from kafka_rebalance.protocol.modern.consumer.coordinator import ConsumerGroupConfig
from kafka_rebalance.protocol.modern.consumer.records import OffsetsTopicRecord
from kafka_rebalance.protocol.modern.shard import (
    AppendRecord,
    GroupCoordinatorShard,
    PartitionLoaded,
    PartitionLoading,
    PartitionResigned,
    ShardInput,
    ShardOutput,
    ShardTimer,
    coordinator_error,
)
from kafka_rebalance.protocol.wire import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    group_by_topic,
)

GroupResponse: TypeAlias = cl.GroupResponse | ce.Response
GroupRequest: TypeAlias = cl.GroupRequest | ce.Request
Values: TypeAlias = dict[str, object]
K = TypeVar("K")
REMEMBERED_BYTES = 4096  # distinct subscriptions (and assignments) whose bytes are kept, the newest


def partition_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def split_partition_name(name: str) -> tuple[str, int]:
    topic, _, number = name.rpartition("-")
    return topic, int(number)


class Groups:
    """One coordinator shard on an asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, topics: Mapping[str, int], classic_config: CoordinatorConfig,
                 consumer_config: ConsumerGroupConfig, log_sink: Callable[[Log], None] | None = None):
        self.loop = loop
        self.classic_config = classic_config
        self.shard = GroupCoordinatorShard(topics, classic_config, consumer_config)
        self.consumer_config = consumer_config
        self.records: dict[int, list[OffsetsTopicRecord]] = {}  # __consumer_offsets, per partition
        # While the coordinator moves: the error every group request gets, and until when (loop time).
        self.unavailable: tuple[ErrorCode, float] | None = None
        # Called after every input the shard handled (the script's "when a group ..." triggers).
        self.observers: list[Callable[[], None]] = []
        self._log_sink = log_sink
        self._waiting: dict[str, tuple[asyncio.Future[GroupResponse], GroupRequest]] = {}
        self._timers: dict[ShardTimer, asyncio.TimerHandle] = {}
        self._subscription_bytes: dict[cl.ConsumerProtocolSubscription, bytes] = {}
        self._assignment_bytes: dict[tuple[str, ...], bytes] = {}

    def now_ms(self) -> int:
        return int(self.loop.time() * 1000)

    async def ask_classic(self, token: str, request: cl.GroupRequest) -> GroupResponse:
        """Feeds a classic-protocol request to the shard and waits for its response."""
        return await self._ask(token, cl.RequestReceived(token, request))

    async def ask_consumer(self, token: str, request: ce.Request) -> GroupResponse:
        """Feeds a consumer-group request (KIP-848) to the shard and waits for its response."""
        return await self._ask(token, ce.RequestReceived(token, request))

    async def _ask(self, token: str, event: ce.RequestReceived | cl.RequestReceived) -> GroupResponse:
        if self.unavailable is not None:
            code, until = self.unavailable
            if self.loop.time() < until:
                return coordinator_error(event.request, code)
        future: asyncio.Future[GroupResponse] = self.loop.create_future()
        self._waiting[token] = (future, event.request)
        try:
            self._feed(event)
            return await future
        finally:
            self._waiting.pop(token, None)

    def feed(self, event: ShardInput, now_ms: int | None = None) -> None:
        """An input for the shard from outside a request (a fault the control drives: a request
        nobody waits for, a timer fired early); ``now_ms`` defaults to the loop's clock."""
        self._feed(event, now_ms)

    def fire_timer(self, timer: ShardTimer, now_ms: int | None = None) -> None:
        """Fires ``timer`` now (its armed handle cancelled) rather than at its deadline."""
        handle = self._timers.pop(timer, None)
        if handle is not None:
            handle.cancel()
        self._feed(timer, now_ms)

    def move_coordinator(self, code: ErrorCode, until: float) -> None:
        """The coordinator resigns: waiting requests get ``code`` (``onResignation``), its timers
        stop, and a new coordinator starts loading every ``__consumer_offsets`` partition
        (``reload_from_records`` completes the load); every group request gets ``code`` until
        ``until`` (loop time)."""
        self.unavailable = (code, until)
        for future, request in list(self._waiting.values()):
            if not future.done():
                future.set_result(coordinator_error(request, code))
        partitions = range(self.classic_config.offsets_topic_num_partitions)
        for partition in partitions:
            self._feed(PartitionResigned(partition))
        self.close()
        self.shard = GroupCoordinatorShard(self.shard.topics, self.classic_config, self.consumer_config, partitions=())
        for partition in partitions:
            self._feed(PartitionLoading(partition))

    def reload_from_records(self) -> None:
        """The new coordinator has read the partitions: it replays each one's records
        (``GroupMetadataManager.replay``, then ``onLoaded``), as it would after any move."""
        self.unavailable = None
        for partition in range(self.classic_config.offsets_topic_num_partitions):
            self._feed(PartitionLoaded(partition, tuple(self.records.get(partition, ()))))

    def topics_changed(self, topics: Mapping[str, int]) -> None:
        self._feed(ce.TopicsChanged(tuple(sorted(topics.items()))))

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _feed(self, event: ShardInput, now_ms: int | None = None) -> None:
        self._apply(self.shard.handle(event, self.now_ms() if now_ms is None else now_ms))
        self._notify()

    def _notify(self) -> None:
        for observer in list(self.observers):
            observer()

    def _apply(self, outputs: Sequence[ShardOutput]) -> None:
        for item in outputs:
            match item:
                case ce.Respond(connection=token, response=response) | cl.Respond(connection=token, response=response):
                    waiting = self._waiting.get(token)
                    if waiting is not None and not waiting[0].done():
                        waiting[0].set_result(response)
                case ArmTimer(timer=timer, deadline_ms=deadline_ms):
                    previous = self._timers.pop(timer, None)
                    if previous is not None:
                        previous.cancel()
                    self._timers[timer] = self.loop.call_at(deadline_ms / 1000, self._fire, timer)
                case CancelTimer(timer=timer):
                    handle = self._timers.pop(timer, None)
                    if handle is not None:
                        handle.cancel()
                case Log():
                    if self._log_sink is not None:
                        self._log_sink(item)
                case AppendRecord(partition=partition, record=record):
                    self.records.setdefault(partition, []).append(record)
                case _:
                    assert_never(item)

    def _fire(self, timer: ShardTimer) -> None:
        self._timers.pop(timer, None)
        self._feed(timer)

    # ------------------------------------------------------------------ consumer protocol bytes

    def subscription(self, metadata: bytes) -> cl.ConsumerProtocolSubscription:
        sub = decode_subscription(metadata)
        value = cl.ConsumerProtocolSubscription(sub.topics, sub.user_data, tuple(sub.owned_names()), sub.generation_id)
        _remember(self._subscription_bytes, value, bytes(metadata))
        return value

    def subscription_bytes(self, value: cl.ConsumerProtocolSubscription) -> bytes:
        known = self._subscription_bytes.get(value)
        if known is not None:
            return known
        owned = group_by_topic(value.owned_partitions)
        return encode_subscription(Subscription(value.topics, value.user_data, owned, value.generation_id))

    def assignment(self, data: bytes) -> tuple[str, ...]:
        names = tuple(decode_assignment(data).names())
        _remember(self._assignment_bytes, names, bytes(data))
        return names

    def assignment_bytes(self, names: tuple[str, ...]) -> bytes:
        known = self._assignment_bytes.get(names)
        if known is not None:
            return known
        return encode_assignment(Assignment(group_by_topic(names)))


def _remember(cache: dict[K, bytes], key: K, data: bytes) -> None:
    """Keeps ``data`` as the newest entry, dropping the oldest beyond ``REMEMBERED_BYTES``."""
    cache.pop(key, None)
    cache[key] = data
    if len(cache) > REMEMBERED_BYTES:
        del cache[next(iter(cache))]


def attr(entity: object, name: str, default: Any = None) -> Any:
    """A request field that only some versions of its schema have."""
    return getattr(entity, name, default)


def committed_partitions(shard: GroupCoordinatorShard, group_id: str) -> list[str]:
    """The partitions a group has committed offsets for (an OffsetFetch for all of them)."""
    consumer = shard.consumer_groups.get(group_id)
    if consumer is not None:
        return list(consumer.offsets)
    classic = shard.classic.group(group_id)
    return list(classic.offsets) if classic is not None else []
