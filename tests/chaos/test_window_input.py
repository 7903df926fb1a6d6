"""The input of windowed order rounds: every record's fate holds under any interleaving of
the partitions, the oracle agrees with the engine in memory, bad settings are refused."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.window_checks import window_starts
from laminar_kafka.chaos.window_input import (
    AHEAD_MS,
    BROKER_FUTURE_MS,
    SAFETY_MS,
    WindowInput,
    WindowShape,
    late_count,
    plan_input,
)
from laminar_kafka.chaos.window_workload import WindowWorkload
from laminar_kafka.chaos.workloads import OrderWorkload, order_workload
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.partitioning import PARTITIONERS
from laminar_kafka.runtime.task.event_clock import wall_ms
from laminar_kafka.testing import PipelineTester

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
PARTITIONS = 4


def windowed(kind: str, **source: Any) -> Pipeline:
    """Orders keyed by product, windowed as `kind` says, revenue per window."""
    p = Pipeline(f"{kind}-revenue")
    keyed = p.source(
        "orders",
        value_format=AvroFormat.from_schema("order"),
        **{"timestamp": "ts_ms", "max_out_of_order": 5, "idle_timeout": 30, **source},
    ).key_by("product")
    if kind == "hopping":
        stream = keyed.hopping_window(60, 20, allowed_lateness=10, late_to="late")
    elif kind == "session":
        stream = keyed.session_window(30, allowed_lateness=10, late_to="late")
    else:
        stream = keyed.tumbling_window(60, allowed_lateness=10)
    (
        stream.aggregate(
            lambda: 0,
            lambda total, o: total + o["amount"],
            lambda product, w, total: {"product": product, "end": w.end, "revenue": total},
            merge=lambda a, b: a + b,
        ).sink("revenue", value_format=JsonFormat(), key="product")
    )
    return p


def revenue_per_minute() -> Pipeline:
    return load_pipeline(str(PIPELINES / "revenue_per_minute.py"))


def shapes() -> list[Pipeline]:
    return [revenue_per_minute(), windowed("hopping"), windowed("session"), windowed("tumbling")]


Queues = dict[int, list[dict[str, Any]]]


def partitions_of(planned: WindowInput, shape: WindowShape) -> Queues:
    """The plan's orders per partition, in production order."""
    partition_of = PARTITIONERS[shape.source.source.partitioner]
    queues: Queues = {p: [] for p in range(PARTITIONS)}
    for o in planned.orders:
        queues[partition_of(o["customer"].encode(), PARTITIONS)].append(o)
    return queues


def replay(
    shape: WindowShape, planned: WindowInput, rng: random.Random, first: int | None = None
) -> None:
    """Read the plan's partitions in a random interleaving (or partition `first` to its
    end first), the watermark of each partition and their lowest as the runtime computes
    them, and check every record's fate against them."""
    w, lag = shape.window, shape.event_time.max_out_of_order_ms
    queues = {p: list(q) for p, q in partitions_of(planned, shape).items()}
    weights = [rng.expovariate(1.0) for _ in range(PARTITIONS)]
    highest: dict[int, int] = {}
    while any(queues.values()):
        ready = [p for p in queues if queues[p]]
        p = first if first in ready else rng.choices(ready, [weights[q] for q in ready])[0]
        o = queues[p].pop(0)
        ts = o["ts_ms"]
        highest[p] = max(highest.get(p, ts), ts)
        own = highest[p] - lag  # closes the windows of a single-stage task's partition
        lowest = min(highest.values()) - lag if len(highest) == PARTITIONS else None
        starts = window_starts(ts, w.size_ms, w.every_ms)
        ends = [ts + w.size_ms] if w.kind == "session" else [s + w.size_ms for s in starts]
        if o["id"] in planned.late_ids:
            assert lowest is None or lowest >= max(ends) + w.lateness_ms, o
        else:  # no window of it closed, even by the highest watermark it can meet
            assert own <= ts + w.lateness_ms, o
            assert own < min(ends) + w.lateness_ms, o
    assert min(highest.values()) - lag == planned.final_watermark


@pytest.mark.parametrize("pipeline", shapes(), ids=lambda p: p.name)
def test_every_records_fate_holds_under_any_interleaving(pipeline: Pipeline) -> None:
    workload = WindowWorkload(pipeline, 600, PARTITIONS)
    rng = random.Random(7)
    for _ in range(20):
        replay(workload.shape, workload.input, rng)
    for first in range(PARTITIONS):
        replay(workload.shape, workload.input, rng, first)


def test_the_replays_catch_a_jitter_past_the_bound() -> None:
    workload = WindowWorkload(revenue_per_minute(), 600, PARTITIONS)
    wide = replace(workload.timeline, jitter_ms=3 * workload.timeline.jitter_ms)
    planned = plan_input(workload.shape, wide, 600, PARTITIONS, wall_ms())
    with pytest.raises(AssertionError):
        replay(workload.shape, planned, random.Random(7))


