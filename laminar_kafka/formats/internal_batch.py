"""Many records of an internal partition in one Kafka message.

A stage writes what it routes to one internal partition in a batch as one
message (`runtime/task/internal_messages.py`): `C1 02` (the marker; `C1 01`
starts a single record, `formats/internal.py`) and a MessagePack array of three
arrays, index by index: the records' keys, their event times (nil when the
stage carries none) and their values. One produce, one fetched message and one
broker record instead of hundreds: the cost of the hop between two stages is
mostly per message.

It is exact because a message is written inside one transaction and read
whole: the barrier a stage forwards comes after every message of its epoch, so
no checkpoint falls inside one, and the next stage's position is a message's.
Inside the next stage a record is named by a stable offset of its own,
`message offset * SPAN + index` (`runtime/task/internal_reading.py`), which a
replay of the message gives again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from laminar_kafka.errors import FormatMismatchError, RecordDecodeError
from laminar_kafka.formats.internal import MARKER, pairs_hook

try:
    import msgpack
except ImportError:  # a core dependency; only a tool's environment lacks it
    msgpack = None

BATCH_MARKER: Final = b"\xc1\x02"
"""The first bytes of a message holding many internal records."""
SPAN: Final = 1 << 16
"""Offsets of the records read from an internal partition: message offset * SPAN + index."""
MAX_RECORDS: Final = 1000
"""The most records a writer puts in one message (a reader takes up to SPAN): a task
that reads only internal topics polls `batch_size / MAX_RECORDS` messages at a time,
so that a poll still holds at most about `batch_size` records."""
HEAD_BYTES: Final = 24
"""A message's bytes besides its records' (marker and array headers), at most."""
RECORD_BYTES: Final = 14
"""A record's bytes in a message besides its key and value (their headers, its time)."""


def pack_batch(
    keys: Sequence[bytes | None], times: Sequence[int | None] | None, bodies: Sequence[bytes]
) -> bytes:
    """One message of records whose values are already MessagePack (`bodies`)."""
    packer = msgpack.Packer()
    head = packer.pack(list(keys)) + packer.pack(None if times is None else list(times))
    return b"".join((BATCH_MARKER, b"\x93", head, packer.pack_array_header(len(bodies)), *bodies))


def unpack_batch(data: bytes) -> tuple[list[Any], list[Any] | None, list[Any]]:
    """Keys, event times (or None) and values of a message `pack_batch` wrote; a message
    that is not one is a `RecordDecodeError` (it becomes one dead letter, whole)."""
    if msgpack is None:
        raise FormatMismatchError(
            "an internal topic holds MessagePack records but msgpack is not installed:"
            " install laminar-kafka's dependencies on every worker"
        )
    body = memoryview(data)[len(BATCH_MARKER) :]
    try:
        found = msgpack.unpackb(body, strict_map_key=False)
    except Exception as exc:  # FormatError, ExtraData, bad UTF-8, truncation...
        # ...or what the values hold that the whole cannot: a tuple map key (unpacked
        # as an unhashable list), nesting that the two arrays around it take past
        # MessagePack's depth limit: each value apart, before the batch is refused.
        found = _unpack_apart(body, exc)
    if not (isinstance(found, list) and len(found) == 3):
        raise RecordDecodeError("invalid batch of internal records: not [keys, times, values]")
    keys, times, values = found
    n = len(values) if isinstance(values, list) else -1
    if not (
        0 < n < SPAN
        and isinstance(keys, list)
        and len(keys) == n
        and (times is None or (isinstance(times, list) and len(times) == n))
    ):
        raise RecordDecodeError(
            f"invalid batch of internal records: {n} values (at most {SPAN - 1}), "
            "keys and times not one per value"
        )
    return keys, times, values


def _unpack_apart(body: memoryview, first: Exception) -> list[Any]:
    """[keys, times, values] read value by value, with tuple map keys as tuples; what
    the whole unpack raised (`first`) as a `RecordDecodeError` when that fails too."""
    unpacker = msgpack.Unpacker(
        strict_map_key=False, object_pairs_hook=pairs_hook, max_buffer_size=len(body)
    )
    unpacker.feed(body)
    try:
        if unpacker.read_array_header() != 3:
            raise ValueError("not three arrays")
        keys, times = unpacker.unpack(), unpacker.unpack()
        values = [unpacker.unpack() for _ in range(unpacker.read_array_header())]
        if unpacker.tell() != len(body):
            raise ValueError("bytes after the batch")
    except Exception:
        raise RecordDecodeError(
            f"invalid batch of internal records: {type(first).__name__}: {first}"
        ) from None
    return [keys, times, values]


def single(value: Any) -> bytes:
    """`value` as a message of its own would hold it (a dead letter's bytes)."""
    return bytes(MARKER + msgpack.packb(value))


def records_in(data: bytes | None) -> int:
    """How many records an internal message holds (a single record, or bytes that are no
    batch, count one: they are one record, or one dead letter)."""
    if data is None or data[:2] != BATCH_MARKER:
        return 1
    try:
        return len(unpack_batch(data)[2])
    except RecordDecodeError:
        return 1
