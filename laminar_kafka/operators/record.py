"""The whole record, for a step that asks for it (`metadata=True`).

By default a step sees only a record's value. With `metadata=True` it sees a
`Record`: the current value together with the key, timestamp, headers and
position of the record it came from (the source's, or after a repartition the
internal topic's, whose offset is its message's times 65536 plus its place in it:
`runtime/task/internal_reading.py`; never a window's result, which comes from many
records).
Views are built per batch, only for the steps that ask, so the plain path pays
nothing for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import BytesFormat, Format

Headers = tuple[tuple[str, bytes | None], ...]

INTERNAL_HEADERS = "laminar."
"""Headers the pipeline itself writes (control marks, generations): not shown in a view."""
_NO_TIMESTAMP = 0  # confluent_kafka.TIMESTAMP_NOT_AVAILABLE


@dataclass(frozen=True)
class Record:
    """A value with the key, timestamp, headers and place of its source record.

    `key` is decoded with the source's `key_format` (bytes by default);
    `timestamp` is the Kafka timestamp in milliseconds, None when the record
    has none; `headers` keep their order and repeats.
    """

    value: Any
    key: Any
    timestamp: int | None
    headers: Headers
    topic: str
    partition: int
    offset: int

    def header(self, name: str) -> bytes | None:
        """The last value of header `name` (Kafka allows repeats), None if absent."""
        for found, value in reversed(self.headers):
            if found == name:
                return value
        return None


@dataclass(frozen=True)
class SourceFields:
    """What a view takes from its source record: the decoded key, timestamp, headers."""

    key: Any
    timestamp: int | None
    headers: Headers


def source_fields(message: Any, key_format: Format) -> SourceFields:
    """Read a source message's key, timestamp and headers; raises RecordDecodeError
    with the reason when its key cannot be decoded."""
    raw_key = message.key()
    try:
        key = raw_key if isinstance(key_format, BytesFormat) else key_format.decode_one(raw_key)
    except RecordDecodeError as exc:
        raise RecordDecodeError(f"undecodable key: {exc}") from None
    kind, stamp = message.timestamp()
    raw_headers = message.headers() or ()
    headers = tuple(
        (name, _header_bytes(value))
        for name, value in raw_headers
        if not name.startswith(INTERNAL_HEADERS)
    )
    return SourceFields(key, None if kind == _NO_TIMESTAMP else stamp, headers)


def _header_bytes(value: str | bytes | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def record_views(
    values: Sequence[Any],
    offsets: Sequence[int],
    fields_of: dict[int, SourceFields | str],
    topic: str,
    partition: int,
) -> tuple[list[Record], list[Any], list[int], list[tuple[int, str]]]:
    """Views of `values`, with the values and offsets that have one, and the rest.

    `fields_of` maps a source offset to its fields, or to the reason they could
    not be read (an undecodable key): such a record gets no view and comes back
    in the last list with that reason, for the caller to dead-letter.
    """
    views: list[Record] = []
    kept: list[Any] = []
    kept_offsets: list[int] = []
    refused: list[tuple[int, str]] = []
    for value, offset in zip(values, offsets, strict=True):
        found = fields_of.get(offset)
        if found is None:
            refused.append((offset, "no source record for this offset"))
            continue
        if isinstance(found, str):
            refused.append((offset, found))
            continue
        views.append(
            Record(value, found.key, found.timestamp, found.headers, topic, partition, offset)
        )
        kept.append(value)
        kept_offsets.append(offset)
    return views, kept, kept_offsets, refused
