"""Sticky assignors' subscription user data, byte for byte, in the three forms found in groups.

StickyAssignor runs under the EAGER protocol, whose consumers revoke everything before they
rejoin, so their subscriptions carry no owned partitions. To stay sticky, the assignor
remembers the assignment it last received and sends it, with its generation, as user data.

- Java (and librdkafka): ``StickyAssignorUserData`` v1, no version prefix (v0 lacks the
  generation; readers try v1, then v0)::

      previous_assignment: ARRAY of {topic: STRING, partitions: ARRAY of INT32}
      generation: INT32                                   (v1 only)

- kafka-python 3.x: the same fields, preceded by an INT16 version (1, or 0 without the
  generation), because it encodes the user data as a versioned message. Java cannot read this
  form and kafka-python cannot read Java's; ``decode_sticky_user_data`` reads both.
- Java's CooperativeStickyAssignor: a single INT32 generation (for consumers whose subscription
  version predates the generation field).

(ARRAY = int32 count then items; STRING = int16 length then UTF-8; big-endian.)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from enum import StrEnum

from kafka_rebalance.model import InvalidInput, TopicPartition


class UserDataFormat(StrEnum):
    JAVA = "java"
    KAFKA_PYTHON = "kafka-python"


def encode_sticky_user_data(partitions: Iterable[str], generation: int, fmt: UserDataFormat = UserDataFormat.JAVA) -> bytes:
    """Java's StickyAssignorUserData v1 (the default) or kafka-python's version-prefixed form."""
    by_topic: dict[str, list[int]] = {}
    for name in partitions:
        tp = TopicPartition.parse(name, "user data")
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [struct.pack(">h", 1)] if fmt is UserDataFormat.KAFKA_PYTHON else []
    out.append(struct.pack(">i", len(by_topic)))
    for topic, numbers in by_topic.items():
        raw = topic.encode("utf-8")
        out.append(struct.pack(">h", len(raw)) + raw)
        out.append(struct.pack(f">i{len(numbers)}i", len(numbers), *numbers))
    out.append(struct.pack(">i", generation))
    return b"".join(out)


def _read_assignment(data: bytes, offset: int, with_generation: bool) -> tuple[list[str], int] | None:
    """Fields from ``offset``; None unless they use up the data exactly."""
    try:
        (topics,) = struct.unpack_from(">i", data, offset)
        offset += 4
        if topics < 0 or topics > len(data):
            return None
        partitions: list[str] = []
        for _ in range(topics):
            (length,) = struct.unpack_from(">h", data, offset)
            offset += 2
            if length < 0:
                return None
            topic = data[offset : offset + length].decode("utf-8")
            offset += length
            (count,) = struct.unpack_from(">i", data, offset)
            offset += 4
            if count < 0 or 4 * count > len(data) - offset:
                return None
            numbers = struct.unpack_from(f">{count}i", data, offset)
            offset += 4 * count
            partitions.extend(f"{topic}-{p}" for p in numbers)
        generation = -1
        if with_generation:
            (generation,) = struct.unpack_from(">i", data, offset)
            offset += 4
    except (struct.error, UnicodeDecodeError):
        return None
    return (partitions, generation) if offset == len(data) else None


def sticky_user_data_format(data: bytes) -> UserDataFormat | None:
    """Which form ``data`` is in (None if neither)."""
    if _read_assignment(data, 0, True) or _read_assignment(data, 0, False):
        return UserDataFormat.JAVA
    if len(data) >= 2 and struct.unpack_from(">h", data)[0] in (0, 1):
        version = struct.unpack_from(">h", data)[0]
        if _read_assignment(data, 2, version == 1):
            return UserDataFormat.KAFKA_PYTHON
    return None


def decode_sticky_user_data(data: bytes) -> tuple[list[str], int]:
    """Partitions (as 'topic-partition') and generation from any of the sticky forms; a payload
    without a generation gives -1. Tried in Kafka's order (v1, then v0), then kafka-python's."""
    data = bytes(data)
    for offset, with_generation in ((0, True), (0, False)):
        found = _read_assignment(data, offset, with_generation)
        if found is not None:
            return found
    if len(data) >= 2:
        version = struct.unpack_from(">h", data)[0]
        found = _read_assignment(data, 2, version >= 1) if version in (0, 1) else None
        if found is not None:
            return found
    raise InvalidInput("user_data", "not StickyAssignor user data (neither Java's nor kafka-python's form)")


def encode_cooperative_user_data(generation: int) -> bytes:
    """Java's CooperativeStickyAssignor user data: the generation alone."""
    return struct.pack(">i", generation)


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """The generation in a CooperativeStickyAssignor's user data, None when absent; unreadable
    data counts as the default generation, as in Kafka's memberData."""
    if data is None:
        return None
    if len(data) < 4:
        return -1
    generation: int = struct.unpack_from(">i", data)[0]
    return generation
