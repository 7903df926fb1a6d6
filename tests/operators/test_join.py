"""The stream-table join operator and the table updates it reads."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka.errors import FormatMismatchError
from laminar_kafka.formats import JsonFormat, StringFormat
from laminar_kafka.formats.format_check import FormatCheck
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.join import JoinTableOp, TableSpec, update_table
from laminar_kafka.testing.memory_log import MemoryMessage

TABLE = TableSpec("customers", StringFormat(), JsonFormat())


def _ctx(rows: dict[Any, Any]) -> BatchContext:
    return BatchContext("orders", 0, 1, side={"customers": rows})


def test_inner_join_merges_the_row_and_drops_records_without_one() -> None:
    op = JoinTableOp(TABLE, "c")
    ctx = _ctx({"a": {"name": "Ann"}})
    values, offsets = op.apply([{"id": 1, "c": "a"}, {"id": 2, "c": "b"}], [10, 11], ctx)
    assert values == [{"id": 1, "c": "a", "name": "Ann"}]
    assert offsets == [10]
    assert not ctx.dead_letters


def test_left_join_keeps_records_without_a_row_merged_with_none() -> None:
    op = JoinTableOp(TABLE, lambda o: o["c"], "left", lambda o, row: (o["id"], row))
    values, offsets = op.apply([{"id": 1, "c": "a"}, {"id": 2, "c": "b"}], [5, 6], _ctx({"a": 7}))
    assert values == [(1, 7), (2, None)]
    assert offsets == [5, 6]


def test_missing_or_unhashable_join_keys_and_failing_merges_are_dead_letters() -> None:
    def merge(o: Any, row: Any) -> Any:
        if o["id"] == 4:
            raise ValueError("no")
        return o

    op = JoinTableOp(TABLE, "c", "left", merge)
    ctx = _ctx({})
    batch = [{"id": 1}, {"id": 2, "c": ["x"]}, {"id": 3, "c": None}, {"id": 4, "c": "a"}]
    values, offsets = op.apply(batch, [1, 2, 3, 4], ctx)
    assert values == [] and offsets == []
    reasons = {d.offset: d.reason for d in ctx.dead_letters}
    assert "KeyError" in reasons[1]
    assert "unhashable" in reasons[2]
    assert "missing" in reasons[3]
    assert "merge raised ValueError" in reasons[4]


def _message(offset: int, key: bytes | None, value: bytes | None) -> MemoryMessage:
    return MemoryMessage("customers", 0, offset, key, value, 0)


def test_table_keeps_the_latest_value_and_a_tombstone_deletes() -> None:
    rows: dict[Any, Any] = {}
    ctx = BatchContext("customers", 0, 1)
    batch = [
        _message(0, b"a", b'{"v": 1}'),
        _message(1, b"b", b'{"v": 2}'),
        _message(2, b"a", b'{"v": 3}'),
        _message(3, b"b", None),
        _message(4, b"never-seen", None),
    ]
    update_table(TABLE, batch, rows, ctx)
    assert rows == {"a": {"v": 3}}
    assert not ctx.dead_letters


def test_undecodable_table_records_are_dead_letters() -> None:
    rows: dict[Any, Any] = {}
    ctx = BatchContext("customers", 0, 1)
    update_table(TABLE, [_message(0, b"a", b"{not json"), _message(1, b"\xff", b"{}")], rows, ctx)
    assert rows == {}
    assert [d.offset for d in ctx.dead_letters] == [0, 1]
    assert all("table customers: undecodable" in d.reason for d in ctx.dead_letters)


def test_a_table_row_in_another_partition_than_its_key_maps_to_is_a_dead_letter() -> None:
    # murmur2 puts "a" in partition 1 of 3 and "y" in partition 0 (CRC32 elsewhere).
    rows: dict[Any, Any] = {}
    ctx = BatchContext("customers", 0, 3)
    update_table(TABLE, [_message(0, b"a", b'{"v": 1}'), _message(1, b"y", b'{"v": 2}')], rows, ctx)
    assert rows == {"y": {"v": 2}}
    [letter] = ctx.dead_letters
    assert letter.offset == 0
    assert "read from partition 0 but maps to partition 1" in letter.reason
    assert "partitioner=murmur2_random" in letter.reason
    values, _ = JoinTableOp(TABLE, "c").apply(
        [{"c": "y"}], [7], BatchContext("orders", 0, 3, side={"customers": rows})
    )
    assert values == [{"c": "y", "v": 2}]


def test_a_table_topic_of_confluent_records_stops_at_its_first_records() -> None:
    confluent = b"\x00\x00\x00\x00\x09\x02"
    check = FormatCheck(records=2)
    ctx = BatchContext("customers", 0, 1)
    with pytest.raises(FormatMismatchError, match="source topic 'customers'"):
        update_table(
            TABLE, [_message(0, b"a", confluent), _message(1, b"b", confluent)], {}, ctx, check
        )


def test_after_a_good_table_record_a_confluent_one_is_a_dead_letter_naming_it() -> None:
    confluent = b"\x00\x00\x00\x00\x09\x02"
    check = FormatCheck(records=2)
    ctx = BatchContext("customers", 0, 1)
    batch = [
        _message(0, b"a", b'{"v": 1}'),
        _message(1, b"b", confluent),
        _message(2, b"c", confluent),
    ]
    rows: dict[Any, Any] = {}
    update_table(TABLE, batch, rows, ctx, check)
    assert rows == {"a": {"v": 1}}
    assert [d.offset for d in ctx.dead_letters] == [1, 2]
    assert all(
        "Confluent wire format (magic byte 0, schema id 9)" in d.reason for d in ctx.dead_letters
    )
