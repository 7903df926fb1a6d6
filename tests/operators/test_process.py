"""The keyed process step over a batch: state per key, timers that fire in order as the
watermark moves, deleted and re-set timers, bounded state, and failures as dead letters."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka.operators import BatchContext, ProcessContext, ProcessOp
from laminar_kafka.operators.timers import NEVER, TimerQueue
from tests.operators.window_batches import window_batch

STEP = "s"


def _run(
    op: ProcessOp,
    records: list[tuple[str, int, int]],
    tables: dict[str, Any] | None = None,
    watermark: int | None = None,
) -> tuple[list[Any], list[int], BatchContext]:
    """records: (key, timestamp, watermark after it), at offsets 0, 1, ..."""
    values, offsets, ctx = window_batch(records, tables, watermark)
    out, kept = op.apply(values, offsets, ctx)
    return out, kept, ctx


def _timer_after(delay: int) -> ProcessOp:
    """Each record sets a timer `delay` after it; a timer emits (key, its time)."""

    def on_record(key: str, _v: Any, ctx: ProcessContext) -> None:
        ctx.set_timer(ctx.timestamp + delay)

    def on_timer(key: str, ctx: ProcessContext) -> list[Any]:
        return [(key, ctx.timestamp)]

    return ProcessOp(on_record, on_timer, step=STEP)


def test_timers_fire_oldest_first_once_the_watermark_reaches_them() -> None:
    op = _timer_after(10)
    records = [("b", 5, 5), ("a", 3, 5), ("c", 5, 5), ("d", 14, 14), ("e", 30, 30)]
    out, kept, ctx = _run(op, records)
    # d's watermark (14) reached a's timer; e's (30) the rest: b and c share time 15,
    # and fire in the order they were set.
    assert out == [("a", 13), ("b", 15), ("c", 15), ("d", 24)]
    assert kept == [3, 4, 4, 4]  # the record whose watermark reached them
    assert ctx.tables[STEP + "#timers"].table == {40: {"e": None}}


def test_the_record_that_moves_the_watermark_sees_the_timer_pending() -> None:
    seen: list[Any] = []

    def on_record(key: str, _v: Any, ctx: ProcessContext) -> list[Any]:
        seen.append((key, ctx.timestamp, ctx.watermark, ctx.state))
        if ctx.state is not None:
            ctx.delete_timer(ctx.state)
        ctx.state = ctx.timestamp + 10
        ctx.set_timer(ctx.timestamp + 10)
        return [("record", key)]

    op = ProcessOp(on_record, lambda key, ctx: [("timer", key, ctx.timestamp)], step=STEP)
    out, _, _ = _run(op, [("a", 0, 0), ("a", 10, 10), ("b", 25, 25)])
    # a's timer at 10 was still pending when a's record at 10 came: it moved it to 20.
    assert seen == [("a", 0, 0, None), ("a", 10, 10, 10), ("b", 25, 25, None)]
    assert out == [("record", "a"), ("record", "a"), ("record", "b"), ("timer", "a", 20)]


def test_a_deleted_timer_never_fires_and_a_re_set_one_fires_once() -> None:
    def on_record(key: str, value: Any, ctx: ProcessContext) -> None:
        for action, ts in value:
            (ctx.set_timer if action == "set" else ctx.delete_timer)(ts)

    op = ProcessOp(on_record, lambda key, ctx: [(key, ctx.timestamp)], step=STEP)
    ctx = BatchContext("in", 0, 1, {}, times={0: 0, 1: 0}, marks={0: 0, 1: 0}, watermark=0)
    values = [
        ("a", [("set", 10), ("set", 10), ("set", 20), ("delete", 20), ("set", 30)]),
        ("b", [("set", 20), ("delete", 99)]),  # deleting a timer it does not have: nothing
    ]
    op.apply(values, [0, 1], ctx)
    out, _, _ = _run(op, [], ctx.tables, watermark=100)
    assert out == [("a", 10), ("b", 20), ("a", 30)]
    assert ctx.tables[STEP + "#timers"].table == {}


def test_state_is_per_key_none_at_first_and_none_drops_it() -> None:
    def on_record(key: str, _v: Any, ctx: ProcessContext) -> list[Any]:
        before = ctx.state
        ctx.state = None if before == 2 else (before or 0) + 1
        return [(key, before, ctx.state)]

    op = ProcessOp(on_record, step=STEP)
    out, _, ctx = _run(op, [("a", 1, 1), ("b", 1, 1), ("a", 2, 2), ("a", 3, 3), ("a", 4, 4)])
    assert out == [("a", None, 1), ("b", None, 1), ("a", 1, 2), ("a", 2, None), ("a", None, 1)]
    assert ctx.tables[STEP].table == {"a": 1, "b": 1}


def test_fired_timers_and_dropped_state_leave_nothing_behind() -> None:
    """A key per record, each silent after it: the tables hold only what is pending."""

    def on_record(key: str, _v: Any, ctx: ProcessContext) -> None:
        if ctx.state is not None:
            ctx.delete_timer(ctx.state + 100)
        ctx.state = ctx.timestamp
        ctx.set_timer(ctx.timestamp + 100)

    def on_timer(key: str, ctx: ProcessContext) -> list[Any]:
        ctx.state = None
        return [key]

    op = ProcessOp(on_record, on_timer, step=STEP)
    tables: dict[str, Any] = {}
    fired = 0
    for batch in range(40):
        # 50 keys, each read 20 times per batch (its timer deleted and set again), then
        # a new set of keys: the old ones fall silent and fire.
        records = [
            (f"k{batch}-{i % 50}", batch * 1_000 + i, batch * 1_000 + i) for i in range(1000)
        ]
        out, _, _ = _run(op, records, tables)
        fired += len(out)
    assert fired == 39 * 50
    assert len(tables[STEP].table) == 50  # the last batch's keys
    assert len(TimerQueue(BatchContext("in", 0, 1, tables), STEP)) == 50
    assert len(tables[STEP + "#timers"].index) < 3 * 50 + 64  # the heap of times


def test_a_failing_on_record_is_a_dead_letter_and_changes_nothing() -> None:
    def on_record(key: str, value: Any, ctx: ProcessContext) -> Any:
        ctx.state = "changed"
        ctx.set_timer(5)
        return value

    op = ProcessOp(on_record, lambda key, ctx: [key], step=STEP)
    ctx = BatchContext("in", 0, 1, {}, times={0: 1, 1: 1, 2: 1}, marks={0: 1, 1: 1, 2: 1})
    values = [("a", iter([1, 2])), ("b", {"one": "dict"}), ("c", 7)]
    out, kept = op.apply(values, [0, 1, 2], ctx)
    assert (out, kept) == ([1, 2], [0, 0])
    assert [(d.offset, d.reason) for d in ctx.dead_letters] == [
        (
            1,
            "process on_record raised TypeError: on_record returned dict {'one': 'dict'}: "
            "return a list of outputs (or None)",
        ),
        (
            2,
            "process on_record raised TypeError: on_record returned int 7: "
            "return a list of outputs (or None)",
        ),
    ]
    assert ctx.tables[STEP].table == {"a": "changed"}
    assert ctx.tables[STEP + "#timers"].table == {5: {"a": None}}


def test_a_failing_on_timer_is_a_dead_letter_of_the_record_that_moved_the_watermark() -> None:
    def on_record(key: str, _v: Any, ctx: ProcessContext) -> None:
        ctx.state = "kept"
        ctx.set_timer(ctx.timestamp + 1)

    def on_timer(key: str, ctx: ProcessContext) -> list[Any]:
        ctx.state = "lost"
        if key == "bad":
            raise ValueError("no")
        return [key]

    op = ProcessOp(on_record, on_timer, step=STEP)
    out, kept, ctx = _run(op, [("bad", 1, 1), ("good", 1, 1), ("x", 9, 9)])
    assert (out, kept) == (["good"], [2])
    [letter] = ctx.dead_letters
    assert (letter.offset, letter.reason) == (
        2,
        "process on_timer of 'bad' at 2 raised ValueError: no",
    )
    assert ctx.tables[STEP].table == {"bad": "kept", "good": "lost", "x": "kept"}
    assert ctx.tables[STEP + "#timers"].table == {10: {"x": None}}  # the failed one is spent


def test_a_timer_at_or_below_the_watermark_fires_right_after_the_call_that_set_it() -> None:
    def on_record(key: str, _v: Any, ctx: ProcessContext) -> list[Any]:
        ctx.set_timer(ctx.watermark - 5)
        return ["record"]

    def on_timer(key: str, ctx: ProcessContext) -> list[Any]:
        if ctx.timestamp < ctx.watermark - 1:
            ctx.set_timer(ctx.timestamp + 2)  # still due: fires in the same pass
        return [ctx.timestamp]

    op = ProcessOp(on_record, on_timer, step=STEP)
    out, kept, _ = _run(op, [("a", 20, 20), ("a", 21, 21)])
    assert out == ["record", 15, 17, 19, "record", 16, 18, 20]
    assert kept == [0, 0, 0, 0, 1, 1, 1, 1]


def test_on_timer_may_set_timers_only_after_its_own_time() -> None:
    def on_timer(key: str, ctx: ProcessContext) -> list[Any]:
        ctx.set_timer(ctx.timestamp)  # would fire again, and again
        return [key]

    op = ProcessOp(lambda key, v, ctx: ctx.set_timer(3), on_timer, step=STEP)
    out, _, ctx = _run(op, [("a", 5, 5)])
    assert out == []
    assert "may set timers only after its own time" in ctx.dead_letters[0].reason
    assert ctx.tables[STEP + "#timers"].table == {}


@pytest.mark.parametrize("ts", [-1, 1.5, "10", True, NEVER])
def test_a_timer_needs_an_int_time_in_ms(ts: Any) -> None:
    op = ProcessOp(lambda key, v, ctx: ctx.set_timer(ts), lambda key, ctx: None, step=STEP)
    _, _, ctx = _run(op, [("a", 5, 5)])
    assert "a timer's time must be an int of ms since the epoch" in ctx.dead_letters[0].reason


def test_timers_need_on_timer() -> None:
    op = ProcessOp(lambda key, v, ctx: ctx.set_timer(10), step=STEP)
    _, _, ctx = _run(op, [("a", 5, 5)])
    assert "no on_timer: pass on_timer=" in ctx.dead_letters[0].reason


def test_the_watermark_alone_fires_timers_under_the_batch_s_last_offset() -> None:
    op = _timer_after(10)
    tables: dict[str, Any] = {}
    _run(op, [("a", 1, 1), ("b", 2, 2)], tables)
    ctx = BatchContext("in", 0, 1, tables, watermark=11, last_offset=41)
    out, kept = op.apply([], [], ctx)
    assert (out, kept) == ([("a", 11)], [41])


def test_the_heap_of_times_stays_bounded_when_timers_are_moved_again_and_again() -> None:
    tables: dict[str, Any] = {}
    queue = TimerQueue(BatchContext("in", 0, 1, tables), STEP)
    for ts in range(10_000):
        queue.set("a", ts + 1_000_000)
        queue.delete("a", ts + 999_999)
    assert len(queue) == 1 and queue.next_due() == 10_000 + 999_999
    assert len(tables[STEP + "#timers"].index) < 100  # the heap of times
    assert queue.pop(10_000 + 999_998) is None
    assert queue.pop(NEVER - 1) == (10_000 + 999_999, ["a"])
    assert queue.next_due() == NEVER
