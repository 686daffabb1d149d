"""Kafka's consumer-protocol bytes: the JoinGroup subscription and the SyncGroup assignment.

These are the bytes every Kafka client puts in a group's member metadata and assignment, so a
group can mix Java consumers, librdkafka, kafka-python, aiokafka and our assignors. Layouts as
Apache Kafka's ConsumerProtocolSubscription.json and ConsumerProtocolAssignment.json (versions
0-3, no flexible versions), each prefixed by an int16 version:

    Subscription  v0: topics [string], user_data nullable bytes
                  v1: + owned_partitions [{topic string, partitions [int32]}]
                  v2: + generation_id int32
                  v3: + rack_id nullable string
    Assignment  v0-3: assigned_partitions [{topic, partitions [int32]}], user_data nullable bytes

As Kafka's ConsumerProtocol does, a version above the highest known one is read with the
highest known layout (newer versions only append fields), and the encoder writes the highest.
Partitions are kept as (topic, [partition numbers]) pairs: numbers need not be 0..n-1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_rebalance.model import InvalidInput, java_sort_key

HIGHEST_VERSION = 3
DEFAULT_GENERATION = -1

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = DEFAULT_GENERATION
    rack_id: str | None = None
    version: int = HIGHEST_VERSION

    def owned_names(self) -> list[str]:
        return [f"{topic}-{p}" for topic, numbers in self.owned_partitions for p in numbers]


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: TopicPartitions = ()
    user_data: bytes | None = None
    version: int = HIGHEST_VERSION

    def names(self) -> list[str]:
        return [f"{topic}-{p}" for topic, numbers in self.partitions for p in numbers]


@dataclass
class _Reader:
    data: bytes
    offset: int = 0
    what: str = field(default="consumer protocol")

    def take(self, fmt: str) -> tuple[Any, ...]:
        try:
            values = struct.unpack_from(fmt, self.data, self.offset)
        except struct.error:
            raise InvalidInput(self.what, f"truncated at byte {self.offset}") from None
        self.offset += struct.calcsize(fmt)
        return values

    def int16(self) -> int:
        return int(self.take(">h")[0])

    def int32(self) -> int:
        return int(self.take(">i")[0])

    def string(self, nullable: bool = False) -> str | None:
        length = self.int16()
        if length < 0:
            if nullable:
                return None
            raise InvalidInput(self.what, f"null string at byte {self.offset - 2}")
        raw = self.data[self.offset : self.offset + length]
        if len(raw) != length:
            raise InvalidInput(self.what, f"truncated string at byte {self.offset}")
        self.offset += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(self.what, f"string at byte {self.offset - length} is not UTF-8") from None

    def name(self) -> str:
        """A non-nullable string (``string`` raises on null)."""
        value = self.string()
        assert value is not None
        return value

    def bytes_(self) -> bytes | None:
        length = self.int32()
        if length < 0:
            return None
        raw = self.data[self.offset : self.offset + length]
        if len(raw) != length:
            raise InvalidInput(self.what, f"truncated bytes at byte {self.offset}")
        self.offset += length
        return bytes(raw)

    def count(self) -> int:
        n = self.int32()
        if n < 0:
            return 0  # a null array reads as empty
        if n > len(self.data) - self.offset:  # every element takes at least one byte
            raise InvalidInput(self.what, f"array of {n} at byte {self.offset - 4} exceeds the data")
        return n

    def int32_array(self) -> tuple[int, ...]:
        n = self.count()
        return self.take(f">{n}i") if n else ()

    def topic_partitions(self) -> TopicPartitions:
        return tuple((self.name(), self.int32_array()) for _ in range(self.count()))

    def done(self) -> None:
        if self.offset != len(self.data):
            raise InvalidInput(self.what, f"{len(self.data) - self.offset} unexpected trailing bytes")


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def _bytes(value: bytes | None) -> bytes:
    if value is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(value)) + bytes(value)


def _int32_array(values: Sequence[int]) -> bytes:
    return struct.pack(f">i{len(values)}i", len(values), *values)


def _topic_partitions(pairs: Iterable[tuple[str, Sequence[int]]]) -> bytes:
    pairs = list(pairs)
    return struct.pack(">i", len(pairs)) + b"".join(_string(t) + _int32_array(list(ps)) for t, ps in pairs)


def group_by_topic(names: Iterable[str]) -> TopicPartitions:
    """'topic-partition' strings -> ((topic, (partitions...)), ...), topics and numbers sorted."""
    by_topic: dict[str, list[int]] = {}
    for name in names:
        topic, _, number = name.rpartition("-")
        if not topic or not number.isdigit():
            raise InvalidInput("partition", f"{name!r} is not 'topic-partition'")
        by_topic.setdefault(topic, []).append(int(number))
    return tuple((t, tuple(sorted(by_topic[t]))) for t in sorted(by_topic))


def _sorted_pairs(pairs: TopicPartitions) -> list[tuple[str, list[int]]]:
    merged: dict[str, set[int]] = {}
    for topic, numbers in pairs:
        merged.setdefault(topic, set()).update(numbers)
    return [(t, sorted(merged[t])) for t in sorted(merged, key=java_sort_key) if merged[t]]


def encode_subscription(sub: Subscription) -> bytes:
    """As Kafka's ConsumerProtocol.serializeSubscription: topics sorted, owned partitions grouped
    by topic and sorted, so equal subscriptions give equal bytes."""
    version = sub.version
    if not 0 <= version <= HIGHEST_VERSION:
        raise InvalidInput("subscription.version", f"cannot write version {version} (0-{HIGHEST_VERSION})")
    topics = sorted(set(sub.topics), key=java_sort_key)
    out = [struct.pack(">h", version), struct.pack(">i", len(topics)), *map(_string, topics), _bytes(sub.user_data)]
    if version >= 1:
        out.append(_topic_partitions(_sorted_pairs(sub.owned_partitions)))
    if version >= 2:
        out.append(struct.pack(">i", sub.generation_id))
    if version >= 3:
        out.append(_string(sub.rack_id))
    return b"".join(out)


def decode_subscription(data: bytes) -> Subscription:
    """Any version; above 3 is read as 3 (Kafka's ConsumerProtocol rule)."""
    r = _Reader(bytes(data), what="subscription")
    version = r.int16()
    if version < 0:
        raise InvalidInput("subscription", f"negative version {version}")
    layout = min(version, HIGHEST_VERSION)
    topics = tuple(r.name() for _ in range(r.count()))
    user_data = r.bytes_()
    owned: TopicPartitions = ()
    generation = DEFAULT_GENERATION
    rack = None
    if layout >= 1:
        owned = r.topic_partitions()
    if layout >= 2:
        generation = r.int32()
    if layout >= 3:
        rack = r.string(nullable=True)
    if version <= HIGHEST_VERSION:
        r.done()
    return Subscription(topics, user_data, owned, generation, rack, version)


def encode_assignment(assignment: Assignment) -> bytes:
    if not 0 <= assignment.version <= HIGHEST_VERSION:
        raise InvalidInput("assignment.version", f"cannot write version {assignment.version} (0-{HIGHEST_VERSION})")
    return struct.pack(">h", assignment.version) + _topic_partitions(assignment.partitions) + _bytes(assignment.user_data)


def decode_assignment(data: bytes) -> Assignment:
    """Any version; empty bytes (what a member the leader left out receives) are no partitions."""
    if not data:
        return Assignment(version=0)
    r = _Reader(bytes(data), what="assignment")
    version = r.int16()
    if version < 0:
        raise InvalidInput("assignment", f"negative version {version}")
    partitions = r.topic_partitions()
    user_data = r.bytes_()
    if version <= HIGHEST_VERSION:
        r.done()
    return Assignment(partitions, user_data, version)
