"""The records a stage routed to its internal partitions, as the messages it produces.

Each partition's records of a batch go out in as few messages as fit
(`formats/internal_batch.py`): up to `MAX_RECORDS` records and `BATCH_BYTES`
(or the topic's limit, if lower) each, in the order they were routed. A record
MessagePack cannot carry (routed as JSON), a tombstone, and one too large to
share a message go alone, as a single record, between the batches before and
after it, so a partition's order is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby, repeat
from typing import Final

from laminar_kafka.formats.internal import MARKER
from laminar_kafka.formats.internal_batch import (
    HEAD_BYTES,
    MAX_RECORDS,
    RECORD_BYTES,
    pack_batch,
)
from laminar_kafka.runtime.task.routing import Routed

BATCH_BYTES: Final = 256 * 1024
"""The size a writer fills a message up to: past it, a message more costs little."""

Messages = tuple[list[bytes | None], list[bytes | None], list[int], list[int | None] | None]
"""Values, keys, partitions and timestamps (None: the producer's) of messages to produce.
A batch's timestamp is its latest record's event time; each record's is inside it."""


def as_messages(routed: Routed, times: Sequence[int | None] | None, limit: int | None) -> Messages:
    """The messages holding `routed` (records in their partitions, `times` their event
    times if the next stage reads them), each at most `limit` bytes."""
    datas, keys, parts = routed
    target = min(BATCH_BYTES, limit) if limit is not None else BATCH_BYTES
    out: Messages = ([], [], [], [] if times is not None else None)
    order = sorted(range(len(parts)), key=parts.__getitem__)  # stable: each partition in order
    for part, members in groupby(order, key=parts.__getitem__):
        indexes = list(members)
        group_datas = list(map(datas.__getitem__, indexes))
        group_keys = list(map(keys.__getitem__, indexes))
        group_times = None if times is None else list(map(times.__getitem__, indexes))
        if _one_message(group_datas, group_keys, target):
            bodies = [d[2:] for d in group_datas]  # type: ignore[index]  # all MessagePack
            _add(out, pack_batch(group_keys, group_times, bodies), None, part, _latest(group_times))
        else:
            _chunked(out, part, group_datas, group_keys, group_times, target)
    return out


def _one_message(datas: list[bytes | None], keys: list[bytes | None], target: int) -> bool:
    """Whether a partition's records fit one message: all MessagePack, keys set, the
    size within `target` (checked with C-level maps: the common case)."""
    if len(datas) > MAX_RECORDS:
        return False
    try:
        if not all(map(bytes.startswith, datas, repeat(MARKER))):  # type: ignore[arg-type]
            return False
        size = sum(map(len, datas)) + sum(map(len, keys))  # type: ignore[arg-type]
    except TypeError:  # a tombstone or a None key: one record at a time
        return False
    return HEAD_BYTES + size + RECORD_BYTES * len(datas) <= target


def _chunked(
    out: Messages,
    part: int,
    datas: list[bytes | None],
    keys: list[bytes | None],
    times: list[int | None] | None,
    target: int,
) -> None:
    """A partition's records in messages of at most `target` bytes and `MAX_RECORDS`
    records, a record that cannot share one alone."""
    bodies: list[bytes] = []
    held: list[int] = []  # indexes of `bodies`' records
    size = HEAD_BYTES

    def flush() -> None:
        nonlocal size
        if held:
            batch_keys = [keys[i] for i in held]
            batch_times = None if times is None else [times[i] for i in held]
            _add(out, pack_batch(batch_keys, batch_times, bodies), None, part, _latest(batch_times))
            bodies.clear()
            held.clear()
        size = HEAD_BYTES

    for i, (data, key) in enumerate(zip(datas, keys, strict=True)):
        own = len(data or b"") + len(key or b"") + RECORD_BYTES
        if data is None or key is None or not data.startswith(MARKER) or HEAD_BYTES + own > target:
            flush()
            _add(out, data, key, part, None if times is None else times[i])
            continue
        if size + own > target or len(held) == MAX_RECORDS:
            flush()
        bodies.append(data[2:])
        held.append(i)
        size += own
    flush()


def _add(out: Messages, value: bytes | None, key: bytes | None, part: int, ts: int | None) -> None:
    out[0].append(value)
    out[1].append(key)
    out[2].append(part)
    if out[3] is not None:
        out[3].append(ts)


def _latest(times: list[int | None] | None) -> int | None:
    """A batch's Kafka timestamp: its latest event time (None: the producer's clock)."""
    return max((t for t in times if t is not None), default=None) if times else None
