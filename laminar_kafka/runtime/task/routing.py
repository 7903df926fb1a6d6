"""Routes records into an internal topic: each to the partition its key maps to.

This is the upstream half of a repartition. The key is computed again by the
`key_by` of the next stage, from the record as it arrives there; here it only
chooses the partition, with the same partitioner, so that the next stage finds
every record where its key's state lives. A key function that raises, a None
key, a record the internal format cannot encode and one larger than the
internal topic accepts are dead letters here, before they cross the stage
boundary (a record the broker refuses would fail every replay of its checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from laminar_kafka.api.specs import SinkSpec
from laminar_kafka.formats.batch import encode_batch
from laminar_kafka.operators.base import BatchContext, describe_error
from laminar_kafka.operators.keyed import EXACT_KEY_TYPES, key_bytes
from laminar_kafka.operators.partitioning import PARTITIONERS

Routed = tuple[list[bytes | None], list[bytes | None], list[int]]
"""Values, keys and partitions, index by index."""


def route(
    sink: SinkSpec,
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
    partitions: int,
    limit: int | None = None,
    offsets_out: list[int] | None = None,
) -> Routed:
    """Encode `values` for internal topic `sink.topic` with their keys and partitions;
    `limit`: the largest record (key + value) the topic accepts. `offsets_out`, if
    given, receives the source offset of each routed record."""
    partition_of = PARTITIONERS[sink.partitioner or "murmur2"]
    fast = _all_keyed(sink, values, partition_of, partitions)
    if fast is not None:
        encoded = encode_batch(sink.value_format, values)
        if encoded is not None:
            return _sized(sink.topic, limit, (encoded, *fast), offsets, ctx, offsets_out)
    owners: dict[bytes, int] = {}  # keys repeat within a batch: hash each once
    kept: list[Any] = []
    kept_offsets: list[int] = []
    keys: list[bytes | None] = []
    parts: list[int] = []
    for value, offset in zip(values, offsets, strict=True):
        try:
            k = sink.key_of(value)
            kb = key_bytes(k) if k is not None else b""
        except Exception as exc:  # the user's key function, a missing field, no bytes
            ctx.reject(offset, describe_error("key_by", exc))
            continue
        if k is None:
            ctx.reject(offset, "key_by key is None")
            continue
        owner = owners.get(kb)
        if owner is None:
            owner = owners[kb] = partition_of(kb, partitions)
        kept.append(value)
        kept_offsets.append(offset)
        keys.append(kb)
        parts.append(owner)
    datas = encode_batch(sink.value_format, kept)
    if datas is None:
        datas, keys, parts, kept_offsets = _one_by_one(sink, kept, kept_offsets, keys, parts, ctx)
    return _sized(sink.topic, limit, (datas, keys, parts), kept_offsets, ctx, offsets_out)


def _all_keyed(
    sink: SinkSpec, values: list[Any], partition_of: Callable[[bytes, int], int], partitions: int
) -> tuple[list[bytes | None], list[int]] | None:
    """Every value's key bytes and partition, computed once per distinct key; None when
    some key raises, is None or is not of `EXACT_KEY_TYPES` (then one record at a time)."""
    try:
        ks = sink.keys_of(values)
        distinct = set(ks)
    except Exception:  # the user's key function, a missing field, an unhashable key
        return None
    if not set(map(type, ks)) <= EXACT_KEY_TYPES:  # None too
        return None
    try:
        kbs = {k: key_bytes(k) for k in distinct}
    except Exception:  # a key with no bytes (a lone surrogate): one by one, a dead letter
        return None
    owners = {k: partition_of(kb, partitions) for k, kb in kbs.items()}
    return list(map(kbs.__getitem__, ks)), list(map(owners.__getitem__, ks))


def _sized(
    topic: str,
    limit: int | None,
    routed: Routed,
    offsets: list[int],
    ctx: BatchContext,
    offsets_out: list[int] | None,
) -> Routed:
    """`routed` as it is when every record fits the limit (one C-level pass over the
    sizes), else without those that do not (`_fitting`)."""
    datas, keys, _ = routed
    if limit is not None and longest(datas) + longest(keys) > limit:
        return _fitting(topic, limit, routed, offsets, ctx, offsets_out)
    if offsets_out is not None:
        offsets_out.extend(offsets)
    return routed


def _fitting(
    topic: str,
    limit: int,
    routed: Routed,
    offsets: list[int],
    ctx: BatchContext,
    offsets_out: list[int] | None,
) -> Routed:
    def reason(size: int) -> str:
        return (
            f"record of {size} bytes cannot cross to the next stage: {topic} accepts "
            f"{limit} bytes (its max.message.bytes or the producer's message.max.bytes)"
        )

    keep = reject_too_large(limit, routed[0], routed[1], offsets, ctx, reason)
    if offsets_out is not None:
        offsets_out.extend(offsets[i] for i in keep)
    datas, keys, parts = routed
    return [datas[i] for i in keep], [keys[i] for i in keep], [parts[i] for i in keep]


def _one_by_one(
    sink: SinkSpec,
    values: list[Any],
    offsets: list[int],
    keys: list[bytes | None],
    parts: list[int],
    ctx: BatchContext,
) -> tuple[list[bytes | None], list[bytes | None], list[int], list[int]]:
    out: tuple[list[bytes | None], list[bytes | None], list[int], list[int]] = ([], [], [], [])
    for value, offset, key, part in zip(values, offsets, keys, parts, strict=True):
        try:
            data = sink.value_format.encode_one(value)
        except Exception as exc:  # a value the format cannot write, or its own code raising
            ctx.reject(
                offset, f"record cannot cross to the next stage (through {sink.topic}): {exc}"
            )
            continue
        out[0].append(data)
        out[1].append(key)
        out[2].append(part)
        out[3].append(offset)
    return out


def size_of(data: bytes | None) -> int:
    return len(data) if data is not None else 0


def too_large(
    limit: int, datas: Sequence[bytes | None], keys: Sequence[bytes | None] | None
) -> dict[int, int]:
    """The size (value plus key) of each record larger than `limit` bytes, by index."""
    sizes = map(size_of, datas) if keys is None else map(_pair_size, datas, keys)
    return {i: size for i, size in enumerate(sizes) if size > limit}


def reject_too_large(
    limit: int,
    datas: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None,
    offsets: Sequence[int],
    ctx: BatchContext,
    reason: Callable[[int], str],
) -> list[int]:
    """The indexes of the records within `limit`; the others are dead letters with
    `reason(size)`."""
    big = too_large(limit, datas, keys)
    for i, size in big.items():
        ctx.reject(offsets[i], reason(size))
    return [i for i in range(len(datas)) if i not in big]


def _pair_size(data: bytes | None, key: bytes | None) -> int:
    return size_of(data) + size_of(key)


def longest(datas: Sequence[bytes | None] | None) -> int:
    """The longest of `datas` in bytes (a tombstone counts 0)."""
    if not datas:
        return 0
    try:
        return max(map(len, datas))  # type: ignore[arg-type]
    except TypeError:  # a None among them: the slower way
        return max(map(size_of, datas))
