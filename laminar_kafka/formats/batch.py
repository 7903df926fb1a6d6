"""Decode and encode whole batches: the hot path of every task.

A batch of Avro records is decoded in one fastavro call by framing it as an
Avro array: one call per batch instead of one per record. Bodies laid back to
back have no boundaries, though: two malformed records whose length errors
cancel out would decode as wrong values. So every record is preceded by a
frame field, an 8-byte marker chosen per batch that occurs nowhere in the
batch's bytes and cannot overlap itself (its first byte does not recur in it),
followed by the record's own single-object prefix; the decoded frames must all
be exactly that. A read that drifts from a record's boundary would have to
find the marker somewhere else, which cannot happen (proof in `_frames_hold`),
so each body decodes from exactly its own bytes, as `AvroFormat.decode_one`
would. Bodies then pass the same `StrictAvro` checks as in `decode_one`. If
anything fails, the batch is decoded again record by record so that each bad
record gets its own error.

Schemas the generated decoder reads (`avro_decode`: records of primitives,
unions and nested records) skip the framing: it reads each record from its
own bytes, in about 30% less time, and gives up to the same record-by-record path.
"""

from __future__ import annotations

import copy
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from fastavro import parse_schema, schemaless_reader

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats.avro import AvroFormat
from laminar_kafka.formats.avro_strict import may_overflow
from laminar_kafka.formats.base import Format
from laminar_kafka.formats.internal import InternalFormat
from laminar_kafka.formats.json import JsonFormat
from laminar_kafka.formats.raw import StringFormat

# The same settings as JsonFormat.encode_one, built once instead of per record.
_JSON_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str, allow_nan=False).encode
_JSON_ENCODE_STRICT = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_FRAME_FIELD = "__laminar_batch_frame"
_MARKER_SIZE = 8


@dataclass(frozen=True)
class _BatchSchema:
    """How one format's batches are framed: the array schema and where the value is."""

    fmt: AvroFormat
    schema: Any  # None: the schema cannot be framed (a name clash): no fast path
    # True: the frame is a field prepended to the user's record, popped after decoding;
    # False: each item is a wrapper record {frame, value}.
    inline: bool


_BATCH_SCHEMAS: dict[int, _BatchSchema] = {}


def _zigzag_varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _batch_schema(fmt: AvroFormat) -> _BatchSchema:
    cached = _BATCH_SCHEMAS.get(id(fmt))
    if cached is not None and cached.fmt is fmt:
        return cached
    parsed = fmt.parsed_schema
    size = _MARKER_SIZE + (len(fmt.single_object_prefix) if fmt.framing == "single-object" else 0)
    frame = {
        "name": _FRAME_FIELD,
        "type": {"type": "fixed", "name": "laminar.batch.Frame", "size": size},
    }
    plain = _without_fastavro_keys(parsed)
    inline = (
        isinstance(plain, dict)
        and plain.get("type") == "record"
        and all(f["name"] != _FRAME_FIELD for f in plain["fields"])
        # A record that refers to itself would expect the frame in its nested copies too.
        and json.dumps(plain["name"]) not in json.dumps(plain["fields"], default=str)
    )
    if inline:
        items = copy.deepcopy(plain)
        items["fields"].insert(0, frame)
    else:
        items = {
            "type": "record",
            "name": "laminar.batch.Item",
            "fields": [frame, {"name": "value", "type": plain}],
        }
    try:
        schema = parse_schema({"type": "array", "items": items})
    except Exception:  # the user's schema already defines one of our names
        schema = None
    cached = _BatchSchema(fmt, schema, inline)
    _BATCH_SCHEMAS[id(fmt)] = cached
    return cached


def _without_fastavro_keys(schema: Any) -> Any:
    if isinstance(schema, dict) and "__fastavro_parsed" in schema:
        return {k: v for k, v in schema.items() if not k.startswith("__")}
    return schema


def _marker(joined: bytes) -> bytes:
    """A marker absent from `joined` that cannot overlap itself.

    A first byte that does not recur in the marker means no proper suffix of it
    equals a prefix of it; the last byte is not 0, the array's end marker.
    """
    while True:
        marker = os.urandom(_MARKER_SIZE)
        if marker[0] not in marker[1:] and marker[-1] != 0 and marker not in joined:
            return marker


