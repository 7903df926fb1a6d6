"""The benchmark record: a 100-byte Avro value, and fast encode/decode helpers.

Every benchmark and baseline reads and writes these records, so all systems pay
the same decode/encode cost. Values are schemaless Avro binary (no framing):
the benchmarks measure throughput, and every system under test reads the same
bytes with the same schema.

Input record `i` (0-based) is fully determined by `i`, so any consumer can
check what it read without keeping a copy of what was written.
"""

from __future__ import annotations

import io
import json
from typing import Any, Final, cast

from fastavro import parse_schema, schemaless_reader, schemaless_writer

__all__ = [
    "COUNT_SCHEMA",
    "COUNT_SCHEMA_JSON",
    "DEFAULT_NUM_KEYS",
    "NUM_PRODUCTS",
    "RECORD_SCHEMA",
    "RECORD_SCHEMA_JSON",
    "VALUE_SIZE",
    "Record",
    "amount_of",
    "decode_avro",
    "decode_count",
    "decode_record",
    "encode_avro",
    "encode_count",
    "encode_record",
    "key_of",
    "long_size",
    "make_record",
    "padding",
    "product_of",
]

Record = dict[str, Any]

VALUE_SIZE: Final = 100
DEFAULT_NUM_KEYS: Final = 1000
NUM_PRODUCTS: Final = 97
"""Distinct `product_of` values. Prime, so a record's product (its id mod 97) is
independent of its `key` (a function of its id mod `num_keys`, 1000 by default):
every product has records in every input partition."""

RECORD_SCHEMA_JSON: Final = json.dumps(
    {
        "type": "record",
        "name": "BenchRecord",
        "namespace": "laminar_kafka.bench",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "key", "type": "string"},
            {"name": "amount", "type": "long"},
            {"name": "payload", "type": "string"},
        ],
    }
)
"""Input and stateless-output records: `id`, `key`, `amount`, padding `payload`."""

COUNT_SCHEMA_JSON: Final = json.dumps(
    {
        "type": "record",
        "name": "KeyCount",
        "namespace": "laminar_kafka.bench",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "key", "type": "string"},
            {"name": "count", "type": "long"},
        ],
    }
)
"""Keyed-workload output: the input `id`, its `key`, and the key's running count."""

RECORD_SCHEMA: Final = parse_schema(json.loads(RECORD_SCHEMA_JSON))
COUNT_SCHEMA: Final = parse_schema(json.loads(COUNT_SCHEMA_JSON))

_PAD: Final = "abcdefghijklmnopqrstuvwxyz0123456789" * 4
# Odd multiplier (Knuth's) so consecutive ids land on scattered keys.
_KEY_SPREAD: Final = 2654435761


def long_size(value: int) -> int:
    """Bytes of Avro's zig-zag varint encoding of `value`."""
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def key_of(record_id: int, num_keys: int = DEFAULT_NUM_KEYS) -> str:
    """The key of input record `record_id`: one of `num_keys` keys, spread."""
    return f"key-{(record_id * _KEY_SPREAD) % num_keys:06d}"


def product_of(record_id: int) -> str:
    """The product of input record `record_id`: the rekey workload's new key."""
    return f"product-{record_id % NUM_PRODUCTS:02d}"


def make_record(record_id: int, num_keys: int = DEFAULT_NUM_KEYS) -> Record:
    """Input record `record_id`, padded so that its encoding is `VALUE_SIZE` bytes."""
    key = key_of(record_id, num_keys)
    amount = amount_of(record_id)
    fixed = long_size(record_id) + 1 + len(key) + long_size(amount)
    return {"id": record_id, "key": key, "amount": amount, "payload": padding(fixed)}


def amount_of(record_id: int) -> int:
    """The `amount` of input record `record_id`."""
    return (record_id * 37) % 100_000


def padding(fixed: int) -> str:
    """The payload that makes a record whose other fields encode to `fixed` bytes
    `VALUE_SIZE` bytes long (the key's length prefix counted in `fixed`)."""
    # The payload's length prefix takes 1 byte below 64 characters, 2 above.
    pad = VALUE_SIZE - fixed - 1
    if pad >= 64:
        pad -= 1
    return _PAD[:pad]


def encode_avro(schema: Any, record: Record) -> bytes:
    """Schemaless Avro binary of `record` under the parsed `schema`."""
    buf = io.BytesIO()
    schemaless_writer(buf, schema, record)
    return buf.getvalue()


def decode_avro(schema: Any, value: bytes) -> Record:
    """Inverse of `encode_avro`."""
    return cast(Record, schemaless_reader(io.BytesIO(value), schema, None))


def encode_record(record: Record) -> bytes:
    """Schemaless Avro binary of a `RECORD_SCHEMA` record."""
    return encode_avro(RECORD_SCHEMA, record)


def decode_record(value: bytes) -> Record:
    """Inverse of `encode_record`."""
    return decode_avro(RECORD_SCHEMA, value)


def encode_count(record: Record) -> bytes:
    """Schemaless Avro binary of a `COUNT_SCHEMA` record."""
    return encode_avro(COUNT_SCHEMA, record)


def decode_count(value: bytes) -> Record:
    """Inverse of `encode_count`."""
    return decode_avro(COUNT_SCHEMA, value)
