"""A partition's in-memory log (``serve/log.py``): batches checked, stamped and retained by size."""

from __future__ import annotations

import io
import struct

import pytest

pytest.importorskip("kio")

from kio.records.schema import NewRecordBatch, Record  # noqa: E402
from kio.records.writers import write_new_batch  # noqa: E402

from kafka_rebalance.serve.log import CorruptRecords, PartitionLog, record_count, split_batches  # noqa: E402


def _batch(values: list[bytes], timestamp_ms: int = 1_700_000_000_000) -> bytes:
    """A magic-2 batch as a producer writes it (kio's writer: Kafka's DefaultRecordBatch layout)."""
    import datetime

    stamp = datetime.datetime.fromtimestamp(timestamp_ms / 1000, datetime.UTC)
    records = tuple(Record(attributes=0, timestamp=stamp, offset=i, key=None, value=v, headers=())
                    for i, v in enumerate(values))
    out = io.BytesIO()
    write_new_batch(out, NewRecordBatch(producer_id=-1, producer_epoch=-1, base_sequence=-1, attributes=0,
                                        records=records))
    return out.getvalue()


def test_batches_get_consecutive_base_offsets_and_keep_a_valid_crc():
    log = PartitionLog(retention_bytes=1 << 20)
    assert log.append(split_batches(_batch([b"a", b"b", b"c"]))) == 0
    assert log.append(split_batches(_batch([b"d"]) + _batch([b"e", b"f"]))) == 3
    assert log.log_end_offset == 6
    assert [struct.unpack_from(">q", batch)[0] for _, batch in log.batches] == [0, 3, 4]
    # What a consumer reads back passes the same check a produce does.
    assert [record_count(b) for b in split_batches(log.read(0, 1 << 20))] == [3, 1, 2]
    assert split_batches(log.read(4, 1 << 20)) == [log.batches[2][1]]


def test_a_read_returns_at_least_one_batch_whatever_the_limit():
    log = PartitionLog(retention_bytes=1 << 20)
    log.append(split_batches(_batch([b"x" * 100]) + _batch([b"y"])))
    assert len(split_batches(log.read(0, 1))) == 1


def test_a_changed_byte_fails_the_crc():
    batch = bytearray(_batch([b"payload"]))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptRecords, match="CRC"):
        split_batches(bytes(batch))


@pytest.mark.parametrize("records", [b"", b"\0" * 20, _batch([b"a"])[:-1]])
def test_truncated_or_empty_records_are_corrupt(records):
    with pytest.raises(CorruptRecords):
        split_batches(records)


def test_size_retention_drops_the_oldest_batches_and_moves_the_log_start():
    one = _batch([b"x" * 50])
    log = PartitionLog(retention_bytes=3 * len(one))
    for _ in range(5):
        log.append(split_batches(one))
    assert (log.log_start_offset, log.log_end_offset, len(log.batches)) == (2, 5, 3)
    assert log.offset_for_timestamp(0) == 2


def test_offset_for_timestamp_finds_the_first_batch_at_or_after_it():
    log = PartitionLog(retention_bytes=1 << 20)
    log.append(split_batches(_batch([b"a"], 1000) + _batch([b"b"], 2000)))
    assert (log.offset_for_timestamp(1500), log.offset_for_timestamp(2001)) == (1, None)
