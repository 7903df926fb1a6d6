"""The interval join over batches: matches at the interval's edges, out-of-order records,
buffers dropped by the watermark, late records, and unmatched records of left and outer
joins emitted once when the watermark passes their interval."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka.operators.base import BatchContext, result_time
from laminar_kafka.operators.interval_join import IntervalJoinOp, SideKey, Tagged
from tests.operators.window_batches import window_batch

STEP = "j"
Rec = tuple[str, int, str, int, int]
"""(key, side "a" or "b", id, timestamp, watermark after it)."""


def _pair(a: Any, b: Any) -> tuple[Any, Any]:
    return (a and a["id"], b and b["id"])


def _op(how: str = "inner", before: int = 5, after: int = 10) -> IntervalJoinOp:
    return IntervalJoinOp(before, after, how, _pair, step=STEP)  # type: ignore[arg-type]


def _run(
    op: IntervalJoinOp,
    records: list[tuple[str, str, str, int, int]],
    tables: dict[str, Any] | None = None,
    watermark: int | None = None,
) -> tuple[list[Any], list[int], BatchContext]:
    _, offsets, ctx = window_batch([(k, ts, wm) for k, _, _, ts, wm in records], tables, watermark)
    values = [(k, [0 if s == "a" else 1, {"id": i}]) for k, s, i, _, _ in records]
    out, kept = op.apply(values, offsets, ctx)
    return out, kept, ctx


def test_pairs_at_both_edges_of_the_interval_and_not_beyond() -> None:
    # a at 100 matches b in [95, 110].
    records = [
        ("k", "a", "a1", 100, 0),
        ("k", "b", "b-early", 94, 0),
        ("k", "b", "b-first", 95, 0),
        ("k", "b", "b-last", 110, 0),
        ("k", "b", "b-late", 111, 0),
        ("other", "b", "b-other-key", 100, 0),
    ]
    out, kept, _ = _run(_op(), records)
    assert out == [("a1", "b-first"), ("a1", "b-last")]
    # Stamped with the later of the pair's times, under the record that made the pair.
    assert [(int(o), result_time(o)) for o in kept] == [(2, 100), (3, 110)]


def test_a_record_out_of_order_within_the_watermark_meets_earlier_partners() -> None:
    # b first, then an a earlier in time (still above the watermark): b is buffered for it.
    records = [("k", "b", "b1", 120, 50), ("k", "a", "a1", 112, 50), ("k", "a", "a0", 60, 55)]
    out, kept, _ = _run(_op(), records)
    assert out == [("a1", "b1")]
    assert result_time(kept[0]) == 120


def test_a_record_below_the_watermark_is_late_and_joins_nothing() -> None:
    records = [("k", "a", "a1", 100, 90), ("k", "b", "b1", 101, 102)]
    out, _, ctx = _run(_op(), records)
    assert out == []
    assert [(r.offset, r.windows) for r in ctx.late] == [(1, ((91, 107),))]


def test_the_watermark_drops_buffers_so_state_stays_bounded() -> None:
    tables: dict[str, Any] = {}
    op = _op()
    for n in range(50):  # a and b of fresh keys every 10 ms; the watermark follows
        t = 10 * n
        _run(op, [(f"k{n}", "a", f"a{n}", t, t - 20), (f"k{n}", "b", f"b{n}", t, t - 20)], tables)
    by_time = STEP + "#timers"
    # Only what the last 20 ms (plus the interval) can still match is kept.
    assert len(tables[STEP].table) <= 4
    assert len(tables[by_time].table) <= 8
    # A watermark past everything empties the buffers and the timers.
    _run(op, [], tables, watermark=10_000)
    assert tables[STEP].table == {} and tables[by_time].table == {}


def test_a_buffered_record_is_kept_until_the_watermark_passes_its_last_partner() -> None:
    tables: dict[str, Any] = {}
    op = _op()
    _run(op, [("k", "a", "a1", 100, 0)], tables)
    out, _, _ = _run(op, [("k", "b", "b1", 110, 110)], tables)  # watermark 110: b at 110 on time
    assert out == [("a1", "b1")]
    _run(op, [], tables, watermark=111)  # now no b at or below 110 can come
    assert [list(times) for times in tables[STEP].table["k"][:2]] == [[], [110]]  # b1 waits


def test_left_emits_each_unmatched_a_once_when_the_watermark_passes_its_interval() -> None:
    tables: dict[str, Any] = {}
    op = _op("left")
    records = [("k", "a", "a1", 100, 0), ("k", "a", "a2", 200, 0), ("k", "b", "b1", 205, 0)]
    out, _, _ = _run(op, records, tables)
    assert out == [("a2", "b1")]
    out, kept, _ = _run(op, [("x", "b", "b9", 300, 110)], tables)
    assert out == []  # a1's interval ends at 110: a b at 110 may still come
    out, kept, _ = _run(op, [("x", "b", "b10", 300, 111)], tables)
    assert out == [("a1", None)]
    assert (int(kept[0]), result_time(kept[0])) == (0, 100)  # its own time
    out, _, _ = _run(op, [], tables, watermark=10_000)
    assert out == []  # a2 matched; b records are not emitted by a left join


def test_outer_emits_the_unmatched_records_of_both_sides() -> None:
    tables: dict[str, Any] = {}
    records = [("k", "a", "a1", 100, 0), ("k", "b", "b1", 300, 0), ("k", "b", "b2", 101, 0)]
    out, _, _ = _run(_op("outer"), records, tables)
    assert out == [("a1", "b2")]
    out, kept, _ = _run(_op("outer"), [], tables, watermark=10_000)
    assert out == [(None, "b1")]
    assert result_time(kept[0]) == 300


def test_a_merge_that_raises_is_a_dead_letter_of_the_record() -> None:
    def merge(a: Any, b: Any) -> Any:
        raise ValueError("no")

    op = IntervalJoinOp(5, 10, "inner", merge, step=STEP)
    _, offsets, ctx = window_batch([("k", 100, 0), ("k", 101, 0)])
    out, _ = op.apply([("k", [0, {"id": 1}]), ("k", [1, {"id": 2}])], offsets, ctx)
    assert out == []
    assert [(d.offset, d.reason) for d in ctx.dead_letters] == [
        (1, "join_interval merge raised ValueError: no")
    ]


@pytest.mark.parametrize("on", ["customer", lambda r: r["customer"]])
def test_both_sides_are_tagged_and_keyed_by_their_join_key(on: Any) -> None:
    record = {"customer": "c1", "buyer": "c2"}
    assert Tagged(1)(record) == [1, record]
    key = SideKey((on, "buyer"))
    assert (key(Tagged(0)(record)), key(Tagged(1)(record))) == ("c1", "c2")
