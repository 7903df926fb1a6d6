"""Which partition a key belongs to, as Kafka's producers compute it.

The Java client and librdkafka's `murmur2_random` hash a key with murmur2 and
take the positive value modulo the partition count; librdkafka's default
`consistent_random` uses CRC32 instead. A keyed operator checks that a record
sits in the partition its key maps to, because keyed state lives per partition.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from typing import Literal

Partitioner = Literal["murmur2", "crc32"]


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 (seed 0x9747b28c), as a signed int like Java's."""
    length = len(data)
    seed = 0x9747B28C
    m = 0x5BD1E995
    r = 24
    h = (seed ^ length) & 0xFFFFFFFF
    n4 = length // 4
    for i in range(n4):
        i4 = i * 4
        k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24)
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    tail = n4 * 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


# Keys repeat (a customer, an account...): murmur2 in Python costs microseconds
# per call, a cache hit a fraction of that.
@functools.lru_cache(maxsize=1 << 16)
def murmur2_partition(key: bytes, num_partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def crc32_partition(key: bytes, num_partitions: int) -> int:
    return zlib.crc32(key) % num_partitions


PARTITIONERS: dict[str, Callable[[bytes, int], int]] = {
    "murmur2": murmur2_partition,
    "crc32": crc32_partition,
}

# librdkafka's name for the Java-compatible partitioner, for producers of keyed topics.
LIBRDKAFKA_PARTITIONER: dict[str, str] = {"murmur2": "murmur2_random", "crc32": "consistent_random"}
