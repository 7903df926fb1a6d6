"""Decode and encode whole batches: the hot path of every task.

A batch of Avro bodies is decoded in one call by framing it as an Avro array
(block count, the bodies back to back, end marker): one fastavro call per batch
instead of one per record, about three times faster. If anything in the batch
is malformed, or the array does not end exactly where the bytes do, the batch
is decoded again record by record so that each bad record gets its own error.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

from fastavro import parse_schema, schemaless_reader

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats.avro import AvroFormat
from laminar_kafka.formats.base import Format
from laminar_kafka.formats.json import JsonFormat

_ARRAY_SCHEMAS: dict[int, tuple[AvroFormat, Any]] = {}
# The same settings as JsonFormat.encode_one, built once instead of per record.
_JSON_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str, allow_nan=False).encode


def _zigzag_varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _array_schema(fmt: AvroFormat) -> Any:
    cached = _ARRAY_SCHEMAS.get(id(fmt))
    if cached is None or cached[0] is not fmt:
        cached = (fmt, parse_schema({"type": "array", "items": fmt.schema}))
        _ARRAY_SCHEMAS[id(fmt)] = cached
    return cached[1]


def _avro_batch(fmt: AvroFormat, datas: Sequence[bytes | None]) -> list[Any] | None:
    """All records decoded at once, or None when the batch needs the careful path."""
    if fmt.framing == "single-object":
        prefix = fmt.single_object_prefix
        if not all(d is not None and d[:10] == prefix for d in datas):
            return None
        bodies = [d[10:] for d in datas if d is not None]
    else:
        if any(d is None for d in datas):
            return None
        bodies = list(datas)  # type: ignore[arg-type]
    framed = _zigzag_varint(len(bodies)) + b"".join(bodies) + b"\x00"
    stream = io.BytesIO(framed)
    try:
        values = schemaless_reader(stream, _array_schema(fmt), None)
    except Exception:
        return None
    if not isinstance(values, list) or stream.tell() != len(framed) or len(values) != len(bodies):
        return None
    return values


def decode_batch(fmt: Format, datas: Sequence[bytes | None]) -> list[Any] | None:
    """Every value of the batch, or None if some record fails (decode them one by one)."""
    if isinstance(fmt, AvroFormat) and len(datas) > 1:
        return _avro_batch(fmt, datas)
    decode = fmt.decode_one
    try:
        return [decode(d) for d in datas]
    except RecordDecodeError:
        return None


def encode_batch(fmt: Format, values: Sequence[Any]) -> list[bytes | None] | None:
    """Every value encoded, or None if some value fails (encode them one by one)."""
    try:
        if isinstance(fmt, JsonFormat):
            return [None if v is None else _JSON_ENCODE(v).encode() for v in values]
        encode = fmt.encode_one
        return [encode(v) for v in values]
    except (RecordDecodeError, TypeError, ValueError):
        return None
