"""A partition's log in memory: the record batches producers sent, as their bytes.

Kafka's ``UnifiedLog.append`` as far as a one-broker, in-memory log needs it: each batch of a
produce request (magic 2, ``DefaultRecordBatch``) is checked (its length, its CRC-32C over
everything after the CRC field, ``DefaultRecordBatch.ensureValid``), given its base offset (the
CRC does not cover the offset, so it stays valid) and kept as it came. The log is bounded by
size: when it grows past ``retention_bytes`` the oldest batches are dropped, as size retention
deletes segments, and the log start offset moves to the first batch kept.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from crc32c import crc32c

# DefaultRecordBatch's layout: baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
# magic int8, crc uint32, attributes int16, lastOffsetDelta int32, ... (61 bytes of header).
BATCH_OVERHEAD = 61
_LENGTH_OFFSET = 8
_MAGIC_OFFSET = 16
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_LAST_OFFSET_DELTA_OFFSET = 23
_LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes batchLength does not count
MAGIC_V2 = 2


class CorruptRecords(Exception):
    """The records of a produce request are not valid magic-2 batches (Kafka's
    ``CorruptRecordException``, answered CORRUPT_MESSAGE)."""


def split_batches(records: bytes) -> list[bytes]:
    """The batches of a produce request's ``records``, each checked."""
    batches = []
    position = 0
    while position < len(records):
        if len(records) - position < BATCH_OVERHEAD:
            raise CorruptRecords(f"{len(records) - position} bytes are not a record batch")
        (length,) = struct.unpack_from(">i", records, position + _LENGTH_OFFSET)
        end = position + _LOG_OVERHEAD + length
        if length < BATCH_OVERHEAD - _LOG_OVERHEAD or end > len(records):
            raise CorruptRecords(f"batch length {length} does not fit the {len(records) - position} bytes left")
        batch = records[position:end]
        if batch[_MAGIC_OFFSET] != MAGIC_V2:
            raise CorruptRecords(f"magic {batch[_MAGIC_OFFSET]} (only magic 2 batches are accepted)")
        (stored_crc,) = struct.unpack_from(">I", batch, _CRC_OFFSET)
        if crc32c(batch[_ATTRIBUTES_OFFSET:]) != stored_crc:
            raise CorruptRecords("batch CRC-32C does not match its contents")
        batches.append(batch)
        position = end
    if not batches:
        raise CorruptRecords("no record batch")
    return batches


def record_count(batch: bytes) -> int:
    (last_offset_delta,) = struct.unpack_from(">i", batch, _LAST_OFFSET_DELTA_OFFSET)
    return int(last_offset_delta) + 1


@dataclass
class PartitionLog:
    """One partition's batches (base offset, bytes), oldest first."""

    retention_bytes: int
    log_start_offset: int = 0
    log_end_offset: int = 0
    size_bytes: int = 0
    batches: list[tuple[int, bytes]] = field(default_factory=list)

    def append(self, batches: list[bytes]) -> int:
        """Appends checked batches; returns the base offset of the first."""
        first = self.log_end_offset
        for batch in batches:
            count = record_count(batch)
            stamped = struct.pack(">q", self.log_end_offset) + batch[8:]
            self.batches.append((self.log_end_offset, stamped))
            self.log_end_offset += count
            self.size_bytes += len(stamped)
        while self.size_bytes > self.retention_bytes and len(self.batches) > 1:
            _, dropped = self.batches.pop(0)
            self.size_bytes -= len(dropped)
            self.log_start_offset = self.batches[0][0]
        return first

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Batches holding ``offset`` and after, up to ``max_bytes`` but at least one batch
        (Kafka returns a first batch larger than the limit so a consumer always progresses)."""
        chunks: list[bytes] = []
        size = 0
        for base, batch in self.batches:
            if base + record_count(batch) <= offset:
                continue
            if chunks and size + len(batch) > max_bytes:
                break
            chunks.append(batch)
            size += len(batch)
        return b"".join(chunks)

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        """The base offset of the first batch whose max timestamp is at or after ``timestamp_ms``
        (a batch's first offset stands for its records: Kafka's answer is within that batch)."""
        for base, batch in self.batches:
            (max_timestamp,) = struct.unpack_from(">q", batch, 35)
            if max_timestamp >= timestamp_ms:
                return base
        return None
