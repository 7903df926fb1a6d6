"""The as-of join operator and the versions of the table it reads."""

from __future__ import annotations

from typing import Any

from laminar_kafka.formats import JsonFormat, StringFormat
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.base import BatchContext, ResultOffset, result_time
from laminar_kafka.operators.event_time import NO_WATERMARK, EventTime
from laminar_kafka.operators.join import TableSpec
from laminar_kafka.operators.versions import Versions, prune, put_version, version_at

TABLE = TableSpec("prices", StringFormat(), JsonFormat(), True, EventTime(), 10_000)
OP = AsOfJoinOp(TABLE, "p", "left", step="join")


def test_a_lookup_finds_the_newest_version_at_or_before_its_time() -> None:
    versions: dict[Any, Versions] = {}
    put_version(versions, "a", 20, "second")
    put_version(versions, "a", 10, "first")  # out of order: put in its place
    put_version(versions, "a", 30, None)  # deleted at 30
    put_version(versions, "a", 20, "second, again")  # the same time: the later wins
    found = versions["a"]
    assert [version_at(found, t) for t in (9, 10, 19, 20, 29, 30, 99)] == [
        None,
        "first",
        "first",
        "second, again",
        "second, again",
        None,
        None,
    ]
    put_version(versions, "never-seen", 5, None)
    assert "never-seen" not in versions


def test_pruning_keeps_the_newest_version_at_or_before_the_horizon() -> None:
    versions: dict[Any, Versions] = {}
    for ts, value in [(10, "a"), (20, "b"), (30, "c"), (40, "d")]:
        put_version(versions, "k", ts, value)
    prune(versions, "k", 25)
    assert versions["k"] == [(20, "b"), (30, "c"), (40, "d")]
    assert version_at(versions["k"], 25) == "b"  # a lookup at the horizon still answers
    prune(versions, "k", 5)  # a horizon behind every version drops nothing
    assert len(versions["k"]) == 3
    put_version(versions, "k", 50, None)
    prune(versions, "k", 60)  # the newest at the horizon is a deletion: all can go
    assert "k" not in versions


def _ctx(times: dict[int, int], versions: dict[Any, Versions], watermark: int) -> BatchContext:
    return BatchContext(
        "trades",
        0,
        1,
        times=times,
        side={"prices": versions},
        side_watermarks={"prices": watermark},
    )


def test_a_record_above_the_table_watermark_waits_until_it_passes() -> None:
    versions: dict[Any, Versions] = {"x": [(100, {"price": 1})]}
    ctx = _ctx({0: 150, 1: 90}, versions, 120)
    out, offsets = OP.apply([{"p": "x", "id": 0}, {"p": "x", "id": 1}], [0, 1], ctx)
    assert out == [{"p": "x", "id": 1}]  # 90: before the first version, a left join's miss
    assert [result_time(o) for o in offsets] == [90]
    state = ctx.tables  # the waiting record, and its timer
    assert ctx.table("join") == {"x": {150: [(0, {"p": "x", "id": 0})]}}

    # The table changes at 140, written after the record; then its watermark passes 150.
    put_version(versions, "x", 140, {"price": 2})
    ctx = BatchContext("trades", 0, 1, state, side={"prices": versions})
    assert OP.apply([], [], ctx) == ([], [])  # no watermark: still waiting
    later = BatchContext(
        "trades", 0, 1, state, side={"prices": versions}, side_watermarks={"prices": 150}
    )
    out, offsets = OP.apply([], [], later)
    assert out == [{"p": "x", "id": 0, "price": 2}]
    assert offsets == [0] and isinstance(offsets[0], ResultOffset)
    assert result_time(offsets[0]) == 150  # stamped with its record's time
    assert later.table("join") == {}


def test_a_record_behind_the_retention_is_late_and_joins_nothing() -> None:
    versions: dict[Any, Versions] = {"x": [(100, {"price": 1})]}
    ctx = _ctx({0: 100, 1: 39_999, 2: 40_000}, versions, 50_000)  # horizon 40_000
    out, offsets = OP.apply([{"p": "x"}, {"p": "x"}, {"p": "x"}], [0, 1, 2], ctx)
    assert offsets == [2]
    assert out == [{"p": "x", "price": 1}]
    assert [r.offset for r in ctx.late] == [0, 1]


def test_an_inner_join_drops_a_miss_and_bad_keys_are_dead_letters() -> None:
    versions: dict[Any, Versions] = {"x": [(100, {"price": 1}), (200, None)]}
    ctx = _ctx({0: 150, 1: 250, 2: 150, 3: 150, 4: 150}, versions, 300)
    inner = AsOfJoinOp(TABLE, "p", "inner", step="join")
    batch = [{"p": "x"}, {"p": "x"}, {"q": 1}, {"p": None}, {"p": ["x"]}]
    out, offsets = inner.apply(batch, [0, 1, 2, 3, 4], ctx)
    assert out == [{"p": "x", "price": 1}]  # 250: deleted at 200
    assert offsets == [0]
    reasons = {d.offset: d.reason for d in ctx.dead_letters}
    assert "KeyError" in reasons[2]
    assert "missing" in reasons[3]
    assert "unhashable" in reasons[4]
    assert ctx.table("join") == {}  # none of them waits


def test_without_a_table_watermark_every_record_waits() -> None:
    ctx = _ctx({0: 1}, {}, NO_WATERMARK)
    assert OP.apply([{"p": "x"}], [0], ctx) == ([], [])
    assert ctx.table("join") == {"x": {1: [(0, {"p": "x"})]}}
