"""Windows in the test kit, through the engine's own flow runner: final results exactly
once across crashes, idle partitions, late records to a side topic, bounded state."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.runtime.driver.events import CheckpointCommitted
from laminar_kafka.testing import PipelineTester, run_pipeline

MINUTE = 60_000
BASE = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE


def revenue() -> Pipeline:
    p = Pipeline("revenue")
    (
        p.source("orders", timestamp="ts", max_out_of_order=10, partitioned_by="product")
        .key_by("product")
        .tumbling_window(60, allowed_lateness=5, late_to="late-orders")
        .aggregate(
            initial=lambda: 0,
            add=lambda total, o: total + o["amount"],
            emit=lambda product, w, total: {"product": product, "end": w.end, "revenue": total},
        )
        .sink("revenue", timestamp="end")
    )
    return p


def orders(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """Orders shuffled within 8 s of each other: none late under any interleaving."""
    rng = random.Random(seed)
    out = [
        {"id": i, "product": f"p{i % 3}", "amount": 1 + i % 7, "ts": BASE + i * 1_000}
        for i in range(n)
    ]
    for i in range(0, n - 8, 8):
        window = out[i : i + 8]
        rng.shuffle(window)
        out[i : i + 8] = window
    return out


def expected_revenue(items: list[dict[str, Any]], closed_before: int) -> Counter[tuple[str, int]]:
    totals: Counter[tuple[str, int]] = Counter()
    for o in items:
        end = o["ts"] - o["ts"] % MINUTE + MINUTE
        if end + 5_000 <= closed_before:
            totals[(o["product"], end)] += o["amount"]
    return totals


def test_each_window_emits_its_sum_once_stamped_with_its_end() -> None:
    items = orders(400)
    tester = PipelineTester(revenue(), partitions=2)
    tester.send("orders", items)
    tester.checkpoint()
    records = tester.output_records("revenue")
    results = Counter({(r.value["product"], r.value["end"]): r.value["revenue"] for r in records})
    assert len(records) == len(results)  # no window twice
    assert all(r.timestamp == r.value["end"] for r in records)
    watermark = max(o["ts"] for o in items) - 10_000
    assert results == expected_revenue(items, watermark + 1)


@pytest.mark.parametrize("seed", range(12))
def test_final_results_are_exactly_once_whatever_the_crashes(seed: int) -> None:
    items = orders(300, seed)
    expected = run_pipeline(revenue(), {"orders": items}, partitions=2)["revenue"]
    rng = random.Random(seed)
    tester = PipelineTester(revenue(), partitions=2, batch_size=rng.choice([1, 7, 50]))
    sent = 0
    while sent < len(items):
        step = rng.randint(1, 60)
        tester.send("orders", items[sent : sent + step])
        sent += step
        action = rng.random()
        if action < 0.3:
            tester.checkpoint()
        elif action < 0.5:
            tester.crash()
    tester.checkpoint()
    assert sorted(tester.output("revenue"), key=str) == sorted(expected, key=str)


def test_late_records_go_to_the_side_topic_once_with_the_window_they_missed() -> None:
    tester = PipelineTester(revenue())
    on_time = [{"id": 1, "product": "p", "amount": 5, "ts": BASE + 1_000}]
    closing = [{"id": 2, "product": "p", "amount": 1, "ts": BASE + MINUTE + 16_000}]
    late = [{"id": 3, "product": "p", "amount": 7, "ts": BASE + 2_000}]
    tester.send("orders", on_time + closing + late)
    tester.crash()
    tester.checkpoint()
    assert tester.output("revenue") == [{"product": "p", "end": BASE + MINUTE, "revenue": 5}]
    assert tester.output("late-orders") == late
    [record] = tester.output_records("late-orders")
    assert dict(record.headers)["laminar.late.windows"] == f"[{BASE},{BASE + MINUTE})"


def test_an_idle_partition_stops_holding_its_windows_back() -> None:
    p = Pipeline("idle")
    (
        p.source("in", timestamp="ts", idle_timeout=30, partitioned_by="k")
        .key_by("k")
        .tumbling_window(60)
        .count()
        .sink("counts")
    )
    tester = PipelineTester(p)
    tester.send("in", [{"k": "a", "ts": BASE + 1}])
    tester.advance_clock(29)
    tester.checkpoint()
    assert tester.output("counts") == []  # not idle yet: the window waits for more
    tester.advance_clock(2)
    tester.checkpoint()
    window = {"key": "a", "start": BASE, "end": BASE + MINUTE, "value": 1}
    assert tester.output("counts") == [window]


def test_a_stalled_partition_keeps_its_own_windows_open_but_not_the_others() -> None:
    p = Pipeline("stall")
    (
        p.source("in", timestamp="ts", partitioned_by="k")
        .key_by("k")
        .tumbling_window(60)
        .count()
        .sink("counts")
    )
    tester = PipelineTester(p, partitions=2)
    keys = ["a", "b", "c", "d"]  # spread over both partitions by murmur2
    tester.send("in", [{"k": k, "ts": BASE + 1} for k in keys])
    tester.send("in", [{"k": "a", "ts": BASE + 2 * MINUTE}])
    tester.checkpoint()
    closed = {r["key"] for r in tester.output("counts")}
    # Only the partition that moved on closed its window; the other still holds its keys.
    assert "a" in closed and closed != set(keys)


def test_windows_need_event_time_on_every_source() -> None:
    stream = Pipeline("no-time").source("in", partitioned_by="k").key_by("k")
    with pytest.raises(ConfigError, match="windows need event time"):
        stream.tumbling_window(60)


def test_the_example_pipeline_gives_each_customer_minute_once() -> None:
    from laminar_kafka.api.loader import load_pipeline
    from laminar_kafka.testing.orders import order

    example = Path(__file__).resolve().parents[2] / "pipelines" / "spend_per_minute.py"
    pipeline = load_pipeline(str(example))
    # Order i at 1_700_000_000_000 + i * 500 ms: 120 orders per minute, 12 per customer.
    items = [{**order(i), "ts_ms": 1_700_000_000_000 + i * 500} for i in range(1_000)]
    late = {**order(1_000), "ts_ms": 1_700_000_000_000}
    out = run_pipeline(pipeline, {"orders": [*items, late]}, partitions=3)
    minutes = out["spend-per-minute"]
    assert len({(m["customer"], m["minute_end"]) for m in minutes}) == len(minutes)
    for m in minutes:
        inside = [
            o
            for o in items
            if o["customer"] == m["customer"] and m["minute_start"] <= o["ts_ms"] < m["minute_end"]
        ]
        assert (m["orders"], m["amount"]) == (len(inside), sum(o["amount"] for o in inside))
    assert out["orders-late"] == [late]


def sessions() -> Pipeline:
    p = Pipeline("sessions")
    (
        p.source("clicks", timestamp="ts", max_out_of_order=60, partitioned_by="user")
        .key_by("user")
        .session_window(30)
        .aggregate(
            initial=lambda: [],
            add=lambda pages, click: [*pages, click["page"]],
            merge=lambda a, b: a + b,
            emit=lambda user, w, pages: {"user": user, "start": w.start, "pages": sorted(pages)},
        )
        .sink("sessions")
    )
    return p


def test_a_session_merges_two_sessions_after_a_restart() -> None:
    tester = PipelineTester(sessions())
    tester.send("clicks", [{"user": "u", "page": "a", "ts": BASE}])
    tester.send("clicks", [{"user": "u", "page": "c", "ts": BASE + 40_000}])
    tester.checkpoint()
    tester.send("clicks", [{"user": "u", "page": "x", "ts": BASE + 40_000}])
    tester.crash()  # back to two sessions, [0, 30 s) and [40 s, 70 s); x is read again
    tester.send("clicks", [{"user": "u", "page": "b", "ts": BASE + 20_000}])  # bridges them
    tester.send("clicks", [{"user": "u", "page": "end", "ts": BASE + 200_000}])
    tester.checkpoint()
    pages = ["a", "b", "c", "x"]
    assert tester.output("sessions") == [{"user": "u", "start": BASE, "pages": pages}]
    [record] = tester.output_records("sessions")
    assert record.timestamp == BASE + 70_000  # the session's end


def test_session_aggregates_need_merge() -> None:
    stream = Pipeline("m").source("in", timestamp="ts", partitioned_by="k").key_by("k")
    with pytest.raises(ConfigError, match="merge="):
        stream.session_window(30).aggregate(lambda: 0, lambda n, _v: n + 1)


@pytest.mark.parametrize("seed", range(6))
def test_sessions_are_exactly_once_whatever_the_crashes(seed: int) -> None:
    rng = random.Random(seed)
    clicks = []
    ts = BASE
    for i in range(200):
        ts += rng.choice([1_000, 5_000, 29_000, 31_000, 90_000])
        clicks.append({"user": f"u{i % 4}", "page": f"p{i}", "ts": ts})
    expected = run_pipeline(sessions(), {"clicks": clicks}, partitions=2)["sessions"]
    tester = PipelineTester(sessions(), partitions=2, batch_size=rng.choice([1, 9]))
    for start in range(0, len(clicks), 20):
        tester.send("clicks", clicks[start : start + 20])
        if rng.random() < 0.4:
            tester.checkpoint()
        elif rng.random() < 0.5:
            tester.crash()
    tester.checkpoint()
    assert sorted(tester.output("sessions"), key=str) == sorted(expected, key=str)
    assert len(expected) > 10


def test_a_replay_after_a_crash_is_not_taken_for_idleness() -> None:
    p = Pipeline("replay")
    (
        p.source("in", timestamp="ts", idle_timeout=5, partitioned_by="k")
        .key_by("k")
        .tumbling_window(60)
        .count()
        .sink("counts")
    )
    items = [{"k": "a", "ts": BASE + i * 1_000} for i in range(150)]
    expected = run_pipeline(p, {"in": items})["counts"]
    tester = PipelineTester(p)
    tester.send("in", items)
    tester.crash()
    tester.advance_clock(6)  # the replay runs first: only then is the partition idle
    tester.checkpoint()
    assert tester.output("counts")[: len(expected)] == expected
    committed = [e for e in tester.events if isinstance(e, CheckpointCommitted)]
    assert committed and not any(s.late_records for e in committed for s in e.stages)


def _keyed() -> Any:
    return Pipeline("checks").source("in", timestamp="ts", partitioned_by="k").key_by("k")


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: _keyed().tumbling_window(60).count(emit=lambda k, n: n), "emit\\(key, window"),
        (
            lambda: _keyed().tumbling_window(60).count().map(lambda r: r, metadata=True),
            "metadata=True after a window",
        ),
        (
            lambda: _keyed().tumbling_window(60).count().key_by("k").tumbling_window(60),
            "into another window yet: one window or process step per stream",
        ),
        (lambda: Pipeline("x").source("in", max_future=5), "need event time"),
        (lambda: _keyed().hopping_window(60, every=90), "must not exceed"),
        (lambda: _keyed().tumbling_window(0), "positive"),
    ],
)
def test_window_definitions_are_checked_when_written(build: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        build()


def test_late_to_must_be_a_topic_of_its_own() -> None:
    p = Pipeline("late")
    _ = (
        p.source("in", timestamp="ts", partitioned_by="k")
        .key_by("k")
        .tumbling_window(60, late_to="counts")
        .count()
        .sink("counts")
    )
    with pytest.raises(ConfigError, match="late_to topic 'counts'"):
        p.validate()


def revenue_after_a_repartition() -> Pipeline:
    """Orders arrive by id; revenue is kept per product, behind a repartition."""
    p = Pipeline("revenue-2")
    (
        p.source("orders", timestamp="ts", max_out_of_order=10)
        .key_by("product")
        .tumbling_window(60, allowed_lateness=5, late_to="late-orders")
        .aggregate(
            initial=lambda: 0,
            add=lambda total, o: total + o["amount"],
            emit=lambda product, w, total: {"product": product, "end": w.end, "revenue": total},
        )
        .sink("revenue")
    )
    return p


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [str(o["id"]) for o in items]


@pytest.mark.parametrize("seed", range(8))
def test_windows_after_a_repartition_are_exactly_once_whatever_the_crashes(seed: int) -> None:
    items = orders(300, seed)
    p = revenue_after_a_repartition()
    assert len({f.source.topic for f in p.flows}) == 2  # two stages
    expected = run_pipeline(p, {"orders": items}, partitions=2, keys={"orders": _ids(items)})
    assert len(expected["revenue"]) >= 12 and expected["late-orders"] == []
    rng = random.Random(seed)
    tester = PipelineTester(p, partitions=2, batch_size=rng.choice([1, 7, 50]))
    sent = 0
    while sent < len(items):
        step = rng.randint(1, 60)
        part = items[sent : sent + step]
        tester.send("orders", part, keys=_ids(part))
        sent += step
        if rng.random() < 0.3:
            tester.checkpoint()
        elif rng.random() < 0.3:
            tester.crash()
    tester.checkpoint()
    assert sorted(tester.output("revenue"), key=str) == sorted(expected["revenue"], key=str)


def test_a_lagging_upstream_partition_holds_the_next_stage_back_instead_of_being_late() -> None:
    tester = PipelineTester(revenue_after_a_repartition(), partitions=2)
    ahead = [{"id": i, "product": "p", "amount": 1, "ts": BASE + i * 30_000} for i in range(20)]
    # Keys "a" and "d" are in partitions 0 and 1 (murmur2): one runs 10 minutes ahead.
    tester.send("orders", ahead, keys=["a"] * len(ahead))
    tester.checkpoint()
    assert tester.output("revenue") == []  # the other partition has said nothing yet
    behind = [{"id": 99, "product": "p", "amount": 5, "ts": BASE + 1_000}]
    tester.send("orders", behind, keys=["d"])  # the other one, still in the first minute
    tester.checkpoint()
    assert tester.output("revenue") == []  # still held: partition 1 is in the first minute
    moving_on = [{"id": 100, "product": "q", "amount": 1, "ts": BASE + 2 * MINUTE}]
    tester.send("orders", moving_on, keys=["d"])
    tester.checkpoint()
    first = tester.output("revenue")[0]
    assert first == {"product": "p", "end": BASE + MINUTE, "revenue": 2 + 5}
    assert tester.output("late-orders") == []


def _stamped_downstream() -> Pipeline:
    """Counts per 10 s window and key, then per 10 s window of those results' stamps,
    behind a repartition: the next stage reads their event time from the Kafka timestamp."""
    p = Pipeline("stamps")
    (
        p.source("in", timestamp="ts", partitioned_by="k")
        .key_by("k")
        .tumbling_window(10, allowed_lateness=30)
        .count()
        .key_by(lambda r: "all", name="everything")
        .tumbling_window(10, late_to="late-results")
        .aggregate(lambda: [], lambda got, r: [*got, r["end"]])
        .sink("ends")
    )
    return p


def test_a_result_crosses_to_the_next_stage_stamped_with_its_window_end_never_late() -> None:
    """The first stage's window [0, 10 s) closes at 40 s (30 s of lateness): stamped 10 s,
    after its stage said 35 s, it would be late downstream; the stage holds its watermark
    back by the lateness instead."""
    tester = PipelineTester(_stamped_downstream())
    at = [1, 35, 45, 100, 10_000]
    tester.send("in", [{"k": "a", "ts": BASE + s * 1_000} for s in at])
    tester.checkpoint()
    assert tester.output("late-results") == []
    windows = {w["start"] - BASE: w["value"] for w in tester.output("ends")}
    assert windows == {
        10_000: [BASE + 10_000],  # [0, 10 s) of the first stage, stamped 10 s
        40_000: [BASE + 40_000],  # [30 s, 40 s)
        50_000: [BASE + 50_000],  # [40 s, 50 s)
        110_000: [BASE + 110_000],  # [100 s, 110 s)
    }
