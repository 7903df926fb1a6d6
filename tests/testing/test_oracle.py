"""compare_outputs: each kind of wrong output lands in its own bucket, an exact one in none."""

from __future__ import annotations

from typing import Any

from laminar_kafka.testing import DeadLetterRecord, OutputReport, compare_outputs
from laminar_kafka.testing.oracle import canonical

EXPECTED: list[dict[str, Any]] = [
    {"customer": f"c{i % 3}", "orders": i // 3 + 1, "amount": 10 * i} for i in range(12)
]


def counts(report: OutputReport) -> tuple[int, int, int]:
    return report.duplicates, report.losses, report.wrong


def test_exact_output_in_any_order_reports_nothing() -> None:
    reordered = [{k: v for k, v in reversed(o.items())} for o in reversed(EXPECTED)]
    report = compare_outputs(EXPECTED, reordered)
    assert report.exact and counts(report) == (0, 0, 0)
    assert report.line() == "expected=12 actual=12 duplicates=0 losses=0 wrong=0"


def test_duplicated_output_is_a_duplicate() -> None:
    report = compare_outputs(EXPECTED, [*EXPECTED, EXPECTED[4], EXPECTED[4]])
    assert counts(report) == (2, 0, 0) and not report.exact
    assert report.duplicate_examples == (canonical(EXPECTED[4]),)
    assert "duplicates=2" in report.line() and '"amount":40' in report.line()


def test_missing_output_is_a_loss() -> None:
    actual = EXPECTED[:5] + EXPECTED[6:]
    report = compare_outputs(EXPECTED, actual)
    assert counts(report) == (0, 1, 0)
    assert report.loss_examples == (canonical(EXPECTED[5]),)


def test_truncated_output_loses_its_tail() -> None:
    report = compare_outputs(EXPECTED, EXPECTED[:8])
    assert counts(report) == (0, 4, 0)
    assert report.loss_examples == tuple(canonical(o) for o in EXPECTED[8:11])  # three examples
    assert (report.expected, report.actual) == (12, 8)


def test_unexpected_output_is_wrong() -> None:
    extra = {"customer": "c9", "orders": 1, "amount": 5}
    report = compare_outputs(EXPECTED, [*EXPECTED, extra])
    assert counts(report) == (0, 0, 1)
    assert report.wrong_examples == (canonical(extra),)
    assert "wrong=1" in report.line() and "c9" in report.line()


def test_a_changed_value_is_both_lost_and_wrong() -> None:
    actual = [*EXPECTED[:-1], {**EXPECTED[-1], "amount": -1}]
    assert counts(compare_outputs(EXPECTED, actual)) == (0, 1, 1)


def test_values_json_cannot_write_are_compared_too() -> None:
    letter = DeadLetterRecord("undecodable value", "orders", 0, 3, b"\xff")
    same = DeadLetterRecord("undecodable value", "orders", 0, 3, b"\xff")
    assert compare_outputs([letter, {1, 2}], [same, {2, 1}]).exact
    assert counts(compare_outputs([b"a"], [b"b"])) == (0, 1, 1)


def test_long_examples_are_shortened_in_the_line() -> None:
    big = {"text": "x" * 500}
    line = compare_outputs([big], []).line()
    assert len(line) < 250 and line.endswith("...")
