"""The Java producer's key partitioner: murmur2 (Kafka's Utils.murmur2) and its partition choice."""

from __future__ import annotations

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit MurmurHash2 of ``data``, as the signed int32 Java returns."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    blocks = length & ~3
    for i in range(0, blocks, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[blocks + 2] << 16
    if tail >= 2:
        h ^= data[blocks + 1] << 8
    if tail >= 1:
        h ^= data[blocks]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes | str, num_partitions: int) -> int:
    """partition = (murmur2(key) & 0x7fffffff) % numPartitions (Kafka's BuiltInPartitioner)."""
    if isinstance(key, str):
        key = key.encode("utf-8")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
