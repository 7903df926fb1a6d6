"""Session windows over a batch: sessions open, extend, merge, close and are late."""

from __future__ import annotations

import operator
from typing import Any

from laminar_kafka.operators import BatchContext
from laminar_kafka.operators.sessions import apply_sessions
from laminar_kafka.operators.windows import WindowSpec, default_window_emit
from tests.operators.window_batches import window_batch

GAP = WindowSpec("session", 10, 10)


def _run(
    records: list[tuple[str, int, int]],
    tables: dict[str, Any] | None = None,
    spec: WindowSpec = GAP,
    watermark: int | None = None,
) -> tuple[list[Any], BatchContext]:
    """records: (key, timestamp, watermark after it); counts per session."""
    values, offsets, ctx = window_batch(records, tables, watermark)
    count = (lambda: 0, lambda n, _v: n + 1, operator.add)
    out, _ = apply_sessions("s", spec, *count, default_window_emit, values, offsets, ctx)
    return out, ctx


def _windows(out: list[Any]) -> list[tuple[str, int, int, int]]:
    return [(o["key"], o["start"], o["end"], o["value"]) for o in out]


def test_records_closer_than_the_gap_form_one_session() -> None:
    out, ctx = _run([("a", 0, 0), ("a", 5, 5), ("a", 12, 12), ("a", 40, 40)])
    assert _windows(out) == [("a", 0, 22, 3)]
    assert ctx.tables["s"].table == {"a": [[40, 50, 1]]}
    assert ctx.tables["s"].index == {50: [("a", 40)]}


def test_a_record_between_two_sessions_merges_them() -> None:
    tables: dict[str, Any] = {}
    _run([("a", 0, 0), ("a", 20, 0)], tables)
    assert tables["s"].table == {"a": [[0, 10, 1], [20, 30, 1]]}
    _run([("a", 9, 0)], tables)  # [9, 19) touches [0, 10) ... and not [20, 30)
    assert tables["s"].table == {"a": [[0, 19, 2], [20, 30, 1]]}
    _run([("a", 15, 0)], tables)  # [15, 25) bridges both
    assert tables["s"].table == {"a": [[0, 30, 4]]}
    assert tables["s"].index == {30: [("a", 0)]}
    out, _ = _run([], tables, watermark=30)
    assert _windows(out) == [("a", 0, 30, 4)]
    assert tables["s"].table == {} and tables["s"].index == {}


def test_keys_have_sessions_of_their_own() -> None:
    out, _ = _run([("a", 0, 0), ("b", 3, 3), ("a", 25, 25)])
    assert _windows(out) == [("a", 0, 10, 1), ("b", 3, 13, 1)]


def test_a_record_for_a_closed_session_is_late_unless_it_touches_an_open_one() -> None:
    spec = WindowSpec("session", 10, 10, late_to="late")
    tables: dict[str, Any] = {}
    _run([("a", 0, 0), ("a", 30, 30)], tables, spec)
    _, ctx = _run([("a", 2, 30), ("a", 25, 30)], tables, spec)
    assert [(r.offset, r.windows) for r in ctx.late] == [(0, ((2, 12),))]
    assert tables["s"].table == {"a": [[25, 40, 2]]}  # 25 touched the open [30, 40)
