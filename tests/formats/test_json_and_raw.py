"""JsonFormat, BytesFormat and StringFormat: round trips, tombstones and clear refusals."""

from __future__ import annotations

import math
from typing import Any

import pytest

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import BytesFormat, JsonFormat, StringFormat
from laminar_kafka.formats.batch import encode_batch


@pytest.mark.parametrize(
    "value", [{"id": 1, "tags": ["a", "é"], "nested": {"ok": True}}, [1, 2.5], "text", 0, False]
)
def test_json_round_trip(value: Any) -> None:
    fmt = JsonFormat()
    data = fmt.encode_one(value)
    assert data is not None
    assert fmt.decode_one(data) == value


def test_json_is_compact_utf8() -> None:
    assert JsonFormat().encode_one({"a": 1, "b": "é"}) == b'{"a":1,"b":"\\u00e9"}'


def test_json_writes_unknown_types_as_strings() -> None:
    assert JsonFormat().encode_one({"v": 1j}) == b'{"v":"1j"}'


def test_json_none_is_a_tombstone() -> None:
    assert JsonFormat().encode_one(None) is None
    assert JsonFormat().decode_one(None) is None


@pytest.mark.parametrize("data", [b"{", b"\xff\xfe\x00", b"", b"{'single': 1}"])
def test_json_refuses_what_is_not_json(data: bytes) -> None:
    with pytest.raises(RecordDecodeError, match="not valid JSON"):
        JsonFormat().decode_one(data)


@pytest.mark.parametrize("value", [{"x": math.nan}, {"x": math.inf}, {(1, 2): "tuple key"}])
def test_json_refuses_values_other_readers_could_not_read(value: Any) -> None:
    with pytest.raises(RecordDecodeError, match="not encodable as JSON"):
        JsonFormat().encode_one(value)


def test_bytes_format_passes_bytes_through() -> None:
    fmt = BytesFormat()
    assert fmt.decode_one(b"\x00k") == b"\x00k"
    assert fmt.encode_one(b"\x00k") == b"\x00k"
    assert fmt.decode_one(None) is None and fmt.encode_one(None) is None
    with pytest.raises(RecordDecodeError, match="cannot encode str"):
        fmt.encode_one("text")


def test_string_format() -> None:
    fmt = StringFormat()
    assert fmt.decode_one("ключ".encode()) == "ключ"
    assert fmt.encode_one("ключ") == "ключ".encode()
    assert fmt.encode_one(42) == b"42"
    assert fmt.encode_one(b"raw") == b"raw"
    assert fmt.decode_one(None) is None and fmt.encode_one(None) is None
    with pytest.raises(RecordDecodeError, match="not valid UTF-8"):
        fmt.decode_one(b"\xff")


def test_format_names() -> None:
    assert [f.name for f in (JsonFormat(), BytesFormat(), StringFormat())] == [
        "json",
        "bytes",
        "string",
    ]


def test_strict_json_refuses_what_json_has_no_type_for() -> None:
    import datetime

    value = {"at": datetime.date(2026, 1, 2)}
    assert JsonFormat().encode_one(value) == b'{"at":"2026-01-02"}'
    with pytest.raises(RecordDecodeError, match="not encodable as JSON"):
        JsonFormat(strict=True).encode_one(value)
    assert encode_batch(JsonFormat(strict=True), [value]) is None  # then one by one
    assert encode_batch(JsonFormat(strict=True), [{"n": 1}]) == [b'{"n":1}']
