"""Avro values, framed with Avro single-object encoding by default.

Single-object encoding (marker C3 01, the schema's 8-byte little-endian
CRC-64-AVRO fingerprint, then the binary body) lets a reader reject a record
written with another schema instead of decoding garbage. `framing="raw"` reads
and writes bare Avro bodies for topics whose producers use no framing.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Literal

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.schema import fingerprint, to_parsing_canonical_form

from laminar_kafka.errors import ConfigError, RecordDecodeError

SINGLE_OBJECT_MARKER = b"\xc3\x01"
Framing = Literal["single-object", "raw"]


def single_object_prefix(parsed_schema: Any) -> bytes:
    """The 10 bytes that open every single-object-encoded record of this schema."""
    canonical = to_parsing_canonical_form(parsed_schema)
    value = int(fingerprint(canonical, "CRC-64-AVRO"), 16)
    return SINGLE_OBJECT_MARKER + value.to_bytes(8, "little")


@dataclass(frozen=True)
class AvroFormat:
    """Avro records of one schema (a dict, as for fastavro)."""

    schema: Any
    framing: Framing = "single-object"
    name: str = "avro"
    _parsed: Any = field(init=False, repr=False, compare=False)
    _prefix: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.framing not in ("single-object", "raw"):
            raise ConfigError(f"unknown Avro framing {self.framing!r}: use 'single-object' or 'raw'")
        try:
            parsed = parse_schema(self.schema)
        except Exception as exc:  # fastavro raises several unrelated types here
            raise ConfigError(f"invalid Avro schema: {exc}") from None
        object.__setattr__(self, "_parsed", parsed)
        object.__setattr__(self, "_prefix", single_object_prefix(parsed))

    @classmethod
    def from_schema(cls, name: str, framing: Framing = "single-object") -> AvroFormat:
        """The format of `schemas/<name>.avsc`."""
        from laminar_kafka.control.schemas import load_schema

        return cls(load_schema(name), framing=framing)

    def decode_one(self, data: bytes | None) -> Any:
        if data is None:
            return None
        body = memoryview(data)
        if self.framing == "single-object":
            if len(data) < 10 or data[:2] != SINGLE_OBJECT_MARKER:
                raise RecordDecodeError("not Avro single-object encoded (missing C3 01 marker)")
            if data[:10] != self._prefix:
                raise RecordDecodeError(
                    f"Avro schema fingerprint {data[2:10][::-1].hex()} is not the "
                    f"pipeline's schema {self._prefix[2:][::-1].hex()}"
                )
            body = body[10:]
        stream = io.BytesIO(body)
        try:
            value = schemaless_reader(stream, self._parsed, None)
        except Exception as exc:  # corrupt bodies raise EOFError, IndexError, UnicodeError...
            raise RecordDecodeError(f"invalid Avro body: {type(exc).__name__}: {exc}") from None
        if stream.tell() != len(body):
            raise RecordDecodeError(f"{len(body) - stream.tell()} trailing bytes after the Avro body")
        return value

    def encode_one(self, value: Any) -> bytes | None:
        if value is None:
            return None
        stream = io.BytesIO()
        if self.framing == "single-object":
            stream.write(self._prefix)
        try:
            schemaless_writer(stream, self._parsed, value)
        except Exception as exc:
            raise RecordDecodeError(f"value does not match the Avro schema: {exc}") from None
        return stream.getvalue()
