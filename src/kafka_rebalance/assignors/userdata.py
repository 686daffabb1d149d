"""Kafka's StickyAssignor subscription user data (``StickyAssignorUserData`` v1), byte for byte.

StickyAssignor runs under the EAGER protocol, whose consumers revoke everything before they
rejoin, so their subscriptions carry no owned partitions. To stay sticky, the assignor
remembers the assignment it last received and sends it, with its generation, as user data:

    previous_assignment: ARRAY of {topic: STRING, partitions: ARRAY of INT32}
    generation: INT32

(ARRAY = int32 count then items; STRING = int16 length then UTF-8; big-endian.)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from kafka_rebalance.model import InvalidInput, TopicPartition


def encode_sticky_user_data(partitions: Iterable[str], generation: int) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for name in partitions:
        tp = TopicPartition.parse(name, "user data")
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [struct.pack(">i", len(by_topic))]
    for topic, numbers in by_topic.items():
        raw = topic.encode("utf-8")
        out.append(struct.pack(">h", len(raw)) + raw)
        out.append(struct.pack(f">i{len(numbers)}i", len(numbers), *numbers))
    out.append(struct.pack(">i", generation))
    return b"".join(out)


def decode_sticky_user_data(data: bytes) -> tuple[list[str], int]:
    """Partitions (as 'topic-partition') and generation; a v0 payload (no generation) gives -1."""
    try:
        offset = 0
        (topics,) = struct.unpack_from(">i", data, offset)
        offset += 4
        partitions: list[str] = []
        for _ in range(topics):
            (length,) = struct.unpack_from(">h", data, offset)
            offset += 2
            topic = data[offset : offset + length].decode("utf-8")
            offset += length
            (count,) = struct.unpack_from(">i", data, offset)
            offset += 4
            numbers = struct.unpack_from(f">{count}i", data, offset)
            offset += 4 * count
            partitions.extend(f"{topic}-{p}" for p in numbers)
        generation = struct.unpack_from(">i", data, offset)[0] if len(data) >= offset + 4 else -1
    except (struct.error, UnicodeDecodeError) as exc:
        raise InvalidInput("user_data", f"not StickyAssignor user data: {exc}") from None
    return partitions, generation
