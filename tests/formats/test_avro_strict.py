"""Bad bytes never become wrong values: what fastavro accepts is refused, one record or a batch."""

from __future__ import annotations

import datetime
import decimal
import io
import pickle
import uuid
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import AvroFormat
from laminar_kafka.formats.avro_strict import may_overflow
from laminar_kafka.formats.batch import _marker, decode_batch

ORDER = {"id": 7, "customer": "alice", "amount": 1250, "ts_ms": 1_700_000_000_000, "product": "p7"}


def _record(*fields: tuple[str, Any]) -> dict[str, Any]:
    return {
        "type": "record",
        "name": "R",
        "fields": [{"name": n, "type": t} for n, t in fields],
    }


def _body(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), value)
    return out.getvalue()


def _refused(fmt: AvroFormat, data: bytes, reason: str, good: Any) -> None:
    """Refused one by one, and a batch holding it falls back instead of decoding it."""
    with pytest.raises(RecordDecodeError, match=reason):
        fmt.decode_one(data)
    valid = fmt.encode_one(good)
    assert decode_batch(fmt, [valid, valid]) == [good, good]
    assert decode_batch(fmt, [valid, data, valid]) is None


NULLABLE = AvroFormat(_record(("v", ["null", "string", "long"])), framing="raw")


@pytest.mark.parametrize("index", [-1, -2, -3, 3, 2**40])
def test_union_index_out_of_range_is_refused(index: int) -> None:
    # fastavro alone reads -1 as the last branch: 0x01 0x04 would be the long 2.
    _refused(NULLABLE, _body("long", index) + b"\x04", "union branch index", {"v": 2})


def test_enum_index_out_of_range_is_refused() -> None:
    fmt = AvroFormat(
        _record(("e", {"type": "enum", "name": "E", "symbols": ["A", "B"]})), framing="raw"
    )
    assert fmt.decode_one(b"\x02") == {"e": "B"}
    _refused(fmt, b"\x01", "enum index -1", {"e": "A"})
    _refused(fmt, b"\x04", "enum index 2", {"e": "A"})


@pytest.mark.parametrize("byte", [2, 0x7F, 0xFF])
def test_boolean_byte_other_than_0_or_1_is_refused(byte: int) -> None:
    fmt = AvroFormat(_record(("b", "boolean")), framing="raw")
    assert fmt.decode_one(b"\x01") == {"b": True}
    _refused(fmt, bytes([byte]), "boolean byte", {"b": True})


def test_int_beyond_32_bits_is_refused_on_the_fast_path_too() -> None:
    fmt = AvroFormat(_record(("n", "int"), ("s", "string")))
    assert not fmt.strict.always_walk  # checked on the decoded value, not walked
    prefix = fmt.single_object_prefix
    assert fmt.decode_one(prefix + _body("long", 2**31 - 1) + b"\x00") == {"n": 2**31 - 1, "s": ""}
    _refused(fmt, prefix + _body("long", 2**31) + b"\x00", "beyond 32 bits", {"n": 1, "s": ""})
    _refused(
        fmt, prefix + _body("long", -(2**31) - 1) + b"\x00", "beyond 32 bits", {"n": 1, "s": ""}
    )


@pytest.mark.parametrize(
    "varint",
    [
        b"\xff" * 10 + b"\x01",  # eleven bytes
        b"\x80" * 10 + b"\x00",  # eleven bytes, even of a zero
        b"\xff" * 9 + b"\x02",  # ten bytes, but bits past 64
        b"\x80" * 9 + b"\x7f",
    ],
)
def test_varint_beyond_64_bits_is_refused(varint: bytes) -> None:
    fmt = AvroFormat.from_schema("order")
    assert not fmt.strict.always_walk
    data = fmt.single_object_prefix + varint + _body(fmt.schema, ORDER)[1:]
    _refused(fmt, data, "longer than 64 bits", ORDER)


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63), 2**62, -(2**62) - 1])
def test_ten_byte_longs_are_valid_and_keep_the_fast_path(value: int) -> None:
    fmt = AvroFormat.from_schema("order")
    order = {**ORDER, "amount": value}
    data = fmt.encode_one(order)
    assert data is not None and may_overflow(data, 10)
    assert fmt.decode_one(data) == order
    assert decode_batch(fmt, [data, data]) == [order, order]


def test_overlong_but_in_range_varints_decode_to_their_value() -> None:
    fmt = AvroFormat.from_schema("order")
    data = fmt.single_object_prefix + b"\x8e\x80\x80\x00" + _body(fmt.schema, ORDER)[1:]
    assert fmt.decode_one(data) == ORDER
    assert decode_batch(fmt, [data, data]) == [ORDER, ORDER]


def test_negative_lengths_are_refused() -> None:
    fmt = AvroFormat(_record(("s", "string"), ("b", "bytes")), framing="raw")
    _refused(fmt, b"\x03ab\x00", "invalid Avro body", {"s": "ab", "b": b""})
    _refused(fmt, b"\x00\x03ab", "invalid Avro body", {"s": "", "b": b"ab"})


