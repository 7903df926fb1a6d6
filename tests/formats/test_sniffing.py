"""`sniff`: a record a format refused names the known encoding it is in, if any."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from laminar_kafka.formats import AvroFormat, JsonFormat, StringFormat, avro_from_registry
from laminar_kafka.formats.base import Format
from laminar_kafka.formats.registry import wire_header
from laminar_kafka.formats.sniffing import sniff

POINT: dict[str, Any] = {
    "type": "record",
    "name": "Point",
    "namespace": "laminar.test",
    "fields": [{"name": "x", "type": "long"}, {"name": "label", "type": "string"}],
}
OTHER: dict[str, Any] = {**POINT, "name": "Other"}
VALUE = {"x": 7, "label": "seven"}


def body(schema: dict[str, Any] = POINT, value: dict[str, Any] = VALUE) -> bytes:
    import io

    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), value)
    return out.getvalue()


AVRO = AvroFormat(POINT)
REGISTRY = avro_from_registry("http://127.0.0.1:1", "points-value")


@pytest.mark.parametrize("fmt", [AVRO, AvroFormat(POINT, framing="raw"), JsonFormat()])
def test_the_confluent_wire_format_names_its_schema_id_and_the_registry_format(
    fmt: Format,
) -> None:
    found = sniff(wire_header(42) + body(), fmt)
    assert found is not None
    assert "Confluent wire format" in found.name and found.detail == "magic byte 0, schema id 42"
    assert "avro_from_registry" in found.advice


def test_confluent_json_schema_bodies_are_told_apart() -> None:
    found = sniff(wire_header(3) + b'{"x": 1}', AVRO)
    assert found is not None and "JSON bodies" in found.name and "JSON Schema" in found.detail
    assert "avro_from_registry" not in found.advice


def test_single_object_records_suggest_avro_format() -> None:
    data = AVRO.encode_one(VALUE)
    assert data is not None
    for fmt in (JsonFormat(), AvroFormat(POINT, framing="raw"), REGISTRY):
        found = sniff(data, fmt)
        assert found is not None and "single-object" in found.name, fmt
        assert "AvroFormat(schema)" in found.advice


def test_single_object_records_of_another_schema_name_both_fingerprints() -> None:
    data = AvroFormat(OTHER).encode_one(VALUE)
    assert data is not None
    found = sniff(data, AVRO)
    assert found is not None and "another schema" in found.name
    assert data[2:10].hex() in found.detail and AVRO.single_object_prefix[2:].hex() in found.detail


def test_a_corrupt_body_under_the_right_prefix_is_a_bad_record() -> None:
    assert sniff(AVRO.single_object_prefix + b"\xff\xff\xff", AVRO) is None


@pytest.mark.parametrize("fmt", [AVRO, REGISTRY])
def test_json_objects_suggest_json_format(fmt: Format) -> None:
    found = sniff(json.dumps(VALUE).encode(), fmt)
    assert found is not None and found.name == "JSON" and "JsonFormat()" in found.advice


def test_bare_avro_bodies_suggest_raw_framing() -> None:
    found = sniff(body(), AVRO)
    assert found is not None and 'framing="raw"' in found.advice


@pytest.mark.parametrize(
    "data",
    [
        None,
        b"",
        b"\x00\x00\x00\x00\x00zz",  # schema id 0 is no registry's
        b"\x00\x01",  # too short for a header
        b"\xc3\x01\x00",  # a marker without its fingerprint
        b"not json {",
        b"42",  # a bare JSON number proves little
        b"\xde\xad\xbe\xef",
    ],
)
def test_unknown_or_garbled_bytes_are_no_known_encoding(data: bytes | None) -> None:
    assert sniff(data, AVRO) is None


def test_a_format_is_never_told_to_use_itself() -> None:
    assert sniff(wire_header(1) + body(), REGISTRY) is None
    assert sniff(b"\xff\xfe", StringFormat()) is None
