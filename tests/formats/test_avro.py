"""AvroFormat: single-object framing as the Avro specification defines it, and raw bodies."""

from __future__ import annotations

import io
import pickle
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from laminar_kafka.control.schemas import load_schema
from laminar_kafka.errors import ConfigError, RecordDecodeError
from laminar_kafka.formats import AvroFormat
from laminar_kafka.formats.avro import SINGLE_OBJECT_MARKER, single_object_prefix

ORDER = {"id": 7, "customer": "alice", "amount": 1250, "ts_ms": 1_700_000_000_000, "product": "p7"}
POINT: dict[str, Any] = {
    "type": "record",
    "name": "Point",
    "fields": [{"name": "x", "type": "long"}, {"name": "label", "type": "string"}],
}


def _body(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), value)
    return out.getvalue()


@pytest.mark.parametrize(
    ("schema", "java_fingerprint"),
    [
        # Avro's own schema-tests data gives these CRC-64-AVRO fingerprints as signed
        # Java longs; single-object encoding writes them little-endian.
        ("null", 7195948357588979594),
        ("int", 8247732601305521295),
        ({"name": "foo", "type": "record", "fields": []}, -4824392279771201922),
    ],
)
def test_prefix_is_marker_then_little_endian_fingerprint(
    schema: Any, java_fingerprint: int
) -> None:
    expected = java_fingerprint.to_bytes(8, "little", signed=True)
    assert single_object_prefix(parse_schema(schema)) == SINGLE_OBJECT_MARKER + expected


def test_single_object_frame_is_prefix_then_binary_body() -> None:
    fmt = AvroFormat.from_schema("order")
    frame = fmt.encode_one(ORDER)
    assert frame is not None
    assert frame[:10] == single_object_prefix(parse_schema(load_schema("order")))
    assert frame[10:] == _body(load_schema("order"), ORDER)
    assert fmt.decode_one(frame) == ORDER


def test_raw_framing_is_the_bare_body() -> None:
    fmt = AvroFormat(POINT, framing="raw")
    data = fmt.encode_one({"x": -3, "label": "p"})
    assert data == _body(POINT, {"x": -3, "label": "p"})
    assert fmt.decode_one(data) == {"x": -3, "label": "p"}


def test_none_is_a_tombstone_both_ways() -> None:
    for fmt in (AvroFormat(POINT), AvroFormat(POINT, framing="raw")):
        assert fmt.encode_one(None) is None
        assert fmt.decode_one(None) is None


def test_frame_of_another_schema_is_refused_with_both_fingerprints() -> None:
    order = AvroFormat.from_schema("order")
    point = AvroFormat(POINT)
    frame = point.encode_one({"x": 1, "label": "a"})
    with pytest.raises(RecordDecodeError, match="fingerprint") as info:
        order.decode_one(frame)
    assert single_object_prefix(parse_schema(POINT))[2:].hex() in str(info.value)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "missing C3 01 marker"),
        (b'{"id": 1}', "missing C3 01 marker"),
        (SINGLE_OBJECT_MARKER + b"\x00\x01", "truncated: 4 bytes"),
    ],
)
def test_unframed_or_truncated_headers_are_refused(data: bytes, reason: str) -> None:
    with pytest.raises(RecordDecodeError, match=reason):
        AvroFormat(POINT).decode_one(data)


def test_corrupt_and_overlong_bodies_are_refused() -> None:
    fmt = AvroFormat(POINT)
    frame = fmt.encode_one({"x": 1, "label": "abc"})
    assert frame is not None
    with pytest.raises(RecordDecodeError, match="invalid Avro body"):
        fmt.decode_one(frame[:-2])  # the string is cut short
    with pytest.raises(RecordDecodeError, match="2 trailing bytes"):
        fmt.decode_one(frame + b"\x00\x00")
    with pytest.raises(RecordDecodeError, match="invalid Avro body"):
        AvroFormat(POINT, framing="raw").decode_one(b"\x02\xff\xff\xff\xff\xff")


@pytest.mark.parametrize(
    "value",
    [
        {"x": 1.5, "label": "a"},  # fastavro's writer alone would write 1
        {"x": True, "label": "a"},
        {"x": 2**63, "label": "a"},
        {"x": "1", "label": "a"},
        {"label": "a"},
        "not a record",
    ],
)
def test_values_that_do_not_match_the_schema_are_refused(value: Any) -> None:
    with pytest.raises(RecordDecodeError, match="does not match the Avro schema"):
        AvroFormat(POINT).encode_one(value)


def test_validation_can_be_turned_off_for_speed() -> None:
    assert AvroFormat(POINT, validate=False).encode_one({"x": 2, "label": "a"}) == AvroFormat(
        POINT
    ).encode_one({"x": 2, "label": "a"})


def test_bad_schema_or_framing_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="invalid Avro schema"):
        AvroFormat({"type": "record", "name": "R", "fields": [{"name": "a", "type": "nope"}]})
    with pytest.raises(ConfigError, match="unknown Avro framing 'confluent'"):
        AvroFormat(POINT, framing="confluent")  # type: ignore[arg-type]


def test_format_survives_pickling_to_workers() -> None:
    fmt = AvroFormat.from_schema("order")
    copy = pickle.loads(pickle.dumps(fmt))
    assert copy.decode_one(fmt.encode_one(ORDER)) == ORDER
    assert copy == fmt
