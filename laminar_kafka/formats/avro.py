"""Avro values, framed with Avro single-object encoding by default.

Single-object encoding (marker C3 01, the schema's 8-byte little-endian
CRC-64-AVRO fingerprint, then the binary body) lets a reader reject a record
written with another schema instead of decoding garbage. `framing="raw"` reads
and writes bare Avro bodies for topics whose producers use no framing.

Values are validated against the schema before they are written: fastavro's
writer alone silently truncates a float written to a long field. Bodies are
checked on read for what fastavro lets through (`avro_strict`), so that bad
bytes are refused instead of becoming wrong values.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fastavro import parse_schema, schemaless_reader
from fastavro.schema import fingerprint, to_parsing_canonical_form
from fastavro.validation import validate as validate_datum

from laminar_kafka.errors import ConfigError, RecordDecodeError
from laminar_kafka.formats.avro_decode import DecodeAll, compile_decoder
from laminar_kafka.formats.avro_strict import StrictAvro, may_overflow
from laminar_kafka.formats.avro_writer import (
    AvroBatchWriter,
    AvroWriter,
    avro_batch_writer,
    avro_writer,
)

SINGLE_OBJECT_MARKER = b"\xc3\x01"
Framing = Literal["single-object", "raw"]


def single_object_prefix(parsed_schema: Any) -> bytes:
    """The 10 bytes that open every single-object-encoded record of this schema."""
    canonical = to_parsing_canonical_form(parsed_schema)
    # fastavro's hex already lists the fingerprint's bytes little-endian.
    return SINGLE_OBJECT_MARKER + bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))


@dataclass(frozen=True)
class AvroFormat:
    """Avro records of one schema (a dict, as for fastavro).

    `validate=False` skips the per-record schema check on encode (about 2 us a
    record) for pipelines whose output is known to match the schema.
    """

    schema: Any
    framing: Framing = "single-object"
    name: str = "avro"
    validate: bool = True
    _parsed: Any = field(init=False, repr=False, compare=False)
    _prefix: bytes = field(init=False, repr=False, compare=False)
    _strict: StrictAvro = field(init=False, repr=False, compare=False)
    _writer: AvroWriter = field(init=False, repr=False, compare=False)
    _write_all: AvroBatchWriter = field(init=False, repr=False, compare=False)
    _decode_all: DecodeAll | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.framing not in ("single-object", "raw"):
            raise ConfigError(
                f"unknown Avro framing {self.framing!r}: use 'single-object' or 'raw'"
            )
        try:
            parsed = parse_schema(self.schema)
        except Exception as exc:  # fastavro raises several unrelated types here
            raise ConfigError(f"invalid Avro schema: {exc}") from None
        object.__setattr__(self, "_parsed", parsed)
        object.__setattr__(self, "_prefix", single_object_prefix(parsed))
        object.__setattr__(self, "_strict", StrictAvro(parsed))
        framed = self._prefix if self.framing == "single-object" else b""
        object.__setattr__(self, "_writer", avro_writer(parsed, framed))
        object.__setattr__(self, "_write_all", avro_batch_writer(parsed, framed))
        object.__setattr__(self, "_decode_all", compile_decoder(parsed, framed))

    def __reduce__(self) -> tuple[Any, ...]:
        # Only the settings: a worker parses the schema and builds its writer itself
        # (the writer is a closure, which does not pickle).
        return (AvroFormat, (self.schema, self.framing, self.name, self.validate))

    @property
    def single_object_prefix(self) -> bytes:
        """Marker and fingerprint that open every single-object record of this schema."""
        return self._prefix

    @property
    def parsed_schema(self) -> Any:
        return self._parsed

    @property
    def decode_all(self) -> DecodeAll | None:
        """The generated batch decoder (`avro_decode`), None for schemas it does not read."""
        return self._decode_all

    @property
    def strict(self) -> StrictAvro:
        """The checks a body must pass besides fastavro's own (shared with the batch path)."""
        return self._strict

    @classmethod
    def from_schema(cls, name: str, framing: Framing = "single-object") -> AvroFormat:
        """The format of `<name>.avsc`, looked up in `$LAMINAR_SCHEMAS`, then `schemas/`
        beside the calling file (the pipeline), then `./schemas/`, then the package's
        (`formats/schema_files.py`); a ConfigError lists where it looked."""
        from laminar_kafka.formats.schema_files import load_project_schema

        caller = sys._getframe(1).f_globals.get("__file__")
        return cls(load_project_schema(name, caller), framing=framing)

    def decode_one(self, data: bytes | None) -> Any:
        if data is None:
            return None
        start = 0
        if self.framing == "single-object":
            if data[:2] != SINGLE_OBJECT_MARKER:
                raise RecordDecodeError("not Avro single-object encoded (missing C3 01 marker)")
            if len(data) < 10:
                raise RecordDecodeError(f"Avro single-object header truncated: {len(data)} bytes")
            if data[:10] != self._prefix:
                raise RecordDecodeError(
                    f"Avro schema fingerprint {data[2:10].hex()} is not the "
                    f"pipeline's schema {self._prefix[2:].hex()} (little-endian bytes)"
                )
            start = 10
        strict = self._strict
        if strict.always_walk or may_overflow(data, start):
            strict.check_body(data, start)
        stream = io.BytesIO(memoryview(data)[start:])
        try:
            value = schemaless_reader(stream, self._parsed, None)
        except Exception as exc:  # corrupt bodies raise EOFError, IndexError, UnicodeError...
            raise RecordDecodeError(f"invalid Avro body: {type(exc).__name__}: {exc}") from None
        if stream.tell() != len(data) - start:
            extra = len(data) - start - stream.tell()
            raise RecordDecodeError(f"{extra} trailing bytes after the Avro body")
        if strict.checks_values:
            strict.check_value(value)
        return value

    def encode_one(self, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            if self.validate:
                validate_datum(value, self._parsed, raise_errors=True)
            return self._writer(value)
        except Exception as exc:
            raise RecordDecodeError(f"value does not match the Avro schema: {exc}") from None

    def encode_many(self, values: Sequence[Any]) -> list[bytes | None] | None:
        """`encode_one` of every value in one loop, or None if any value is None or fails:
        the caller then encodes them one by one, which names each bad value's error."""
        if None in values:
            return None
        try:
            if self.validate:
                for value in values:
                    validate_datum(value, self._parsed, raise_errors=True)
            return self._write_all(values)
        except Exception:  # fastavro raises many types; encode_one words them
            return None
