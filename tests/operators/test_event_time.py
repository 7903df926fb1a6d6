"""Stamping a batch: timestamps, a watermark per record in offset order, refusals with reasons."""

from __future__ import annotations

import random

from laminar_kafka.operators.event_time import KAFKA_TIME, EventTime, Progress, stamp

NOW = 1_700_000_000_000


def test_the_watermark_is_the_highest_timestamp_minus_the_out_of_orderness() -> None:
    spec = EventTime("ts", max_out_of_order_ms=100)
    values = [{"ts": 1_000}, {"ts": 1_500}, {"ts": 1_200}, {"ts": 2_000}]
    s = stamp(spec, values, [0, 1, 2, 3], {}, Progress(), NOW)
    assert s.times == {0: 1_000, 1: 1_500, 2: 1_200, 3: 2_000}
    assert s.marks == {0: 900, 1: 1_400, 2: 1_400, 3: 1_900}  # an older record moves nothing
    assert (s.max_ts, s.watermark, s.refused) == (2_000, 1_900, [])


def test_a_batch_continues_from_the_partition_progress() -> None:
    spec = EventTime("ts", max_out_of_order_ms=0)
    s = stamp(spec, [{"ts": 10}], [5], {}, Progress(max_ts=50, watermark=50), NOW)
    assert s.marks == {5: 50} and s.watermark == 50 and s.max_ts == 50


def test_the_same_records_give_the_same_marks_however_they_are_batched() -> None:
    spec = EventTime("ts", max_out_of_order_ms=5)
    values = [{"ts": t} for t in (3, 9, 4, 20, 15, 30)]
    whole = stamp(spec, values, list(range(6)), {}, Progress(), NOW)
    first = stamp(spec, values[:2], [0, 1], {}, Progress(), NOW)
    rest = stamp(spec, values[2:], [2, 3, 4, 5], {}, Progress(first.max_ts, first.watermark), NOW)
    assert whole.marks == {**first.marks, **rest.marks}


def test_marks_follow_the_record_by_record_rule_from_any_progress() -> None:
    """The rule, record by record: a new highest timestamp raises the watermark to it
    minus the out-of-orderness, never lowers it; an older record moves nothing. That
    holds from a progress whose watermark is below that (a redeploy with less
    out-of-orderness) too: there it waits for a new highest."""
    rng = random.Random(7)
    for _ in range(300):
        lag = rng.choice([0, 3, 50])
        spec = EventTime("ts", max_out_of_order_ms=lag)
        highest = rng.choice([-(2**63), rng.randrange(0, 500)])
        watermark = rng.choice([-(2**63), highest - lag, highest - lag - 40, highest + 5])
        found = [rng.randrange(0, 600) for _ in range(rng.randrange(0, 12))]
        s = stamp(
            spec,
            [{"ts": t} for t in found],
            list(range(len(found))),
            {},
            Progress(highest, watermark),
            NOW,
        )
        expected = []
        for ts in found:
            if ts > highest:
                highest = ts
                watermark = max(watermark, ts - lag)
            expected.append(watermark)
        assert list(s.marks.values()) == expected
        assert (s.max_ts, s.watermark) == (highest, watermark)


def test_records_without_a_usable_timestamp_are_refused_with_the_reason() -> None:
    spec = EventTime("ts", max_future_ms=1_000)
    values = [{"ts": "noon"}, {}, {"ts": -1}, {"ts": NOW + 5_000}, {"ts": True}, {"ts": 7}]
    s = stamp(spec, values, [0, 1, 2, 3, 4, 5], {}, Progress(), NOW)
    reasons = dict(s.refused)
    assert set(reasons) == {0, 1, 2, 3, 4}
    assert "not an int of milliseconds" in reasons[0]
    assert "KeyError" in reasons[1]
    assert "ahead of the clock" in reasons[3]
    assert s.times == {5: 7} and s.watermark == 7  # the future record moved no watermark


def test_kafka_timestamps_and_functions() -> None:
    s = stamp(EventTime(KAFKA_TIME), ["a", "b"], [0, 1], {0: 40, 1: None}, Progress(), NOW)
    assert s.times == {0: 40} and [o for o, _ in s.refused] == [1]
    s = stamp(EventTime(lambda v: v * 10), [1, 2], [0, 1], {}, Progress(), NOW)
    assert s.times == {0: 10, 1: 20}


def test_a_carried_watermark_moves_with_its_writers_not_with_timestamps() -> None:
    spec = EventTime(KAFKA_TIME, max_out_of_order_ms=0, carried=True)
    s = stamp(spec, ["a", "b"], [0, 1], {0: 500, 1: 900}, Progress(watermark=100), NOW)
    assert s.marks == {0: 100, 1: 100} and s.watermark == 100 and s.max_ts == 900


def test_an_internal_partition_takes_the_lowest_of_its_writers() -> None:
    p = Progress()
    both = frozenset({0, 1})
    assert not p.heard(0, 1, 500, both)  # writer 1 not heard yet: no watermark
    assert p.heard(1, 1, 300, both) and p.watermark == 300
    assert p.heard(1, 1, 700, both) and p.watermark == 500
    assert not p.heard(0, 1, 400, both)  # a writer never goes back
    assert not p.heard(0, 0, 9_000, both)  # a zombie of an older generation
    assert not p.heard(0, 2, 9_000, both) and p.writers == {0: 9_000}  # a new generation
    assert p.watermark == 500  # ... waits for all its writers, and never falls
    assert p.heard(1, 2, 8_000, both) and p.watermark == 8_000
