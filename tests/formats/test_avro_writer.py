"""avro_writer: fastavro's compiled core when it writes what schemaless_writer writes."""

from __future__ import annotations

import datetime
import decimal
import io
import random
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer
from fastavro.utils import generate_many

from laminar_kafka.formats import avro_writer as module
from laminar_kafka.formats.avro_writer import avro_batch_writer, avro_writer

PREFIX = b"\xc3\x01" + bytes(range(8))

# Named types referred to by name, unions, logical types: what a writer must resolve.
SCHEMA = parse_schema(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "customer", "type": "string"},
            {
                "name": "address",
                "type": {
                    "type": "record",
                    "name": "Address",
                    "fields": [{"name": "city", "type": "string"}],
                },
            },
            {"name": "billing", "type": ["null", "Address"]},
            {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["A", "B"]}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "attrs", "type": {"type": "map", "values": ["null", "double"]}},
            {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {
                "name": "price",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            },
        ],
    }
)

ORDER = {
    "id": -7,
    "customer": "zoë",
    "address": {"city": "Lyon"},
    "billing": {"city": "Nantes"},
    "status": "B",
    "tags": ["a", "b"],
    "attrs": {"w": 1.5, "h": None},
    "digest": b"\x00\x01\x02\x03",
    "at": datetime.datetime(2026, 11, 27, 12, 0, tzinfo=datetime.UTC),
    "price": decimal.Decimal("12.34"),
}


def _reference(value: Any, prefix: bytes = PREFIX) -> bytes:
    stream = io.BytesIO()
    stream.write(prefix)
    schemaless_writer(stream, SCHEMA, value)
    return stream.getvalue()


def test_the_compiled_writer_is_chosen_and_writes_what_schemaless_writer_writes() -> None:
    write = avro_writer(SCHEMA, PREFIX)
    assert write.__qualname__.startswith("_direct_writer")
    for value in [ORDER, *generate_many(SCHEMA, 200)]:
        assert write(value) == _reference(value)
    assert avro_writer(SCHEMA, b"")(ORDER) == _reference(ORDER, b"")


def test_a_batch_is_cut_into_what_schemaless_writer_writes_of_each_value() -> None:
    values = [ORDER, *generate_many(SCHEMA, 200)]
    for prefix in (PREFIX, b""):
        write_all = avro_batch_writer(SCHEMA, prefix)
        assert write_all.__qualname__.startswith("avro_batch_writer.<locals>.write_all")
        assert write_all(values) == [_reference(v, prefix) for v in values]
        assert write_all([]) == []


def test_a_value_that_does_not_fit_the_schema_raises() -> None:
    with pytest.raises(Exception, match="id"):  # fastavro's own error types vary
        avro_writer(SCHEMA, PREFIX)({**ORDER, "id": "seven"})


def test_an_internal_writer_that_writes_otherwise_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = module._write_data

    def drifted(buffer: bytearray, *args: Any) -> None:
        real(buffer, *args)
        buffer += b"\x00"  # as if its output had changed between fastavro versions

    monkeypatch.setattr(module, "_write_data", drifted)
    write = avro_writer(SCHEMA, PREFIX)
    assert write.__qualname__.startswith("_portable_writer")
    assert write(ORDER) == _reference(ORDER)
    assert avro_batch_writer(SCHEMA, PREFIX)([ORDER, ORDER]) == [_reference(ORDER)] * 2


def test_an_internal_writer_that_writes_one_value_right_but_not_two_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = module._write_data

    def restarts(buffer: bytearray, *args: Any) -> None:
        buffer.clear()  # as if it wrote from the buffer's start instead of appending
        real(buffer, *args)

    monkeypatch.setattr(module, "_write_data", restarts)
    write_all = avro_batch_writer(SCHEMA, b"")
    assert not write_all.__qualname__.startswith("avro_batch_writer.<locals>.write_all")
    assert write_all([ORDER, ORDER]) == [_reference(ORDER, b"")] * 2


def test_an_internal_writer_that_fails_or_is_missing_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def changed_signature(buffer: bytearray) -> None:
        raise TypeError("write_data() takes 1 positional argument")

    monkeypatch.setattr(module, "_write_data", changed_signature)
    assert avro_writer(SCHEMA, PREFIX)(ORDER) == _reference(ORDER)
    monkeypatch.setattr(module, "_write_data", None)
    write = avro_writer(SCHEMA, PREFIX)
    assert write.__qualname__.startswith("_portable_writer")
    assert write(ORDER) == _reference(ORDER)


def test_the_probe_leaves_the_global_random_generator_as_it_was() -> None:
    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    avro_writer(SCHEMA, PREFIX)
    assert [random.random() for _ in range(3)] == expected
