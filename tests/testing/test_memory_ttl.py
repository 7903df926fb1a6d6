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
