"""map, filter, flat_map: the batch fast path, and per-record dead letters when user code raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from laminar_kafka.operators import BatchContext, FilterOp, FlatMapOp, MapOp
from laminar_kafka.operators.base import DeadLetter, describe_error

OFFSETS = [10, 11, 12, 13]


def _ctx() -> BatchContext:
    raw = {o: (f"k{o}".encode(), f"v{o}".encode()) for o in OFFSETS}
    return BatchContext("src", 2, 4, raw_by_offset=raw)


def _counting(fn: Callable[[Any], Any]) -> tuple[Callable[[Any], Any], list[Any]]:
    calls: list[Any] = []

    def wrapped(v: Any) -> Any:
        calls.append(v)
        return fn(v)

    return wrapped, calls


def test_map_fast_path_calls_once_per_record() -> None:
    fn, calls = _counting(lambda v: v * 10)
    ctx = _ctx()
    assert MapOp(fn).apply([1, 2, 3, 4], OFFSETS, ctx) == ([10, 20, 30, 40], OFFSETS)
    assert calls == [1, 2, 3, 4]
    assert ctx.dead_letters == []


def test_map_falls_back_per_record_and_dead_letters_only_the_failures() -> None:
    fn, calls = _counting(lambda v: 12 // v)
    ctx = _ctx()
    values, offsets = MapOp(fn).apply([1, 0, 3, 0], OFFSETS, ctx)
    assert (values, offsets) == ([12, 4], [10, 12])
    assert calls == [1, 0, 1, 0, 3, 0]  # the batch attempt up to 0, then record by record
    assert ctx.dead_letters == [
        DeadLetter(
            "src",
            2,
            11,
            "map raised ZeroDivisionError: integer division or modulo by zero",
            key=b"k11",
            value=b"v11",
        ),
        DeadLetter(
            "src",
            2,
            13,
            "map raised ZeroDivisionError: integer division or modulo by zero",
            key=b"k13",
            value=b"v13",
        ),
    ]


def test_filter_fast_path_and_truthiness() -> None:
    ctx = _ctx()
    assert FilterOp(lambda v: v % 2).apply([1, 2, 3, 4], OFFSETS, ctx) == ([1, 3], [10, 12])
    assert ctx.dead_letters == []


def test_filter_drops_and_dead_letters_a_record_whose_predicate_raises() -> None:
    ctx = _ctx()
    values, offsets = FilterOp(lambda v: v["amount"] > 0).apply(
        [{"amount": 5}, {}, {"amount": -1}, {"amount": 2}], OFFSETS, ctx
    )
    assert values == [{"amount": 5}, {"amount": 2}]
    assert offsets == [10, 13]
    assert [(d.offset, d.reason) for d in ctx.dead_letters] == [
        (11, "filter raised KeyError: 'amount'")
    ]


def test_flat_map_expands_with_repeated_offsets_and_dead_letters_failures() -> None:
    def explode(v: int) -> list[int]:
        if v == 3:
            raise ValueError("three")
        return [v] * v

    ctx = _ctx()
    values, offsets = FlatMapOp(explode).apply([0, 2, 3, 1], OFFSETS, ctx)
    assert values == [2, 2, 1]
    assert offsets == [11, 11, 13]
    assert [(d.offset, d.reason, d.value) for d in ctx.dead_letters] == [
        (12, "flat_map raised ValueError: three", b"v12")
    ]


def test_dead_letter_without_raw_bytes_still_names_the_record() -> None:
    ctx = BatchContext("src", 0, 1)
    MapOp(lambda v: v.upper()).apply([1], [99], ctx)
    assert ctx.dead_letters == [
        DeadLetter(
            "src",
            0,
            99,
            describe_error("map", AttributeError("'int' object has no attribute 'upper'")),
        )
    ]


def test_empty_batch() -> None:
    for op in (MapOp(str), FilterOp(bool), FlatMapOp(lambda v: [v])):
        assert op.apply([], [], _ctx()) == ([], [])