def _frames_hold(frames: list[Any], expected: bytes) -> bool:
    """Whether every decoded frame is `expected` (marker, then the record's own prefix).

    Why that proves each record was read from exactly its own bytes: the
    stream is the array count, then marker + record for each record, then the
    array's end. An 8-byte read equal to the marker cannot start inside a
    record or the count (the marker occurs nowhere in them), nor inside a
    marker or straddle one (that needs a suffix of the marker to equal a prefix
    of it), nor reach the end byte (the marker does not end in 0). So item k's
    frame is read at some marker's start, strictly after item k-1's; n items
    and n markers leave only marker k. Item k therefore begins at its marker
    and ends where marker k+1 begins: its record, all of it and nothing else.
    """
    return len(frames) > 0 and frames.count(expected) == len(frames)


def _avro_batch(fmt: AvroFormat, datas: Sequence[bytes | None]) -> list[Any] | None:
    """All records decoded at once, or None when the batch needs the careful path."""
    records: Sequence[bytes] = datas  # type: ignore[assignment]
    try:
        joined = b"".join(records)
    except TypeError:  # a tombstone (None) among them
        return None
    strict = fmt.strict
    start = 10 if fmt.framing == "single-object" else 0
    if strict.always_walk:
        if not strict.bodies_valid(records, start):
            return None
    elif may_overflow(joined):
        # Rare: a long of 10 bytes, a run of non-ASCII text, or a run that crosses from a
        # prefix into a body; only the bodies that have such a run need the walk.
        try:
            for data in records:
                if may_overflow(data, start):
                    strict.check_body(data, start)
        except RecordDecodeError:
            return None
    batch = _batch_schema(fmt)
    if batch.schema is None:
        return None
    marker = _marker(joined)
    framed = b"".join((_zigzag_varint(len(records)), marker, marker.join(records), b"\x00"))
    stream = io.BytesIO(framed)
    try:
        items = schemaless_reader(stream, batch.schema, None)
    except Exception:
        return None
    if not isinstance(items, list) or stream.tell() != len(framed) or len(items) != len(records):
        return None
    expected = marker + (fmt.single_object_prefix if start else b"")
    if batch.inline:
        values = items
        frames = list(map(dict.pop, items, repeat(_FRAME_FIELD)))
    else:
        values = [item["value"] for item in items]
        frames = [item[_FRAME_FIELD] for item in items]
    if not _frames_hold(frames, expected):
        return None
    if strict.checks_values:
        try:
            for value in values:
                strict.check_value(value)
        except RecordDecodeError:
            return None
    return values


def decode_batch(fmt: Format, datas: Sequence[bytes | None]) -> list[Any] | None:
    """Every value of the batch, or None if some record fails (decode them one by one)."""
    if isinstance(fmt, AvroFormat) and len(datas) > 1:
        decode_all = fmt.decode_all
        if decode_all is None:
            return _avro_batch(fmt, datas)
        try:
            return decode_all(datas)  # type: ignore[arg-type]
        except Exception:  # a tombstone, bad bytes, or bytes it leaves to decode_one
            return None
    if isinstance(fmt, InternalFormat):
        return fmt.decode_many(datas)
    decode = fmt.decode_one
    try:
        return [decode(d) for d in datas]
    except RecordDecodeError:
        return None


def encode_batch(fmt: Format, values: Sequence[Any]) -> list[bytes | None] | None:
    """Every value encoded, or None if some value fails (encode them one by one)."""
    try:
        if isinstance(fmt, JsonFormat):
            encode_json = _JSON_ENCODE_STRICT if fmt.strict else _JSON_ENCODE
            return [None if v is None else encode_json(v).encode() for v in values]
        if isinstance(fmt, AvroFormat | InternalFormat):
            return fmt.encode_many(values)
        if type(fmt) is StringFormat:
            try:
                return list(map(str.encode, values))
            except TypeError:  # not all of them str (None, bytes, numbers): one by one
                pass
        encode = fmt.encode_one
        return [encode(v) for v in values]
    except (RecordDecodeError, TypeError, ValueError):
        return None
