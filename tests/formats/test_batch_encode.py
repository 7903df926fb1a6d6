"""encode_batch: the same bytes as encoding value by value, or None so that each bad value
gets its own error on the one-by-one path."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import AvroFormat, StringFormat
from laminar_kafka.formats.batch import encode_batch

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "product", "type": "string"},
        {"name": "note", "type": ["null", "string"]},
    ],
}
ORDERS = [{"id": i, "product": f"p{i % 7}", "note": None if i % 2 else "gift"} for i in range(50)]


@pytest.mark.parametrize("framing", ["single-object", "raw"])
@pytest.mark.parametrize("validate", [True, False])
def test_a_batch_encodes_as_value_by_value(framing: Any, validate: bool) -> None:
    fmt = AvroFormat(SCHEMA, framing=framing, validate=validate)
    assert encode_batch(fmt, ORDERS) == [fmt.encode_one(v) for v in ORDERS]


@pytest.mark.parametrize("validate", [True, False])
def test_a_value_that_does_not_fit_sends_the_batch_one_by_one(validate: bool) -> None:
    fmt = AvroFormat(SCHEMA, validate=validate)
    bad = [*ORDERS[:3], {"id": "not a number", "product": "p", "note": None}]
    assert encode_batch(fmt, bad) is None
    with pytest.raises(RecordDecodeError):
        fmt.encode_one(bad[-1])


def test_a_tombstone_among_avro_values_is_kept_by_the_one_by_one_path() -> None:
    fmt = AvroFormat(SCHEMA, validate=False)
    assert encode_batch(fmt, [ORDERS[0], None]) is None
    assert fmt.encode_one(None) is None


def test_string_keys_encode_as_utf8_and_other_values_as_str_encode_one_does() -> None:
    fmt = StringFormat()
    assert encode_batch(fmt, ["a", "é"]) == [b"a", "é".encode()]
    mixed = ["a", None, b"raw", 7]
    assert encode_batch(fmt, mixed) == [b"a", None, b"raw", b"7"]
    assert encode_batch(fmt, mixed) == [fmt.encode_one(v) for v in mixed]
