"""A versioned table's records: stamped, kept as versions, pruned behind the watermark."""

from __future__ import annotations

from laminar_kafka.formats import JsonFormat, StringFormat
from laminar_kafka.formats.format_check import FormatCheck
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.event_time import EventTime, Progress
from laminar_kafka.operators.join import TableSpec
from laminar_kafka.runtime.task.event_clock import EventClock
from laminar_kafka.runtime.task.table_updates import update_versions
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.testing.memory_log import MemoryMessage

NOW = 1_700_000_000_000


def _table(timestamp: str = "kafka", out_of_order_ms: int = 0) -> TableSpec:
    clock = EventTime(timestamp, out_of_order_ms)
    return TableSpec("prices", StringFormat(), JsonFormat(), True, clock, 1_000)


def _message(offset: int, key: bytes, value: bytes | None, ts: int) -> MemoryMessage:
    return MemoryMessage("prices", 0, offset, key, value, ts)


def _apply(spec: TableSpec, tables: dict[str, KeyedState], batch: list[MemoryMessage]) -> bool:
    ctx = BatchContext("prices", 0, 1, tables, messages=batch)
    rose = update_versions(spec, ctx, batch, EventClock(lambda: NOW), FormatCheck())
    tables["#letters"] = KeyedState({d.offset: d.reason for d in ctx.dead_letters})
    tables["#late"] = KeyedState({r.offset: None for r in ctx.late})
    return rose


def test_versions_are_pruned_with_the_horizon_the_batch_started_from() -> None:
    spec, tables = _table(), dict[str, KeyedState]()
    assert _apply(spec, tables, [_message(0, b"a", b'{"v": 1}', 100)])
    assert _apply(spec, tables, [_message(1, b"a", b'{"v": 2}', 900)])
    assert Progress.of(tables).watermark == 900
    # At 5000 the horizon is 4000, but the batch started at 900 (horizon -100): kept.
    assert _apply(spec, tables, [_message(2, b"a", b'{"v": 3}', 5000)])
    assert not tables["#late"].table
    assert tables["table:prices"].table["a"] == [(100, {"v": 1}), (900, {"v": 2}), (5000, {"v": 3})]
    # The next change of "a" prunes behind 4000: 900 stays, the newest at the horizon.
    assert not _apply(spec, tables, [_message(3, b"a", b'{"v": 4}', 4500)])  # out of order
    assert list(tables["#late"].table) == [3]  # kept, but counted late
    versions = tables["table:prices"].table["a"]
    assert versions == [(900, {"v": 2}), (4500, {"v": 4}), (5000, {"v": 3})]


def test_a_tombstone_takes_its_kafka_time_when_the_table_reads_a_field() -> None:
    spec, tables = _table("ts"), dict[str, KeyedState]()
    batch = [
        _message(0, b"a", b'{"v": 1, "ts": 100}', 5),
        _message(1, b"a", None, 200),  # no value to read "ts" of
        _message(2, b"b", b'{"v": 2}', 300),  # no "ts": a dead letter
        _message(3, b"c", b'{"v": 3, "ts": -4}', 300),  # a dead letter too
    ]
    assert _apply(spec, tables, batch)
    assert tables["table:prices"].table == {"a": [(100, {"v": 1, "ts": 100}), (200, None)]}
    letters = tables["#letters"].table
    assert sorted(letters) == [2, 3]
    assert letters[2].startswith("no event time: KeyError")
    assert Progress.of(tables).watermark == 200
