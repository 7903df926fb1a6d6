"""State TTL through the test kit's engine, with its clock moved by hand: an expired key
is gone from the checkpoint, so after a crash and restore its count starts over."""

from __future__ import annotations

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.testing import PipelineTester

JSON = JsonFormat()


def _word_counts(ttl: float | None) -> Pipeline:
    pipeline = Pipeline("word-counts")
    (
        pipeline.source("words", value_format=JSON, partitioned_by="word")
        .key_by("word")
        .count(emit=lambda w, n: {"word": w, "count": n}, ttl=ttl)
        .sink("counts", value_format=JSON)
    )
    return pipeline


def _words(*words: str) -> list[dict[str, str]]:
    return [{"word": w} for w in words]


def test_an_expired_key_is_absent_after_a_restore() -> None:
    tester = PipelineTester(_word_counts(ttl=10))
    tester.send("words", _words("apple", "pear", "apple"))
    tester.advance_clock(6)
    tester.send("words", _words("pear"))  # pear: updated at 6 s, apple last at 0 s
    tester.checkpoint()
    tester.advance_clock(5)  # 11 s: apple expired, pear (5 s) not
    tester.checkpoint()  # the snapshot taken now holds pear only
    tester.advance_clock(-11)  # back to 0 s: were apple still in the state, it would count on
    tester.crash()  # restore from that snapshot
    tester.send("words", _words("apple", "pear"))
    tester.checkpoint()
    assert tester.output("counts")[-2:] == [
        {"word": "apple", "count": 1},  # absent from the restored state: starts over
        {"word": "pear", "count": 3},
    ]


def test_a_key_kept_updated_never_expires_and_without_a_ttl_none_does() -> None:
    for ttl in (10, None):
        tester = PipelineTester(_word_counts(ttl))
        for _ in range(5):
            tester.send("words", _words("apple"))
            tester.advance_clock(9 if ttl is not None else 3600)
        tester.checkpoint()
        tester.crash()
        tester.send("words", _words("apple"))
        tester.checkpoint()
        assert tester.output("counts")[-1] == {"word": "apple", "count": 6}, ttl


def _event_time_counts() -> Pipeline:
    pipeline = Pipeline("word-counts")
    (
        pipeline.source("words", value_format=JSON, partitioned_by="word", timestamp="at")
        .key_by("word")
        .count(emit=lambda w, n: {"word": w, "count": n}, ttl=10, ttl_time="event")
        .sink("counts", value_format=JSON)
    )
    return pipeline


def _at(ms: int, *words: str) -> list[dict[str, object]]:
    return [{"word": w, "at": ms} for w in words]


def test_in_event_time_the_watermark_expires_a_key_not_the_clock() -> None:
    tester = PipelineTester(_event_time_counts())
    tester.send("words", _at(1_000, "apple", "plum", "pear"))
    tester.send("words", _at(6_000, "pear"))
    tester.advance_clock(3600)  # an hour of wall clock: in event time, nothing happened
    tester.checkpoint()
    tester.crash()  # every key restored unexpired
    tester.send("words", _at(10_999, "apple"))  # the watermark short of 1 s + 10 s: kept
    tester.send("words", _at(11_000, "fig"))  # it reaches it: plum expires, pear (6 s) not
    tester.checkpoint()  # the snapshot taken now holds apple, pear and fig
    tester.crash()
    tester.send("words", _at(11_001, "plum", "pear", "apple"))
    tester.checkpoint()
    assert tester.output("counts")[3:] == [
        {"word": "pear", "count": 2},
        {"word": "apple", "count": 2},
        {"word": "fig", "count": 1},
        {"word": "plum", "count": 1},  # expired: starts over
        {"word": "pear", "count": 3},
        {"word": "apple", "count": 3},
    ]


def test_in_event_time_behind_a_repartition_the_carried_watermark_expires_keys() -> None:
    pipeline = Pipeline("word-counts")
    (
        pipeline.source("words", value_format=JSON, timestamp="at")  # not partitioned_by
        .key_by("word")
        .count(emit=lambda w, n: {"word": w, "count": n}, ttl=10, ttl_time="event")
        .sink("counts", value_format=JSON)
    )
    tester = PipelineTester(pipeline)
    tester.send("words", _at(1_000, "apple", "pear"))
    tester.send("words", _at(5_000, "apple"))
    tester.send("words", _at(14_999, "fig"))  # the next stage hears of 14.999 s after it
    tester.send("words", _at(14_999, "pear", "apple"))  # pear (1 s) expired, apple (5 s) not
    tester.send("words", _at(30_000, "fig"))
    tester.send("words", _at(30_000, "apple"))  # apple (now 14.999 s) expired at 24.999 s
    tester.checkpoint()
    assert tester.output("counts")[3:] == [
        {"word": "fig", "count": 1},
        {"word": "pear", "count": 1},
        {"word": "apple", "count": 3},
        {"word": "fig", "count": 2},  # the next stage was still at 14.999 s then
        {"word": "apple", "count": 1},
    ]
