"""The whole record end to end in the test kit: keys, timestamps and headers in, and a
sink that sets the key (any format), headers and the timestamp, through crashes."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline, Record, StringFormat
from laminar_kafka.errors import ConfigError
from laminar_kafka.runtime.task.stamped_output import header_list
from laminar_kafka.testing import OutputRecord, PipelineTester


def _enriched(r: Record) -> dict[str, Any]:
    return {"user": r.key, "at": r.timestamp, "n": r.value["n"], "trace": r.header("trace")}


def test_a_step_sees_key_timestamp_and_headers_and_the_sink_sets_them() -> None:
    p = Pipeline("whole")
    (
        p.source("clicks", key_format=StringFormat())
        .filter(lambda r: r.value["n"] > 0, metadata=True)
        .map(_enriched, metadata=True)
        .map(lambda v: {**v, "trace": v["trace"].decode()})
        .sink(
            "enriched",
            key=lambda v: {"user": v["user"]},
            key_format=JsonFormat(),
            headers=lambda v: {"trace": v["trace"], "n": str(v["n"])},
            timestamp="at",
        )
    )
    t = PipelineTester(p)
    t.send(
        "clicks",
        [{"n": 1}, {"n": 0}, {"n": 2}],
        keys=["ann", "bob", "cy"],
        timestamps=[1_000, 2_000, 3_000],
        headers=[[("trace", b"a")], [("trace", b"b")], [("trace", b"c")]],
    )
    t.crash()  # nothing committed: the replay gives the same records once
    t.checkpoint()
    assert t.output_records("enriched") == [
        OutputRecord(
            {"user": "ann", "at": 1_000, "n": 1, "trace": "a"},
            {"user": "ann"},
            (("trace", "a"), ("n", "1")),
            1_000,
        ),
        OutputRecord(
            {"user": "cy", "at": 3_000, "n": 2, "trace": "c"},
            {"user": "cy"},
            (("trace", "c"), ("n", "2")),
            3_000,
        ),
    ]


def test_the_sink_can_keep_the_source_timestamp() -> None:
    p = Pipeline("keep")
    p.source("in").map(lambda v: v * 2).sink("out", timestamp="source")
    t = PipelineTester(p)
    t.send("in", [1, 2], timestamps=[7, 9])
    t.checkpoint()
    assert [(r.value, r.timestamp) for r in t.output_records("out")] == [(2, 7), (4, 9)]


def test_without_stamps_the_producer_stamps_records_as_before() -> None:
    p = Pipeline("plain")
    p.source("in").sink("out", key=lambda v: v)
    t = PipelineTester(p)
    t.send("in", [5])
    t.checkpoint()
    assert t.output_records("out") == [OutputRecord(5, "5", (), None)]


@pytest.mark.parametrize(
    ("headers", "timestamp", "reason"),
    [
        (lambda v: 42, None, "headers must be a mapping or (name, value) pairs"),
        (lambda v: {"n": 1}, None, "header 'n' must be str, bytes or None"),
        (lambda v: [("n",)], None, "a header must be a (name, value) pair"),
        (None, lambda v: "noon", "a timestamp must be an int of milliseconds"),
        (None, lambda v: -5, "a timestamp must be an int of milliseconds"),
        (None, "missing", "KeyError"),
        (lambda v: 1 / 0, None, "ZeroDivisionError"),
    ],
)
def test_bad_stamps_make_dead_letters_with_the_reason_and_keep_the_rest(
    headers: Any, timestamp: Any, reason: str
) -> None:
    p = Pipeline("bad")
    bad = lambda v: v["bad"]  # noqa: E731
    (
        p.source("in").sink(
            "out",
            headers=(lambda v: headers(v) if v["bad"] else None) if headers else None,
            timestamp=(lambda v: timestamp(v) if bad(v) else 1)
            if callable(timestamp)
            else timestamp,
        )
    )
    t = PipelineTester(p)
    t.send("in", [{"bad": False, "missing": 3}, {"bad": True}])
    t.checkpoint()
    assert [r.value for r in t.output_records("out")] == [{"bad": False, "missing": 3}]
    [letter] = t.dead_letters()
    assert letter.offset == 1 and reason in letter.reason, letter.reason


def test_header_pairs_are_accepted_in_order_with_repeats() -> None:
    assert header_list([("a", "1"), ("a", b"2"), ("b", None)]) == [
        ("a", "1"),
        ("a", b"2"),
        ("b", None),
    ]


def test_sink_options_are_checked_when_the_pipeline_is_defined() -> None:
    stream = Pipeline("checks").source("in")
    with pytest.raises(ConfigError, match="headers"):
        stream.sink("out", headers="trace")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="metadata"):
        stream.map(lambda r: r, metadata="yes")  # type: ignore[arg-type]
