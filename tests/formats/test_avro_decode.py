"""The generated batch decoder: which schemas get one, and that it gives up, never guesses."""

from __future__ import annotations

import math
import pickle
from typing import Any

import pytest

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import AvroFormat
from laminar_kafka.formats.batch import decode_batch

PRIMITIVES: dict[str, Any] = {
    "type": "record",
    "name": "Every",
    "namespace": "test.decode",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": {"type": "long"}},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "raw", "type": "bytes"},
        {"name": "s", "type": "string"},
        {"name": "u", "type": ["null", "long", "string"]},
    ],
}


def _record(name: str, field_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": "x", "type": field_type}]}


def _every(**changes: Any) -> dict[str, Any]:
    value = {"n": None, "b": True, "i": -7, "l": 2**63 - 1, "f": 0.5, "d": -1.25}
    return value | {"raw": b"\x00\xff", "s": "prix 5 €", "u": "x"} | changes


@pytest.mark.parametrize(
    "field_type",
    [
        {"type": "enum", "name": "E", "symbols": ["A"]},
        {"type": "fixed", "name": "F", "size": 2},
        {"type": "array", "items": "long"},
        {"type": "map", "values": "long"},
        {"type": "long", "logicalType": "timestamp-millis"},
        ["null", {"type": "string", "logicalType": "uuid"}],
        "Self",  # a record that refers to itself
    ],
    ids=["enum", "fixed", "array", "map", "timestamp", "uuid", "recursive"],
)
def test_schemas_it_does_not_read_keep_fastavro(field_type: Any) -> None:
    if field_type == "Self":
        field_type = ["null", "Self"]
    fmt = AvroFormat(_record("Self", field_type), framing="raw")
    assert fmt.decode_all is None


def test_every_primitive_decodes_as_fastavro_does() -> None:
    fmt = AvroFormat(PRIMITIVES)
    values = [
        _every(),
        _every(b=False, i=2**31 - 1, l=-(2**63), u=None, raw=b"", s=""),
        _every(i=-(2**31), l=0, f=-math.inf, d=1e308, u=-(2**40), s="😀" * 70),
    ]
    datas = [fmt.encode_one(v) for v in values]
    assert fmt.decode_all is not None
    decoded = fmt.decode_all(datas)  # type: ignore[arg-type]
    assert decoded == [fmt.decode_one(d) for d in datas] == values
    assert [list(v) for v in decoded] == [[f["name"] for f in PRIMITIVES["fields"]]] * 3


def test_nested_records_and_references_to_them_decode() -> None:
    inner = {"type": "record", "name": "In", "fields": [{"name": "k", "type": "string"}]}
    schema = {
        "type": "record",
        "name": "Out",
        "fields": [{"name": "a", "type": inner}, {"name": "b", "type": ["null", "In"]}],
    }
    fmt = AvroFormat(schema, framing="raw")
    values = [{"a": {"k": "x"}, "b": None}, {"a": {"k": ""}, "b": {"k": "y"}}]
    assert fmt.decode_all is not None
    assert fmt.decode_all([fmt.encode_one(v) for v in values]) == values  # type: ignore[misc]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\x80\x80\x80\x80\x10", "beyond 32 bits"),  # int 2**31 (zigzag)
        (b"\x02\xff", "invalid Avro body"),  # UTF-8 refused
        (b"\x02a\x00", "trailing bytes"),
        (b"\x04a", "Expected 2 bytes"),
    ],
    ids=["int-range", "utf-8", "trailing", "truncated"],
)
def test_a_bad_record_gives_up_the_batch_and_keeps_its_reason(body: bytes, reason: str) -> None:
    field_type = "int" if reason == "beyond 32 bits" else "string"
    fmt = AvroFormat(_record("R", field_type), framing="raw")
    good = fmt.encode_one({"x": 1 if field_type == "int" else "ok"})
    assert decode_batch(fmt, [good, body]) is None
    with pytest.raises(RecordDecodeError, match=reason):
        fmt.decode_one(body)


def test_an_overlong_union_index_leaves_the_value_to_the_careful_path() -> None:
    fmt = AvroFormat(_record("R", ["null", "long"]), framing="raw")
    overlong = b"\x82\x00\x04"  # union index 1 in two bytes, then the long 2
    assert decode_batch(fmt, [overlong, overlong]) is None
    assert fmt.decode_one(overlong) == {"x": 2}


def test_ten_byte_varints_decode_and_eleven_give_up() -> None:
    fmt = AvroFormat(_record("R", "long"), framing="raw")
    longest = b"\xff" * 9 + b"\x01"  # zigzag of -(2**63)
    assert decode_batch(fmt, [longest, b"\x00"]) == [{"x": -(2**63)}, {"x": 0}]
    assert decode_batch(fmt, [b"\xff" * 9 + b"\x02", b"\x00"]) is None
    assert decode_batch(fmt, [b"\xff" * 10 + b"\x01", b"\x00"]) is None


def test_another_schemas_prefix_gives_up() -> None:
    fmt = AvroFormat(_record("R", "long"))
    other = AvroFormat(_record("Q", "long"))
    assert decode_batch(fmt, [fmt.encode_one({"x": 1}), other.encode_one({"x": 1})]) is None


def test_the_decoder_is_generated_again_after_pickling_to_workers() -> None:
    fmt = pickle.loads(pickle.dumps(AvroFormat(PRIMITIVES, framing="raw")))
    data = fmt.encode_one(_every())
    assert fmt.decode_all is not None
    assert fmt.decode_all([data, data]) == [_every(), _every()]  # type: ignore[list-item]
