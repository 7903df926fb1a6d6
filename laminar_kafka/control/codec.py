"""Encode and decode control records in Avro single-object encoding.

A frame is, as the Avro specification defines it:

1. the two-byte marker C3 01;
2. the 8-byte little-endian CRC-64-AVRO (Rabin) fingerprint of the writer
   schema's Parsing Canonical Form, which names the record type;
3. the Avro binary encoding of the record.

The schemas are parsed and fingerprinted once, at import. `decode` accepts
any bytes and raises nothing but ControlRecordError: control frames share
partitions with data records, so arbitrary input must fail cleanly.

A field added to a schema later carries `"laminar.since": <version>` (absent
means version 1) and a default. Each earlier version (the schema without the
later fields) is fingerprinted too, so frames written before the field existed
still decode, with the field at its default (Avro schema resolution). A new
record kind (Heartbeat) needs no version: readers route on the control header
before they decode, so one that predates a kind never sees its frames.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from io import BytesIO
from typing import Any, TypeVar, cast

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.schema import fingerprint as avro_fingerprint
from fastavro.schema import to_parsing_canonical_form

from laminar_kafka.control.avro_fields import (
    ack_from_avro,
    ack_to_avro,
    announcement_from_avro,
    announcement_to_avro,
    barrier_from_avro,
    barrier_to_avro,
    heartbeat_from_avro,
    heartbeat_to_avro,
    watermark_from_avro,
    watermark_to_avro,
)
from laminar_kafka.control.records import (
    Ack,
    Announcement,
    Barrier,
    ControlRecord,
    Heartbeat,
    Watermark,
)
from laminar_kafka.control.schemas import load_schema
from laminar_kafka.errors import ControlRecordError

__all__ = [
    "SINGLE_OBJECT_MARKER",
    "decode",
    "decode_as",
    "encode",
    "schema_fingerprint",
]

SINGLE_OBJECT_MARKER = b"\xc3\x01"
_HEADER_LEN = len(SINGLE_OBJECT_MARKER) + 8
_PADDING = 64
_SINCE = "laminar.since"

T = TypeVar("T", bound=ControlRecord)

Frame = bytes | bytearray | memoryview
"""What `decode` reads: any bytes-like value (a consumed record's value is bytes)."""


@dataclass(frozen=True)
class _Kind:
    """One control record type: its class, parsed schema, frame header and converters."""

    cls: type[ControlRecord]
    schema: dict[str, Any]
    header: bytes
    to_avro: Callable[[Any], dict[str, Any]]
    from_avro: Callable[[dict[str, Any]], ControlRecord]
    reader: dict[str, Any] | None = None
    """The current schema when `schema` is an earlier version: frames resolve to it."""

    @property
    def fingerprint(self) -> bytes:
        return self.header[len(SINGLE_OBJECT_MARKER) :]


def _kind(
    cls: type[ControlRecord],
    to_avro: Callable[[Any], dict[str, Any]],
    from_avro: Callable[[dict[str, Any]], ControlRecord],
) -> _Kind:
    schema = load_schema(cls.kind)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise ControlRecordError(f"schema {cls.kind}.avsc must define an Avro record")
    return _Kind(cls, schema, _frame_header(schema), to_avro, from_avro)


def _frame_header(schema: dict[str, Any]) -> bytes:
    canonical = to_parsing_canonical_form(schema)
    # fastavro gives the CRC-64-AVRO bytes little-endian, as single-object encoding wants.
    return SINGLE_OBJECT_MARKER + bytes.fromhex(avro_fingerprint(canonical, "CRC-64-AVRO"))


def _earlier_versions(kind: _Kind) -> list[_Kind]:
    """Kinds that decode frames written with an earlier version of `kind`'s schema."""
    fields = kind.schema["fields"]
    since = [field.get(_SINCE, 1) for field in fields]
    for field, version in zip(fields, since, strict=True):
        if version != 1 and "default" not in field:
            raise ControlRecordError(
                f"{kind.cls.kind}.avsc: added field {field['name']!r} needs a default"
            )
    plain = {k: v for k, v in kind.schema.items() if not k.startswith("__")}  # fastavro's marks
    earlier = []
    for version in sorted(set(since))[:-1]:
        kept = [f for f, v in zip(fields, since, strict=True) if v <= version]
        writer = cast(dict[str, Any], parse_schema({**plain, "fields": kept}))
        earlier.append(
            replace(kind, schema=writer, header=_frame_header(writer), reader=kind.schema)
        )
    return earlier


_KINDS = (
    _kind(Barrier, barrier_to_avro, barrier_from_avro),
    _kind(Watermark, watermark_to_avro, watermark_from_avro),
    _kind(Announcement, announcement_to_avro, announcement_from_avro),
    _kind(Ack, ack_to_avro, ack_from_avro),
    _kind(Heartbeat, heartbeat_to_avro, heartbeat_from_avro),
)
_BY_CLASS: dict[type, _Kind] = {k.cls: k for k in _KINDS}
_READABLE = [*_KINDS, *(e for k in _KINDS for e in _earlier_versions(k))]
_BY_FINGERPRINT: dict[bytes, _Kind] = {k.fingerprint: k for k in _READABLE}
if len(_BY_FINGERPRINT) != len(_READABLE):
    raise ControlRecordError("two control record schemas share a fingerprint")


def schema_fingerprint(record_type: type[ControlRecord]) -> bytes:
    """Return the 8 fingerprint bytes (little-endian CRC-64-AVRO) that frame `record_type`."""
    kind = _BY_CLASS.get(record_type)
    if kind is None:
        raise ControlRecordError(f"{record_type!r} is not a control record type")
    return kind.fingerprint


def encode(record: ControlRecord) -> bytes:
    """Encode a control record as one Avro single-object frame."""
    kind = _BY_CLASS.get(type(record))
    if kind is None:
        raise ControlRecordError(f"cannot encode {type(record).__name__}: not a control record")
    out = BytesIO()
    out.write(kind.header)
    try:
        schemaless_writer(out, kind.schema, kind.to_avro(record))
    except (ValueError, TypeError, OverflowError) as exc:  # records validate, so rare
        raise ControlRecordError(f"cannot encode {kind.cls.__name__}: {exc}") from exc
    return out.getvalue()


def decode(data: Frame | None) -> ControlRecord:
    """Decode one single-object frame into its control record.

    Raises ControlRecordError, and nothing else, for a missing value, a short
    frame or a foreign marker, an unknown fingerprint, a truncated or invalid
    body, trailing bytes, or field values that a record refuses.
    """
    frame = _as_bytes(data)
    return _decode_body(frame, _frame_kind(frame))


def decode_as(data: Frame | None, kind: type[T]) -> T:
    """Decode a frame that must hold a `kind` record (checked before the body is read)."""
    frame = _as_bytes(data)
    found = _frame_kind(frame)
    if found.cls is not kind:
        raise ControlRecordError(
            f"expected a control record of type {kind.__name__}, got {found.cls.__name__}"
        )
    return cast(T, _decode_body(frame, found))


def _as_bytes(data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if data is None:
        raise ControlRecordError("control record has no value (a tombstone?)")
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise ControlRecordError(f"control record must be bytes, got {type(data).__name__}")


def _frame_kind(frame: bytes) -> _Kind:
    """Check the marker and look the fingerprint up; the frame is at least a full header."""
    if not frame.startswith(SINGLE_OBJECT_MARKER):
        if SINGLE_OBJECT_MARKER.startswith(frame):  # b"" or b"\xc3"
            raise ControlRecordError(_too_short(frame))
        raise ControlRecordError(
            f"not an Avro single-object frame: starts with {frame[:2].hex()}, "
            f"expected {SINGLE_OBJECT_MARKER.hex()}"
        )
    if len(frame) < _HEADER_LEN:
        raise ControlRecordError(_too_short(frame))
    kind = _BY_FINGERPRINT.get(frame[2:_HEADER_LEN])
    if kind is None:
        known = ", ".join(f"{k.cls.__name__}={k.fingerprint.hex()}" for k in _KINDS)
        raise ControlRecordError(
            f"unknown schema fingerprint {frame[2:_HEADER_LEN].hex()} "
            f"(CRC-64-AVRO, bytes as framed); known: {known}"
        )
    return kind


def _too_short(frame: bytes) -> str:
    return (
        f"control record too short: {len(frame)} bytes, a single-object frame "
        f"needs at least {_HEADER_LEN} before its body"
    )


def _decode_body(data: bytes, kind: _Kind) -> ControlRecord:
    size = len(data)
    buf = BytesIO(data)
    buf.seek(_HEADER_LEN)
    # fastavro raises many unrelated types for malformed input (EOFError,
    # IndexError for an enum or union index or a cut varint, UnicodeDecodeError,
    # ValueError, ...): all of them become one ControlRecordError.
    try:
        fields = cast(dict[str, Any], schemaless_reader(buf, kind.schema, kind.reader))
    except Exception as exc:
        if buf.tell() >= size and _wants_more(data, kind):
            raise ControlRecordError(
                f"truncated {kind.cls.__name__} body: {size} bytes end inside it "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        raise ControlRecordError(
            f"invalid {kind.cls.__name__} body: {type(exc).__name__}: {exc}"
        ) from exc
    end = buf.tell()
    if end != size:
        raise ControlRecordError(
            f"{size - end} trailing bytes after the {kind.cls.__name__} body "
            f"(body ends at byte {end} of {size})"
        )
    try:
        return kind.from_avro(fields)
    except ControlRecordError as exc:
        raise ControlRecordError(f"decoded {kind.cls.__name__} is invalid: {exc}") from exc


def _wants_more(data: bytes, kind: _Kind) -> bool:
    """Tell a body cut short from one that is wrong in its last bytes (error path only).

    fastavro does not say which: a cut varint and a bad union index at the end
    both raise IndexError. Padded with zero bytes (a valid end for every Avro
    type), a cut body reads on past the original end; a wrong one fails there.
    """
    padded = BytesIO(data + bytes(_PADDING))
    padded.seek(_HEADER_LEN)
    with contextlib.suppress(Exception):
        schemaless_reader(padded, kind.schema, kind.reader)
    return padded.tell() > len(data)
