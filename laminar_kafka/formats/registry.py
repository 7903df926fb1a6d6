"""Avro values whose schemas live in a schema registry (the Confluent wire format).

Every record is a magic byte 0, the 4-byte big-endian id of the schema it was
written with, then the Avro body. Decoding fetches the writer's schema by id
(once per process, see `registry_client`) and, given a reader schema, resolves
the body into it by Avro's schema-resolution rules: a record written before a
field was added reads with the field's default, one written after reads
without the fields the reader does not know. Without a reader schema, each
record reads as it was written.

A record whose magic byte is wrong, whose schema id the registry does not
know, or whose writer schema the reader cannot resolve raises
RecordDecodeError with the reason, so the pipeline sends it to its dead-letter
topic. A registry that cannot be reached raises RegistryUnavailableError
instead: the task fails and is retried, no record is dead-lettered for it.

Encoding writes with `writer_schema`, else `reader_schema`, registering it
under `subject` first if `auto_register` (else it must already be there);
with neither, it writes with the subject's latest version.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.validation import validate as validate_datum

from laminar_kafka.errors import ConfigError, RecordDecodeError
from laminar_kafka.formats.registry_client import (
    ClientConfig,
    SchemaRegistryAccess,
    WriterSchema,
    canonical,
    encode_writers,
)

__all__ = ["MAGIC_BYTE", "RegistryAvroFormat", "avro_from_registry", "wire_header"]

MAGIC_BYTE = 0
_HEADER = 5


def wire_header(schema_id: int) -> bytes:
    """The 5 bytes that open every record written with schema `schema_id`."""
    return bytes([MAGIC_BYTE]) + schema_id.to_bytes(4, "big")


def avro_from_registry(
    url: str,
    subject: str,
    *,
    reader_schema: Any = None,
    writer_schema: Any = None,
    auto_register: bool = True,
    validate: bool = True,
    client_config: Mapping[str, Any] | None = None,
) -> RegistryAvroFormat:
    """Avro in the Confluent wire format (magic byte, schema id), schemas in a registry.

    Sources decode each record with the schema its id names, resolved into
    `reader_schema` when given; sinks write with `writer_schema` (else
    `reader_schema`, else the subject's latest), registered under `subject`
    if `auto_register`. `client_config` adds settings of confluent-kafka's
    SchemaRegistryClient (e.g. `basic.auth.user.info`).
    """
    config = tuple(sorted((str(k), v) for k, v in (client_config or {}).items()))
    if any(key == "url" for key, _ in config):
        raise ConfigError("give the registry URL as `url`, not in client_config")
    return RegistryAvroFormat(
        url.rstrip("/"),
        subject,
        reader_schema=reader_schema,
        writer_schema=writer_schema,
        auto_register=auto_register,
        validate=validate,
        client_config=config,
    )


@dataclass(frozen=True)
class RegistryAvroFormat:
    """Avro in the Confluent wire format, schemas in the registry at `url`.

    Made by `avro_from_registry`. Picklable: only the settings travel; a worker
    opens its own client.
    """

    url: str
    subject: str
    reader_schema: Any = None
    writer_schema: Any = None
    auto_register: bool = True
    validate: bool = True
    client_config: ClientConfig = ()
    name: str = "avro-registry"
    _reader: Any = field(init=False, repr=False, compare=False)
    _reader_text: str | None = field(init=False, repr=False, compare=False)
    _registry: SchemaRegistryAccess = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.url or not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"schema registry URL must be http(s)://...: {self.url!r}")
        if not self.subject:
            raise ConfigError("a registry format needs a subject")
        reader = None
        for label, schema in (("reader", self.reader_schema), ("writer", self.writer_schema)):
            if schema is None:
                continue
            try:
                parsed = parse_schema(schema)
            except Exception as exc:  # fastavro raises several unrelated types here
                raise ConfigError(f"invalid Avro {label} schema: {exc}") from None
            if label == "reader":
                reader = parsed
        object.__setattr__(self, "_reader", reader)
        object.__setattr__(self, "_reader_text", None if reader is None else canonical(reader))
        object.__setattr__(self, "_registry", SchemaRegistryAccess(self.url, self.client_config))

    def __reduce__(self) -> tuple[Any, ...]:
        # Only the settings: parsed schemas are rebuilt, clients opened where used.
        return (
            RegistryAvroFormat,
            (
                self.url,
                self.subject,
                self.reader_schema,
                self.writer_schema,
                self.auto_register,
                self.validate,
                self.client_config,
                self.name,
            ),
        )

    @property
    def registry(self) -> SchemaRegistryAccess:
        """This format's view of the registry (a process-wide client, opened on first use)."""
        return self._registry

    def writer(self) -> WriterSchema:
        """The registered schema `encode_one` writes with (registering it if asked to)."""
        key = self._encode_key()
        cached = encode_writers.get(key)
        if cached is not None:
            return cached
        schema = self.writer_schema if self.writer_schema is not None else self.reader_schema
        if schema is None:
            writer = self.registry.latest(self.subject)
        else:
            writer = self.registry.schema_for(self.subject, schema, self.auto_register)
        encode_writers[key] = writer
        return writer

    def _encode_key(self) -> str:
        schema = self.writer_schema if self.writer_schema is not None else self.reader_schema
        parts = (self.url, self.subject, schema, self.auto_register, self.client_config)
        return json.dumps(parts, sort_keys=True, default=str)

    def decode_one(self, data: bytes | None) -> Any:
        if data is None:
            return None
        if len(data) < _HEADER:
            raise RecordDecodeError(
                f"not in the schema registry wire format: {len(data)} bytes, "
                f"shorter than the {_HEADER}-byte header"
            )
        if data[0] != MAGIC_BYTE:
            raise RecordDecodeError(
                f"not in the schema registry wire format: magic byte {data[0]:#04x}, "
                f"expected {MAGIC_BYTE:#04x}"
            )
        schema_id = int.from_bytes(data[1:_HEADER], "big")
        writer = self._registry.writer(schema_id)
        if self._reader is None or writer.canonical == self._reader_text:
            try:
                return writer.fmt.decode_one(data[_HEADER:])
            except RecordDecodeError as exc:
                raise RecordDecodeError(f"schema id {schema_id}: {exc}") from None
        return self._resolve(writer, data)

    def _resolve(self, writer: WriterSchema, data: bytes) -> Any:
        """The body read with the writer's schema, resolved into the reader's."""
        try:
            writer.fmt.strict.check_body(data, _HEADER)  # every check, ints included
        except RecordDecodeError as exc:
            raise RecordDecodeError(f"schema id {writer.schema_id}: {exc}") from None
        stream = io.BytesIO(memoryview(data)[_HEADER:])
        try:
            value = schemaless_reader(stream, writer.parsed, self._reader)
        except Exception as exc:  # resolution errors, corrupt bodies: several types
            raise RecordDecodeError(
                f"schema id {writer.schema_id} cannot be read as the reader schema: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if stream.tell() != len(data) - _HEADER:
            extra = len(data) - _HEADER - stream.tell()
            raise RecordDecodeError(
                f"schema id {writer.schema_id}: {extra} trailing bytes after the Avro body"
            )
        return value

    def encode_one(self, value: Any) -> bytes | None:
        if value is None:
            return None
        writer = self.writer()
        out = io.BytesIO()
        out.write(wire_header(writer.schema_id))
        try:
            if self.validate:
                validate_datum(value, writer.parsed, raise_errors=True)
            schemaless_writer(out, writer.parsed, value)
        except Exception as exc:
            raise RecordDecodeError(
                f"value does not match the Avro schema id {writer.schema_id}: {exc}"
            ) from None
        return out.getvalue()
