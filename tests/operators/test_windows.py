"""Windows over a batch: which windows a record falls in, when they close, what is late."""

from __future__ import annotations

from typing import Any

from laminar_kafka.operators import BatchContext
from laminar_kafka.operators.base import result_time
from laminar_kafka.operators.windows import (
    Window,
    WindowSpec,
    apply_windowed,
    default_window_emit,
)
from tests.operators.window_batches import window_batch


def _run(
    spec: WindowSpec,
    records: list[tuple[str, int, int]],
    tables: dict[str, Any] | None = None,
    watermark: int | None = None,
) -> tuple[list[Any], BatchContext]:
    """records: (key, timestamp, watermark after it); counts per window."""
    values, offsets, ctx = window_batch(records, tables, watermark)
    count = (lambda: 0, lambda n, _v: n + 1)
    out, _ = apply_windowed("step", spec, *count, default_window_emit, values, offsets, ctx)
    return out, ctx


def test_starts_of_tumbling_and_hopping_windows() -> None:
    assert list(WindowSpec("tumbling", 10, 10).starts(25)) == [20]
    assert list(WindowSpec("tumbling", 10, 10).starts(20)) == [20]
    assert list(WindowSpec("hopping", 10, 5).starts(25)) == [20, 25]
    assert list(WindowSpec("hopping", 10, 5).starts(24)) == [15, 20]
    assert list(WindowSpec("hopping", 10, 4).starts(25)) == [16, 20, 24]
    assert list(WindowSpec("hopping", 90, 60).starts(100)) == [60]
    assert list(WindowSpec("hopping", 90, 60).starts(130)) == [60, 120]
    for size, every in [(10, 4), (90, 60), (10, 5), (7, 7)]:
        spec = WindowSpec("hopping", size, every)
        for ts in range(0, 60):
            assert list(spec.starts(ts)) == [
                s for s in range(-size, ts + 1) if s % every == 0 and s <= ts < s + size
            ]


def test_a_window_closes_once_when_the_watermark_passes_its_end() -> None:
    spec = WindowSpec("tumbling", 10, 10)
    out, ctx = _run(spec, [("a", 1, 1), ("a", 5, 5), ("b", 9, 9), ("a", 10, 10)])
    assert out == [
        {"key": "a", "start": 0, "end": 10, "value": 2},
        {"key": "b", "start": 0, "end": 10, "value": 1},
    ]
    assert ctx.tables["step"].table == {("a", 10): 1}  # closed windows are dropped
    assert ctx.tables["step"].index == {20: ["a"]}  # end → keys, beside the table


def test_allowed_lateness_keeps_a_window_open_and_then_records_are_late() -> None:
    spec = WindowSpec("tumbling", 10, 10, lateness_ms=5, late_to="late")
    out, ctx = _run(spec, [("a", 1, 1), ("a", 12, 12), ("a", 3, 12), ("a", 16, 16), ("a", 4, 16)])
    assert out == [{"key": "a", "start": 0, "end": 10, "value": 2}]
    assert [(r.offset, r.topic, r.windows) for r in ctx.late] == [(4, "late", ((0, 10),))]


def test_updates_emit_every_change_then_the_final_value() -> None:
    spec = WindowSpec("tumbling", 10, 10, emit="updates")
    out, _ = _run(spec, [("a", 1, 1), ("a", 2, 2), ("a", 11, 11)])
    emitted = [(o["value"], o["end"]) for o in out]
    assert emitted == [(1, 10), (2, 10), (1, 20), (2, 10)]


def test_results_carry_their_windows_end_and_updates_no_time_ahead_of_the_stream() -> None:
    spec = WindowSpec("tumbling", 3_600_000, 3_600_000, emit="updates")
    values, offsets, ctx = window_batch([("a", 1_000, 1_000), ("a", 500, 1_000)])
    count = (lambda: 0, lambda n, _v: n + 1)
    out, kept = apply_windowed("step", spec, *count, default_window_emit, values, offsets, ctx)
    assert kept == [0, 1] and [result_time(o) for o in kept] == [1_000, 1_000]
    _, _, ctx = window_batch([], ctx.tables, watermark=3_600_000)
    out, kept = apply_windowed("step", spec, *count, default_window_emit, [], [], ctx)
    assert [o["end"] for o in out] == [result_time(o) for o in kept] == [3_600_000]


def test_hopping_windows_count_a_record_in_each_and_late_only_when_all_closed() -> None:
    spec = WindowSpec("hopping", 10, 5)
    out, ctx = _run(spec, [("a", 7, 7), ("a", 12, 12), ("a", 8, 12), ("a", 30, 30)])
    # 8 missed [0,10) (closed at 12) but still counts in [5,15): not late.
    assert ctx.late == []
    assert [(o["start"], o["value"]) for o in out] == [(0, 1), (5, 3), (10, 1)]


def test_the_watermark_alone_closes_windows() -> None:
    spec = WindowSpec("tumbling", 10, 10)
    tables: dict[str, Any] = {}
    _run(spec, [("a", 1, 1)], tables)
    out, _ = _run(spec, [], tables, watermark=10)
    assert out == [{"key": "a", "start": 0, "end": 10, "value": 1}]
    assert tables["step"].table == {} and tables["step"].index == {}


def test_a_failing_aggregate_changes_no_window_of_that_record() -> None:
    spec = WindowSpec("hopping", 10, 5)
    ctx = BatchContext("in", 0, 1, {}, times={0: 7}, marks={0: 7}, watermark=7)
    calls: list[int] = []

    def add(n: int, _v: Any) -> int:
        calls.append(n)
        if len(calls) == 2:
            raise ValueError("second window")
        return n + 1

    out, _ = apply_windowed("s", spec, lambda: 0, add, default_window_emit, [("a", 1)], [0], ctx)
    assert out == [] and ctx.tables["s"].table == {}
    assert [d.offset for d in ctx.dead_letters] == [0]


def test_window_is_final_unless_it_is_an_update() -> None:
    assert Window(0, 10).final and not Window(0, 10, False).final
