"""The few Java semantics Kafka's behaviour depends on (string order, String.hashCode) and the
member order Kafka's assignors derive from it."""

from __future__ import annotations

import random
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Iterable, Sequence

import numpy as np


def java_sort_key(text: str) -> bytes:
    """Key that orders strings like Java's String.compareTo (UTF-16 code units, not code points)."""
    return text.encode("utf-16-be", "surrogatepass")


def java_sorted(strings: Iterable[str]) -> list[str]:
    """``strings`` in Java's String.compareTo order. ASCII strings (Kafka's topic names) are
    compared in C as they are (Java's order is then Python's own); others by ``java_sort_key``."""
    items = list(strings)
    if "".join(items).isascii():
        return sorted(items)
    return sorted(items, key=java_sort_key)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: h = 31*h + c over UTF-16 code units, wrapped to a signed int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_random_uuid(rng: random.Random) -> str:
    """Kafka's ``Uuid.randomUuid().toString()`` drawn from ``rng``: a type 4 UUID in URL-safe
    base64 without padding, never one whose text starts with a dash (drawn again, as Kafka does)."""
    while True:
        raw = uuid.UUID(int=rng.getrandbits(128), version=4).bytes
        text = urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def java_order(strings: Sequence[str]) -> np.ndarray:
    """Indices that sort ``strings`` as Java's ``String.compareTo`` does (UTF-16 code units).
    Without characters beyond the BMP that is code-point order, which Python sorts natively
    (ten times faster than through encoded keys)."""
    joined = "".join(strings)
    if len(joined.encode("utf-16-le", "surrogatepass")) == 2 * len(joined):
        return np.array(sorted(range(len(strings)), key=strings.__getitem__), dtype=np.int64)
    return np.array(sorted(range(len(strings)), key=lambda i: java_sort_key(strings[i])), dtype=np.int64)


def static_first_member_order(member_ids: Sequence[str], instance_ids: Sequence[str | None]) -> np.ndarray:
    """Kafka's member order (``MemberInfo.compareTo``, ``RangeAssignor.sortMemberIds``): static
    members first by ``group.instance.id``, then dynamic members by member id, both in Java
    string order."""
    if not instance_ids or all(gid is None for gid in instance_ids):
        return java_order(member_ids)
    static = [m for m, gid in enumerate(instance_ids) if gid is not None]
    dynamic = [m for m, gid in enumerate(instance_ids) if gid is None]
    static_order = java_order([instance_ids[m] or "" for m in static])
    dynamic_order = java_order([member_ids[m] for m in dynamic])
    return np.concatenate((np.array(static, dtype=np.int64)[static_order],
                           np.array(dynamic, dtype=np.int64)[dynamic_order]))


def topic_offsets_of(partition_counts: np.ndarray) -> np.ndarray:
    """Global index of each topic's first partition (topics in order), plus the total at the end."""
    offsets = np.zeros(len(partition_counts) + 1, dtype=np.int64)
    np.cumsum(partition_counts, out=offsets[1:])
    return offsets


