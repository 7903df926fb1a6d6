"""What encoding a record that its format refused is in, when it is a known one.

A source whose format does not match its topic (Avro single-object expected,
Confluent wire format found) would turn every record into a dead letter. The
runtime asks `sniff` about the records that fail to decode; a known encoding
names itself and the format to use instead, both for the dead letter's reason
and for the error that stops a run whose first records all look alike
(`formats/format_check.py`). Only records that already failed are sniffed, so
a topic in the right format costs nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats.avro import SINGLE_OBJECT_MARKER, AvroFormat
from laminar_kafka.formats.base import Format
from laminar_kafka.formats.registry import MAGIC_BYTE, RegistryAvroFormat

__all__ = ["Encoding", "sniff"]

_REGISTRY_ADVICE = "use value_format=avro_from_registry(url, subject=...) (docs/own-kafka.md)"


@dataclass(frozen=True)
class Encoding:
    """A known encoding a record was found in: `name` groups records of one kind,
    `detail` is this record's (a schema id, a fingerprint), `advice` the fix."""

    name: str
    detail: str
    advice: str

    def describe(self) -> str:
        return f"{self.name} ({self.detail})" if self.detail else self.name


def sniff(data: bytes | None, fmt: Format) -> Encoding | None:
    """The known encoding `data` is in, other than `fmt`'s own, or None.

    None for a record that matches no known encoding, or `fmt`'s own with a
    corrupt body: that one is a bad record, not a wrong format.
    """
    if not data:
        return None
    for check in (_confluent, _single_object, _json, _bare_avro):
        found = check(data, fmt)
        if found is not None:
            return found
    return None


def _confluent(data: bytes, fmt: Format) -> Encoding | None:
    """Magic byte 0 and a positive 4-byte schema id: what Confluent's serializers write."""
    if isinstance(fmt, RegistryAvroFormat) or len(data) < 5 or data[0] != MAGIC_BYTE:
        return None
    schema_id = int.from_bytes(data[1:5], "big")
    if not 0 < schema_id < 2**31:
        return None
    if _is_json(data[5:]):
        return Encoding(
            "the Confluent wire format with JSON bodies",
            f"Confluent's JSON Schema serializer, schema id {schema_id}",
            "laminar-kafka reads only Avro from a registry: read BytesFormat() and "
            "json.loads(value[5:]) in a map, or have the producers write plain JSON",
        )
    return Encoding(
        "the Confluent wire format",
        f"magic byte 0, schema id {schema_id}",
        _REGISTRY_ADVICE,
    )


def _single_object(data: bytes, fmt: Format) -> Encoding | None:
    """Avro single-object encoding: marker C3 01 and the schema's 8-byte fingerprint."""
    if len(data) < 10 or data[:2] != SINGLE_OBJECT_MARKER:
        return None
    fingerprint = data[2:10].hex()
    if isinstance(fmt, AvroFormat) and fmt.framing == "single-object":
        if data[:10] == fmt.single_object_prefix:
            return None  # the right schema: a corrupt body
        return Encoding(
            "Avro single-object encoding of another schema",
            f"fingerprint {fingerprint}, the source's schema has "
            f"{fmt.single_object_prefix[2:].hex()}",
            "give AvroFormat the schema the producers write with",
        )
    return Encoding(
        "Avro single-object encoding (marker C3 01)",
        f"fingerprint {fingerprint}",
        "use value_format=AvroFormat(schema), the schema the producers write with",
    )


def _json(data: bytes, fmt: Format) -> Encoding | None:
    if not _is_json(data):
        return None
    return Encoding("JSON", "", "use value_format=JsonFormat()")


def _bare_avro(data: bytes, fmt: Format) -> Encoding | None:
    """A body with no framing that reads as the source's own schema."""
    if not isinstance(fmt, AvroFormat) or fmt.framing != "single-object":
        return None
    if data[:2] == SINGLE_OBJECT_MARKER:
        return None  # a truncated single-object header, not a body
    try:
        _raw_twin(fmt).decode_one(data)
    except RecordDecodeError:
        return None
    return Encoding(
        "bare Avro bodies (no single-object marker)",
        "",
        'use value_format=AvroFormat(schema, framing="raw")',
    )


_TWINS: dict[int, tuple[AvroFormat, AvroFormat]] = {}


def _raw_twin(fmt: AvroFormat) -> AvroFormat:
    """`fmt` reading bare bodies, built once per format object."""
    cached = _TWINS.get(id(fmt))
    if cached is None or cached[0] is not fmt:
        cached = (fmt, AvroFormat(fmt.schema, framing="raw", validate=fmt.validate))
        _TWINS[id(fmt)] = cached
    return cached[1]


def _is_json(data: bytes) -> bool:
    """Whether `data` is a JSON object or array (a bare number or string proves little)."""
    text = data.lstrip()[:1]
    if text not in (b"{", b"["):
        return False
    try:
        parsed: Any = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(parsed, dict | list)
