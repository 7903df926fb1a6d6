"""The windowed oracle: a batch computation of every window, and the checker that compares
the committed output with it window by window (each kind of error reported)."""

from __future__ import annotations

from typing import Any

from laminar_kafka.chaos.window_checks import (
    WindowResult,
    batch_windows,
    check_windowed,
    compare_windows,
    expected_windows,
    window_starts,
)
from laminar_kafka.operators.windows import Window, WindowSpec

MINUTE = 60_000


def initial() -> dict[str, int]:
    return {"orders": 0, "revenue": 0}


def add(total: dict[str, int], order: dict[str, Any]) -> dict[str, int]:
    return {"orders": total["orders"] + 1, "revenue": total["revenue"] + order["amount"]}


def emit(product: str, window: Window, total: dict[str, int]) -> dict[str, Any]:
    return {"product": product, "minute_end": window.end, **total}


def keyed(*orders: tuple[str, int, int]) -> list[tuple[str, int, dict[str, Any]]]:
    return [(p, ts, {"product": p, "amount": amount}) for p, ts, amount in orders]


def test_window_starts_of_tumbling_and_hopping_windows() -> None:
    assert window_starts(61_000, MINUTE, MINUTE) == [MINUTE]
    assert window_starts(MINUTE, MINUTE, MINUTE) == [MINUTE]  # an end is not in its window
    assert window_starts(59_999, MINUTE, MINUTE) == [0]
    assert window_starts(61_000, MINUTE, 20_000) == [20_000, 40_000, 60_000]


def test_tumbling_windows_sum_their_orders_and_keep_those_the_watermark_closes() -> None:
    spec = WindowSpec("tumbling", MINUTE, MINUTE, lateness_ms=30_000)
    records = keyed(("p0", 1_000, 5), ("p1", 2_000, 7), ("p0", 59_999, 1), ("p0", 60_000, 9))
    found = batch_windows(spec, initial, add, records, watermark=MINUTE + 30_000)
    assert sorted(found, key=lambda r: r.key) == [
        WindowResult("p0", 0, MINUTE, {"orders": 2, "revenue": 6}),
        WindowResult("p1", 0, MINUTE, {"orders": 1, "revenue": 7}),
    ]  # [60 s, 120 s) of p0 closes only at 150 s
    assert batch_windows(spec, initial, add, records, watermark=MINUTE + 29_999) == []
    assert len(batch_windows(spec, initial, add, records, watermark=150_000)) == 3


def test_hopping_windows_count_an_order_in_every_window_that_holds_it() -> None:
    spec = WindowSpec("hopping", MINUTE, 30_000)
    found = batch_windows(spec, initial, add, keyed(("p0", 45_000, 3)), watermark=10**9)
    assert [(r.start, r.end, r.aggregate["revenue"]) for r in found] == [
        (0, MINUTE, 3),
        (30_000, 90_000, 3),
    ]


def test_sessions_merge_a_keys_orders_closer_than_the_gap() -> None:
    spec = WindowSpec("session", 10_000, 10_000, lateness_ms=1_000)
    records = keyed(
        ("p0", 20_000, 1),
        ("p0", 5_000, 2),  # out of order: still [5 s, 30 s) with the others
        ("p0", 14_999, 4),
        ("p1", 6_000, 8),
        ("p0", 40_000, 16),  # 10 s after the last end: a session of its own
    )
    found = batch_windows(spec, initial, add, records, watermark=10**9)
    assert sorted((r.key, r.start, r.end, r.aggregate["revenue"]) for r in found) == [
        ("p0", 5_000, 30_000, 7),
        ("p0", 40_000, 50_000, 16),
        ("p1", 6_000, 16_000, 8),
    ]
    closing = batch_windows(spec, initial, add, records, watermark=31_000)
    assert sorted((r.key, r.start) for r in closing) == [("p0", 5_000), ("p1", 6_000)]


def expected() -> Any:
    results = [
        WindowResult("p0", 0, MINUTE, {"orders": 2, "revenue": 6}),
        WindowResult("p1", 0, MINUTE, {"orders": 1, "revenue": 7}),
        WindowResult("p0", MINUTE, 2 * MINUTE, {"orders": 1, "revenue": 9}),
    ]
    return expected_windows(results, emit, initial)


def test_windows_are_named_by_the_fields_that_do_not_depend_on_the_aggregate() -> None:
    found = expected()
    assert found.fields == ("product", "minute_end")
    assert compare_windows(found, list(found.values)).exact
    assert compare_windows(found, list(reversed(found.values))).records == 3


def test_a_window_emitted_twice_is_a_duplicate() -> None:
    found = expected()
    report = compare_windows(found, [*found.values, found.values[1]])
    assert (report.duplicates, report.losses, report.wrong) == (1, 0, 0)
    assert '"product":"p1"' in report.example and "2 times" in report.example


def test_a_missing_window_is_a_loss() -> None:
    found = expected()
    report = compare_windows(found, found.values[:2])
    assert (report.duplicates, report.losses, report.wrong) == (0, 1, 0)
    assert f'"minute_end":{2 * MINUTE}' in report.example


def test_a_window_with_another_value_is_wrong_not_lost() -> None:
    found = expected()
    off = {**found.values[0], "revenue": 5}
    report = compare_windows(found, [off, *found.values[1:]])
    assert (report.duplicates, report.losses, report.wrong) == (0, 0, 1)
    assert '"revenue":5' in report.example and '"revenue":6' in report.example


def test_a_result_of_no_expected_window_is_wrong() -> None:
    found = expected()
    ancient = emit("p0", Window(-MINUTE, 0), {"orders": 1, "revenue": 1})
    report = compare_windows(found, [*found.values, ancient, "not a window"])
    assert (report.duplicates, report.losses, report.wrong) == (0, 0, 2)
    assert "no such window" in report.example


def test_values_that_do_not_name_their_window_are_compared_as_a_multiset() -> None:
    results = [WindowResult("p0", 0, MINUTE, 6), WindowResult("p0", MINUTE, 2 * MINUTE, 9)]
    found = expected_windows(results, lambda k, w, total: total, lambda: 0)
    assert found.fields is None
    assert compare_windows(found, [6, 9]).exact
    report = compare_windows(found, [6, 6, 8])
    assert (report.duplicates, report.losses, report.wrong) == (1, 1, 1)


def test_each_late_order_must_be_in_the_late_topic_once() -> None:
    found = expected()
    late = [{"id": 7, "amount": 1}, {"id": 9, "amount": 2}]
    assert check_windowed(found, found.values, [7, 9], late).records == 3 + 2
    assert check_windowed(found, found.values, [7, 9], late).exact
    missing = check_windowed(found, found.values, [7, 9], late[:1])
    assert (missing.duplicates, missing.losses, missing.wrong) == (0, 1, 0)
    assert missing.example.startswith("late topic: ")
    twice = check_windowed(found, found.values, [7, 9], [*late, late[0]])
    assert (twice.duplicates, twice.losses, twice.wrong) == (1, 0, 0)
    on_time = check_windowed(found, found.values, [7, 9], [*late, {"id": 3}])
    assert (on_time.duplicates, on_time.losses, on_time.wrong) == (0, 0, 1)


def test_errors_of_windows_and_late_records_add_up() -> None:
    found = expected()
    report = check_windowed(found, found.values[1:], [7], [])
    assert (report.records, report.losses) == (4, 2)
    assert "minute_end" in report.example  # the windows' example first
    assert check_windowed(found, found.values, None, [{"id": 1}]).exact  # no late topic