def test_negative_block_count_needs_its_true_byte_size() -> None:
    fmt = AvroFormat(_record(("a", {"type": "array", "items": "long"})), framing="raw")
    # Count -2, then the block's byte size (2: the two one-byte longs 1 and 2), then the end.
    assert fmt.decode_one(b"\x03\x04\x02\x04\x00") == {"a": [1, 2]}
    _refused(fmt, b"\x03\x06\x02\x04\x00", "block byte size 3", {"a": [1, 2]})
    maps = AvroFormat(_record(("m", {"type": "map", "values": "long"})), framing="raw")
    assert maps.decode_one(b"\x01\x06\x02k\x02\x00") == {"m": {"k": 1}}
    _refused(maps, b"\x01\x10\x02k\x02\x00", "block byte size 8", {"m": {"k": 1}})


def test_two_records_whose_length_errors_cancel_out_are_both_refused() -> None:
    fmt = AvroFormat.from_schema("order")
    first, second = fmt.encode_one(ORDER), fmt.encode_one({**ORDER, "id": 8})
    assert first is not None and second is not None
    prefix = fmt.single_object_prefix
    # The boundary moved by 3 bytes: back to back, the bodies are still two good orders.
    shifted = [first + second[10:13], prefix + second[13:]]
    for data in shifted:
        with pytest.raises(RecordDecodeError):
            fmt.decode_one(data)
    assert decode_batch(fmt, shifted) is None
    assert decode_batch(fmt, [first, *shifted, second]) is None
    assert decode_batch(fmt, [first, second]) == [ORDER, {**ORDER, "id": 8}]


def test_a_record_that_refers_to_itself_decodes_in_batches() -> None:
    node = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "v", "type": "long"}, {"name": "next", "type": ["null", "Node"]}],
    }
    fmt = AvroFormat(node)
    chain = {"v": 1, "next": {"v": 2, "next": None}}
    data = fmt.encode_one(chain)
    assert decode_batch(fmt, [data, data]) == [chain, chain]


@pytest.mark.parametrize(
    ("schema", "value"),
    [("string", "x"), (["null", "long"], 5), ({"type": "array", "items": "long"}, [1, 2])],
)
def test_schemas_other_than_records_decode_in_batches(schema: Any, value: Any) -> None:
    for framing in ("single-object", "raw"):
        fmt = AvroFormat(schema, framing=framing)
        data = fmt.encode_one(value)
        assert decode_batch(fmt, [data, data, data]) == [value, value, value]


def test_tombstones_take_the_careful_path() -> None:
    fmt = AvroFormat.from_schema("order")
    assert decode_batch(fmt, [fmt.encode_one(ORDER), None]) is None


def test_marker_occurs_nowhere_in_the_batch_and_cannot_overlap_itself() -> None:
    # Every two-byte pattern but a few: a marker must still be found, and be absent.
    joined = bytes(range(256)) * 64
    for _ in range(200):
        marker = _marker(joined)
        assert marker not in joined
        assert marker[0] not in marker[1:] and marker[-1] != 0
        assert all(marker[:k] != marker[-k:] for k in range(1, len(marker)))


def test_checks_survive_pickling_to_workers() -> None:
    copy = pickle.loads(pickle.dumps(NULLABLE))
    assert copy.decode_one(b"\x02\x02x") == {"v": "x"}
    with pytest.raises(RecordDecodeError, match="union branch index -1"):
        copy.decode_one(b"\x01\x04")


KITCHEN_SINK: dict[str, Any] = {
    "type": "record",
    "name": "Sink",
    "namespace": "test.kitchen",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "raw", "type": "bytes"},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "fx2", "type": "Four"},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["R", "G", "B"]}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {
            "name": "inner",
            "type": {
                "type": "record",
                "name": "Inner",
                "fields": [{"name": "c", "type": ["null", "Color", "Four"]}],
            },
        },
        {"name": "inners", "type": {"type": "array", "items": "Inner"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "double", "Inner"]}},
        {"name": "empty", "type": {"type": "array", "items": "null"}},
        {
            "name": "money",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        },
    ],
}


def test_every_type_decodes_alike_one_by_one_and_in_batches() -> None:
    def value(k: int) -> dict[str, Any]:
        inner = {"c": ["R", None, b"abcd"][k % 3]}
        return {
            "n": None,
            "b": k % 2 == 0,
            "i": -k,
            "l": datetime.datetime(2024, 1, 1, 0, 0, k, tzinfo=datetime.UTC),
            "f": 0.5,
            "d": -1.25,
            "s": uuid.UUID(int=k),
            "raw": bytes(range(k)),
            "fx": b"wxyz",
            "fx2": b"1234",
            "e": "B",
            "day": datetime.date(2024, 2, 1 + k),
            "inner": inner,
            "inners": [inner] * k,
            "m": {"x": None, "y": 2.0, "z": inner} if k else {},
            "empty": [None] * k,
            "money": decimal.Decimal(f"{k}.25"),
        }

    for framing in ("single-object", "raw"):
        fmt = AvroFormat(KITCHEN_SINK, framing=framing)
        assert fmt.strict.always_walk
        values = [value(k) for k in range(5)]
        datas = [fmt.encode_one(v) for v in values]
        decoded = [fmt.decode_one(d) for d in datas]
        assert decode_batch(fmt, datas) == decoded
        assert [d["i"] for d in decoded] == [0, -1, -2, -3, -4]
        assert decoded[2]["inners"] == [{"c": b"abcd"}] * 2
        assert decoded[2]["money"] == decimal.Decimal("2.25")