@pytest.mark.parametrize("pipeline", shapes(), ids=lambda p: p.name)
def test_stamps_stay_ahead_of_the_wall_clock_and_inside_the_horizon(pipeline: Pipeline) -> None:
    before = wall_ms()
    workload = WindowWorkload(pipeline, 600, PARTITIONS)
    planned, shape = workload.input, workload.shape
    on_time = [o["ts_ms"] for o in planned.orders if o["id"] not in planned.late_ids]
    late = [o["ts_ms"] for o in planned.orders if o["id"] in planned.late_ids]
    assert len(planned.orders) == 600 and len(late) == late_count(600) == 12
    assert min(on_time) >= before + AHEAD_MS
    assert max(on_time) <= wall_ms() + BROKER_FUTURE_MS - SAFETY_MS  # the closers
    # Late below what idle partitions rise to: the wall clock minus max_out_of_order.
    reach = shape.window.size_ms + shape.window.lateness_ms + shape.event_time.max_out_of_order_ms
    assert max(late) + reach <= before
    ids = [o["id"] for o in planned.orders]
    assert ids == list(range(600))
    assert min(planned.late_ids) >= 600 * 0.4 and max(planned.late_ids) < 600 * 0.7
    # The round holds back the first late order and all after it (until a checkpoint
    # holds every task's watermark): its place in the production order.
    records, at = workload.plan({"orders": "orders"}, PARTITIONS), workload.watermarked_from
    decode = shape.source.source.value_format.decode_one
    late_ids = workload.input.late_ids
    assert at is not None and decode(records[at].value)["id"] == min(late_ids)
    assert not any(decode(r.value)["id"] in late_ids for r in records[:at])


@pytest.mark.parametrize("pipeline", shapes(), ids=lambda p: p.name)
def test_the_batch_oracle_agrees_with_the_engine_in_memory(pipeline: Pipeline) -> None:
    workload = WindowWorkload(pipeline, 600, PARTITIONS)
    counted = workload.expected_outputs()
    workload.plan({"orders": "orders"}, PARTITIONS)
    assert workload.expected_outputs() == counted  # every plan has the same shape
    orders = list(workload.input.orders)
    tester = PipelineTester(pipeline, partitions=PARTITIONS)
    # As in a round, the late orders come once a checkpoint holds every task's watermark:
    # only then is each late at the window's stage too, whatever the tasks' timing.
    at = workload.watermarked_from or len(orders)
    for part in (orders[:at], orders[at:]):
        tester.send("orders", part, keys=[o["customer"] for o in part])
        tester.checkpoint()
    out = tester.outputs()
    results = out[workload.sink_flow.sink.topic]
    late = out.get(workload.late_topic or "", [])
    assert workload.check(results, late).exact
    windows = len(workload.expected.values)
    assert windows >= 3 * 13 and len(results) == windows
    assert len(late) == (late_count(600) if workload.late_topic else 0)


def test_the_windowed_workload_is_picked_when_a_window_feeds_the_sink() -> None:
    assert isinstance(order_workload(revenue_per_minute(), 100, 4), WindowWorkload)
    product_totals = load_pipeline(str(PIPELINES / "product_totals.py"))
    assert isinstance(order_workload(product_totals, 100, 4), OrderWorkload)


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ({"idle_timeout": 2}, "idle_timeout"),
        ({"max_future": 600}, "do not fit"),
        ({"timestamp": "kafka"}, "ts_ms"),
    ],
)
def test_settings_that_leave_no_safe_plan_are_refused(source: dict[str, Any], why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        WindowWorkload(windowed("tumbling", **source), 600, PARTITIONS)


def test_windows_too_large_for_the_horizon_are_refused() -> None:
    p = Pipeline("hourly")
    (
        p.source("orders", value_format=AvroFormat.from_schema("order"), timestamp="ts_ms")
        .key_by("product")
        .tumbling_window(3600)
        .count()
        .sink("counts")
    )
    with pytest.raises(ConfigError, match="use smaller windows or --input"):
        WindowWorkload(p, 600, PARTITIONS)


def test_updates_and_steps_the_oracle_cannot_follow_are_refused() -> None:
    updates = Pipeline("updates")
    (
        updates.source("orders", timestamp="ts_ms")
        .key_by("product")
        .tumbling_window(60, emit="updates")
        .count()
        .sink("counts")
    )
    with pytest.raises(ConfigError, match="emits updates"):
        order_workload(updates, 600, PARTITIONS)
    mapped = Pipeline("mapped")
    (
        mapped.source("orders", timestamp="ts_ms")
        .map(lambda o: {**o, "amount": 2 * o["amount"]})
        .key_by("product")
        .tumbling_window(60)
        .count()
        .sink("counts")
    )
    with pytest.raises(ConfigError, match="other than key_by"):
        order_workload(mapped, 600, PARTITIONS)
