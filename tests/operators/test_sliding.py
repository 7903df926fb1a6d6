"""Sliding windows over a batch: the window (t - size, t] ending at each record, closed
once the watermark passes t + lateness, updated by records out of order, late records,
records dropped once no window can need them."""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

from laminar_kafka.operators import BatchContext
from laminar_kafka.operators.base import result_time
from laminar_kafka.operators.sliding import apply_sliding
from laminar_kafka.operators.windows import Window, WindowSpec, default_window_emit
from tests.operators.window_batches import window_batch

SIZE = 10
SPEC = WindowSpec("sliding", SIZE, SIZE)


def _run(
    records: list[tuple[str, int, int]],
    tables: dict[str, Any] | None = None,
    spec: WindowSpec = SPEC,
    watermark: int | None = None,
) -> tuple[list[Any], list[int], BatchContext]:
    """records: (key, timestamp, watermark after it); counts per window."""
    values, offsets, ctx = window_batch(records, tables, watermark)
    count = (lambda: 0, lambda n, _v: n + 1)
    out, kept = apply_sliding("s", spec, *count, default_window_emit, values, offsets, ctx)
    return out, kept, ctx


def _windows(out: list[Any]) -> list[tuple[str, int, int]]:
    return [(o["key"], o["end"], o["value"]) for o in out]


def test_each_record_ends_a_window_of_the_size_before_it_closed_past_its_end() -> None:
    records = [("a", 1, 1), ("a", 5, 5), ("a", 12, 12), ("a", 20, 20)]
    out, kept, ctx = _run(records)
    # (-9, 1] closes at watermark 2, (-5, 5] at 6, (2, 12] at 13; (10, 20] stays open.
    assert _windows(out) == [("a", 1, 1), ("a", 5, 2), ("a", 12, 2)]
    assert [(o["start"], o["end"]) for o in out] == [(-9, 1), (-5, 5), (2, 12)]
    assert kept == [1, 2, 3]  # the records whose watermark closed them
    assert [result_time(o) for o in kept] == [1, 5, 12]  # each stamped with its end
    [(due, records_kept, windows)] = ctx.tables["s"].table.values()
    assert windows == {20: 2} and [ts for ts, _ in records_kept] == [12, 20]
    assert ctx.tables["s"].index == {due: ["a"]} and due == 21  # window 20 closes at 21


def test_records_with_equal_timestamps_share_one_window() -> None:
    out, _, _ = _run([("a", 5, 5), ("a", 5, 5), ("b", 5, 5), ("a", 6, 6)])
    assert _windows(out) == [("a", 5, 2), ("b", 5, 1)]


def test_a_record_out_of_order_updates_later_windows_and_opens_its_own() -> None:
    spec = WindowSpec("sliding", SIZE, SIZE, lateness_ms=5)
    tables: dict[str, Any] = {}
    out, _, _ = _run([("a", 10, 10), ("a", 20, 20), ("a", 15, 20)], tables, spec)
    assert _windows(out) == [("a", 10, 1)]  # closed at 16
    out, _, _ = _run([], tables, spec, watermark=100)
    # (5, 15] holds 10 and 15; (10, 20] holds 15 and 20.
    assert _windows(out) == [("a", 15, 2), ("a", 20, 2)]
    # At watermark 20, the window ending at 14 would have closed (at 20): 14 opens none.
    out, _, _ = _run([("b", 10, 10), ("b", 20, 20), ("b", 14, 20)], tables, spec)
    out, _, _ = _run([], tables, spec, watermark=100)
    assert _windows(out) == [("b", 20, 2)]
    assert tables["s"].table == {} and tables["s"].index == {}


def test_late_only_when_every_window_it_could_be_in_has_closed() -> None:
    spec = WindowSpec("sliding", SIZE, SIZE, lateness_ms=5, late_to="late")
    tables: dict[str, Any] = {}
    # At watermark 30: a window ending at 15..24 (holding 15) has closed (15 + 10 + 5 <= 30).
    out, _, ctx = _run([("a", 10, 10), ("a", 30, 30), ("a", 15, 30)], tables, spec)
    assert [(r.offset, r.topic, r.windows) for r in ctx.late] == [(2, "late", ((6, 16),))]
    # 16 could still be in a window ending at 25: kept, though its own window has closed.
    out, _, ctx = _run([("a", 16, 30), ("a", 25, 30)], tables, spec)
    assert ctx.late == [] and out == []
    out, _, _ = _run([], tables, spec, watermark=100)
    assert _windows(out) == [("a", 25, 2), ("a", 30, 2)]  # (15, 25]: 16, 25; (20, 30]: 25, 30


def _updates(
    records: list[tuple[str, int, int]], spec: WindowSpec
) -> list[tuple[int, int, bool, int | None]]:
    """(end, value, final, stamp) of each result."""
    values, offsets, ctx = window_batch(records)

    def emit(_k: Any, w: Window, n: int) -> tuple[int, int, bool]:
        return w.end, n, w.final

    out, kept = apply_sliding("s", spec, lambda: 0, lambda n, _v: n + 1, emit, values, offsets, ctx)
    return [(*o, result_time(k)) for o, k in zip(out, kept, strict=True)]