def partition_topic_of(partition_counts: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Topic index of every global partition."""
    return np.repeat(np.arange(len(partition_counts), dtype=dtype), partition_counts)


# --- java.util.HashMap / HashSet iteration order -------------------------------------------
#
# A HashMap iterates bucket by bucket (bucket = spread(hashCode) & (capacity - 1)); within a
# bucket, in insertion order (a resize splits each bucket's chain keeping relative order).
# A bucket of 8 or more entries in a table of 64 or more becomes a red-black tree whose
# iteration order differs; that needs eight keys sharing a bucket at load factor 0.75, which
# these helpers do not model.


def java_string_hashes(strings: Sequence[str]) -> np.ndarray:
    """``String.hashCode`` of every string, as int64 holding the signed int32: the sum of each
    UTF-16 code unit times 31 to the power of the units after it, wrapping at 2**32 (uint32
    arithmetic), summed per string in one ``reduceat``."""
    n = len(strings)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    joined = "".join(strings)
    if joined.isascii():  # one byte per code unit: the whole batch encoded at once
        units = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).astype(np.uint32)
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=n)
    else:
        encoded = [s.encode("utf-16-be", "surrogatepass") for s in strings]
        units = np.frombuffer(b"".join(encoded), dtype=">u2").astype(np.uint32)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n) // 2
    ends = np.cumsum(lengths)
    starts = ends - lengths
    if not len(units):
        return np.zeros(n, dtype=np.int64)
    after = np.repeat(ends, lengths) - 1 - np.arange(len(units), dtype=np.int64)  # units after each one
    powers = np.ones(int(lengths.max()), dtype=np.uint32)
    with np.errstate(over="ignore"):
        np.multiply.accumulate(np.full(len(powers), 31, dtype=np.uint32), out=powers)
        powers = np.concatenate(([np.uint32(1)], powers[:-1]))  # 31**0, 31**1, ... mod 2**32
        terms = units * powers[after]
    filled = lengths > 0
    h = np.zeros(n, dtype=np.uint32)
    if filled.any():
        h[filled] = np.add.reduceat(terms, starts[filled], dtype=np.uint32)
    return h.view(np.int32).astype(np.int64)


def java_uuid_hashes(msb: np.ndarray, lsb: np.ndarray) -> np.ndarray:
    """``Uuid.hashCode`` (org.apache.kafka.common.Uuid): the two halves of msb ^ lsb, XORed."""
    h = (np.asarray(msb, dtype=np.int64) ^ np.asarray(lsb, dtype=np.int64)).view(np.uint64)
    folded = ((h >> np.uint64(32)) ^ (h & np.uint64(0xFFFFFFFF))).astype(np.uint32)
    return folded.view(np.int32).astype(np.int64)


def java_spread(hashes: np.ndarray) -> np.ndarray:
    """``HashMap.hash``: the hash code XOR its upper 16 bits (unsigned shift), as uint32."""
    h = np.asarray(hashes, dtype=np.int64).astype(np.uint32)
    spread: np.ndarray = h ^ (h >> np.uint32(16))
    return spread


def _table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the power of two at or above ``capacity`` (at least 1)."""
    return 1 if capacity <= 1 else 1 << (capacity - 1).bit_length()


def capacity_after_puts(count: int) -> int:
    """Table size of a ``new HashMap<>()`` (or ``HashSet``) after ``count`` insertions: 16,
    doubled whenever the size passes three quarters of it."""
    capacity = 16
    while count > capacity * 3 // 4:
        capacity *= 2
    return capacity


def capacity_of_copy(count: int) -> int:
    """Table size of ``new HashSet<>(collection)`` of ``count`` elements:
    ``tableSizeFor(max((int) (count / .75f) + 1, 16))`` (float arithmetic, as Java's)."""
    return _table_size_for(max(int(np.float32(count) / np.float32(0.75)) + 1, 16))


def capacities_of_copies(counts: np.ndarray) -> np.ndarray:
    """``capacity_of_copy`` of every count."""
    initial = np.maximum((np.asarray(counts, dtype=np.int64).astype(np.float32) / np.float32(0.75)).astype(np.int64) + 1, 16)
    return np.left_shift(1, np.ceil(np.log2(initial)).astype(np.int64))


def capacities_after_puts(counts: np.ndarray) -> np.ndarray:
    """``capacity_after_puts`` of every count."""
    counts = np.asarray(counts, dtype=np.int64)
    # Smallest power of two c >= 16 with count <= c * 3 // 4, i.e. c >= ceil(4 * count / 3).
    need = np.maximum((4 * counts + 2) // 3, 16)
    capacities: np.ndarray = np.left_shift(1, np.ceil(np.log2(need)).astype(np.int64))
    return capacities


def java_hash_order(hashes: np.ndarray, capacity: int | np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """The iteration order of a HashMap whose keys have ``hashes`` (``hashCode`` values),
    inserted in the given order into a table of ``capacity`` buckets: a stable argsort by
    bucket. With ``groups`` (ascending group of every key), each group is its own table
    (``capacity`` one per key) and groups keep their order."""
    bucket = (java_spread(hashes) & (np.asarray(capacity, dtype=np.int64) - 1).astype(np.uint32)).astype(np.int64)
    if groups is None:
        return np.argsort(bucket, kind="stable")
    return np.lexsort((bucket, groups))