def test_updates_are_the_running_value_of_each_window_a_record_changes() -> None:
    spec = WindowSpec("sliding", SIZE, SIZE, lateness_ms=5, emit="updates")
    found = _updates([("a", 10, 10), ("a", 18, 18), ("a", 13, 18)], spec)
    # 10 closes at 16, once 18 is read; 13 opens (3, 13] = {10, 13} and changes (8, 18].
    assert found == [
        (10, 1, False, 10),
        (18, 2, False, 18),
        (10, 1, True, 10),
        (13, 2, False, 13),
        (18, 3, False, 18),
    ]


def test_an_update_is_stamped_its_end_unless_the_stream_is_not_there_yet() -> None:
    spec = WindowSpec("sliding", 1_000, 1_000, lateness_ms=500, emit="updates")
    found = _updates([("a", 900, 400), ("a", 300, 400)], spec)
    assert found == [
        (900, 1, False, 900),  # its own record's time
        (300, 1, False, 300),
        (900, 2, False, 400),  # changed by 300 while the stream is at 400
    ]


def test_state_stays_bounded_however_many_records() -> None:
    spec = WindowSpec("sliding", 50, 50, lateness_ms=10)
    tables: dict[str, Any] = {}
    n = 0
    for start in range(0, 30_000, 1_000):
        records = [(f"k{i % 3}", start + i, start + i - 5) for i in range(1_000)]
        out, _, _ = _run(records, tables, spec)
        n += len(out)
        kept = [len(state[1]) for state in tables["s"].table.values()]
        assert max(kept) <= 70 // 3 + 2  # size + lateness + out of order, per key
        assert len(tables["s"].index) <= 3
    assert n > 29_000
    _run([], tables, spec, watermark=10**9)
    assert tables["s"].table == {} and tables["s"].index == {}


def test_a_failing_aggregate_changes_no_window_of_that_record() -> None:
    ctx = BatchContext("in", 0, 1, {}, times={0: 5, 1: 7}, marks={0: 5, 1: 7}, watermark=7)

    def add(total: int, v: int) -> int:
        if v == 2:
            raise ValueError("bad record")
        return total + v

    out, _ = apply_sliding(
        "s", SPEC, lambda: 0, add, default_window_emit, [("a", 1), ("a", 2)], [0, 1], ctx
    )
    assert [d.offset for d in ctx.dead_letters] == [1]
    [(_, records, windows)] = ctx.tables["s"].table.values()
    assert records == [[5, 1]] and windows == {}  # 5 closed at 6, 7 changed nothing
    assert _windows(out) == [("a", 5, 1)]


def test_a_failing_emit_is_a_dead_letter_and_the_window_still_closes() -> None:
    ctx = BatchContext("in", 0, 1, {}, times={0: 5}, marks={0: 5}, watermark=50, last_offset=0)

    def emit(_k: Any, _w: Any, _v: Any) -> Any:
        raise ValueError("no")

    out, _ = apply_sliding("s", SPEC, lambda: 0, lambda n, _v: n + 1, emit, [("a", 1)], [0], ctx)
    assert out == [] and "(-5, 5]" in ctx.dead_letters[0].reason
    assert ctx.tables["s"].table == {}


def _oracle(records: list[tuple[str, int, int]], lateness: int) -> list[tuple[str, int, int]]:
    """Final (key, end, count) straight from the definition: the window ending at t exists
    if a record at t came while it was open; it holds every record of its key stamped in
    (t - size, t] that came while it was open and was not late."""
    arrived = [(k, ts, w) for k, ts, w in records if ts + SIZE + lateness > w]
    ends = {(k, ts) for k, ts, w in arrived if ts + 1 + lateness > w}
    found = []
    for k, end in ends:
        inside = [
            1
            for k2, ts, w in arrived
            if k2 == k and end - SIZE < ts <= end and end + 1 + lateness > w
        ]
        found.append((k, end, len(inside)))
    return sorted(found)


def test_results_match_the_definition_for_records_out_of_order_in_any_batches() -> None:
    for seed in range(30):
        rng = random.Random(seed)
        lateness = rng.choice([0, 3, 8])
        spec = WindowSpec("sliding", SIZE, SIZE, lateness_ms=lateness)
        records: list[tuple[str, int, int]] = []
        highest = watermark = 0
        for _ in range(rng.randint(1, 120)):
            ts = max(0, highest + rng.randint(-15, 4))
            highest = max(highest, ts)
            watermark = max(watermark, highest - rng.choice([0, 2]))
            records.append((rng.choice("ab"), ts, watermark))
        tables: dict[str, Any] = {}
        out: list[Any] = []
        cuts = sorted({0, len(records), *rng.sample(range(len(records)), min(3, len(records)))})
        for a, b in pairwise(cuts):
            offsets = list(range(a, b))
            ctx = BatchContext(
                "in",
                0,
                1,
                tables,
                times={o: records[o][1] for o in offsets},
                marks={o: records[o][2] for o in offsets},
                watermark=records[b - 1][2],
                last_offset=b - 1,
            )
            values = [(records[o][0], None) for o in offsets]
            count = (lambda: 0, lambda n, _v: n + 1)
            found, _ = apply_sliding("s", spec, *count, default_window_emit, values, offsets, ctx)
            out.extend(found)
        closing, _, _ = _run([], tables, spec, watermark=10**6)
        assert sorted(_windows(out + closing)) == _oracle(records, lateness), seed
        assert tables["s"].table == {}
