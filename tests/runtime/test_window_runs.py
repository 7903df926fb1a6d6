"""Windows and timers on a real broker and Spark local[4], with a worker task killed by
SIGKILL while windows are open or timers pending: every window's final result and every
timer's output appears exactly once, equal to a plain Python computation of the same
input."""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from laminar_kafka import AvroFormat, JsonFormat, Pipeline, RuntimeConfig
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.operators import ProcessContext
from laminar_kafka.operators.partitioning import LIBRDKAFKA_PARTITIONER, murmur2_partition
from laminar_kafka.runtime.driver.events import CheckpointCommitted, GenerationStarted
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import order, produce_orders, read_committed_records
from laminar_kafka.testing.run import BackgroundRun

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

WINDOW_MS = 100
FAR = 1_700_000_000_000 + 100_000  # closes every window of the orders below


def _windowed(name: str, source: str, sink: str) -> Pipeline:
    p = Pipeline(name)
    (
        p.source(
            source,
            value_format=AvroFormat.from_schema("order"),
            partitioned_by="customer",
            timestamp="ts_ms",
        )
        .key_by("customer")
        .tumbling_window(WINDOW_MS / 1000)
        .aggregate(
            initial=lambda: 0,
            add=lambda total, o: total + o["amount"],
            emit=lambda c, w, total: {"customer": c, "end": w.end, "amount": total},
        )
        .sink(sink, key="customer", timestamp="end")
    )
    return p


def _expected(ids: range) -> Counter[tuple[str, int]]:
    totals: Counter[tuple[str, int]] = Counter()
    for i in ids:
        o = order(i)
        totals[(o["customer"], o["ts_ms"] - o["ts_ms"] % WINDOW_MS + WINDOW_MS)] += o["amount"]
    return totals


CUSTOMERS = tuple(f"c{c}" for c in range(10))


def _stamped_sink(topic_factory: TopicFactory, name: str, partitions: int) -> str:
    """A topic for outputs stamped with the orders' event time (November 2023).

    It deletes nothing by time (`TopicFactory` keeps every record): a broker's time
    retention counts from a record's timestamp, and would delete those outputs.
    """
    return topic_factory.create(name, partitions)


def _close_every_window(bootstrap: str, topic: str, customers: Sequence[str] = CUSTOMERS) -> None:
    """One order per customer stamped far ahead: each partition's watermark passes
    every window of the orders before it (they open windows of their own, never closed).
    The customers must cover every partition of `topic`."""
    fmt = AvroFormat.from_schema("order")
    producer = Producer(
        {"bootstrap.servers": bootstrap, "partitioner": LIBRDKAFKA_PARTITIONER["murmur2"]}
    )
    for n, customer in enumerate(customers):
        closer = {"id": 100_000 + n, "customer": customer, "amount": 1, "ts_ms": FAR}
        producer.produce(topic, fmt.encode_one({**closer, "product": "p0"}), customer.encode())
    assert producer.flush(30) == 0


def test_window_results_are_exactly_once_across_a_killed_worker(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = _stamped_sink(topic_factory, source + "-out", 4)
    name = "win-" + source[-8:]
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
    )
    run = BackgroundRun(_windowed(name, source, sink), config, spark_context)
    produce_orders(kafka_bootstrap, source, range(2000))
    decode = JsonFormat().decode_one
    run.wait_for_output(kafka_bootstrap, sink, decode, 100)
    victim = pid_dir / f"{name}.g1.t0.pid"
    os.kill(int(victim.read_text()), signal.SIGKILL)
    # Work in flight: the windows of orders 1900-1999 were open, in the state it held.
    last = 1_700_000_000_000 + 2000
    before = [decode(r.value) for r in read_committed_records(kafka_bootstrap, sink)]
    assert before and all(v["end"] < last for v in before)
    produce_orders(kafka_bootstrap, source, range(2000, 3000))
    _close_every_window(kafka_bootstrap, source)
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    expected = _expected(range(3000))
    run.wait_for_output(kafka_bootstrap, sink, decode, len(expected))
    stats = run.stop()

    records = read_committed_records(kafka_bootstrap, sink)
    values = [decode(r.value) for r in records]
    seen = Counter((v["customer"], v["end"]) for v in values)
    assert [w for w, n in seen.items() if n > 1] == []  # no window twice
    found = Counter({(v["customer"], v["end"]): v["amount"] for v in values})
    assert sum(1 for v in values if v["end"] == last) == 10  # those open windows, once each
    assert found == expected  # every window, with every order in it once
    assert all(r.timestamp == decode(r.value)["end"] for r in records)
    assert stats.restarts == 1
    # Every partition's watermark reached the closers' time: the last Commit says so.
    manifest = CheckpointStore(config.checkpoint_dir, name).latest_complete()
    assert manifest is not None and manifest.min_watermark_ms == FAR


@pytest.mark.parametrize("kind", ["tumbling", "sliding"])
def test_idle_partitions_release_their_windows_and_late_orders_go_aside(
    kind: str,
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = _stamped_sink(topic_factory, source + "-out", 2)
    late = _stamped_sink(topic_factory, source + "-late", 2)
    name = "idle-" + source[-8:]
    p = Pipeline(name)
    keyed = p.source(
        source,
        value_format=AvroFormat.from_schema("order"),
        partitioned_by="customer",
        timestamp="ts_ms",
        idle_timeout=1,
    ).key_by("customer")
    windows = (
        keyed.tumbling_window(60, late_to=late)
        if kind == "tumbling"
        else keyed.sliding_window(60, late_to=late)
    )
    windows.count(emit=lambda c, w, n: {"customer": c, "end": w.end, "orders": n}).sink(sink)
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=0.5,
    )
    # One minute, 10 customers, 10 orders each: one window per customer, or (sliding)
    # one per order, holding the customer's orders up to it.
    per_window = [10] if kind == "tumbling" else list(range(1, 11))
    expected = sorted((f"c{c}", n) for c in range(10) for n in per_window)
    run = BackgroundRun(p, config, spark_context)
    produce_orders(kafka_bootstrap, source, range(100))  # no order ever closes a window
    decode = JsonFormat().decode_one
    found = run.wait_for_output(kafka_bootstrap, sink, decode, len(expected))
    produce_orders(kafka_bootstrap, source, range(100, 110))  # that minute has closed: late
    run.wait_for(
        lambda: len(read_committed_records(kafka_bootstrap, late)) >= 10, 60, "late orders"
    )
    run.wait_for(lambda: _late_counted(run) >= 10, 60, "the late orders in a checkpoint's counts")
    run.stop()
    assert sorted((v["customer"], v["orders"]) for v in found) == expected
    late_ids = [
        AvroFormat.from_schema("order").decode_one(r.value)["id"]
        for r in read_committed_records(kafka_bootstrap, late)
    ]
    assert sorted(late_ids) == list(range(100, 110))
    records = read_committed_records(kafka_bootstrap, sink)
    assert len(records) == len(expected)
    assert all(r.timestamp == decode(r.value)["end"] for r in records)


def _late_counted(run: BackgroundRun) -> int:
    """The late records the newest committed checkpoint counted, over every stage."""
    commits = [e for e in list(run.events) if isinstance(e, CheckpointCommitted)]
    return sum(s.late_records for s in commits[-1].stages) if commits else 0


def _expected_by_product(ids: range) -> Counter[tuple[str, int]]:
    totals: Counter[tuple[str, int]] = Counter()
    for i in ids:
        o = order(i)
        totals[(o["product"], o["ts_ms"] - o["ts_ms"] % WINDOW_MS + WINDOW_MS)] += o["amount"]
    return totals


def test_windows_behind_a_repartition_are_exactly_once_across_a_killed_downstream_task(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    """Stage 0 reads orders keyed by customer, stage 1 sums them per product and window;
    its windows close on the lowest watermark stage 0's tasks wrote."""
    source = topic_factory.create("orders", partitions=4)
    sink = _stamped_sink(topic_factory, source + "-out", 4)
    name = "win2-" + source[-8:]
    p = Pipeline(name)
    (
        p.source(source, value_format=AvroFormat.from_schema("order"), timestamp="ts_ms")
        .key_by("product")
        .tumbling_window(WINDOW_MS / 1000)
        .aggregate(
            initial=lambda: 0,
            add=lambda total, o: total + o["amount"],
            emit=lambda product, w, total: {"product": product, "end": w.end, "amount": total},
        )
        .sink(sink, key="product")
    )
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
    )
    run = BackgroundRun(p, config, spark_context)
    produce_orders(kafka_bootstrap, source, range(2000))
    decode = JsonFormat().decode_one
    run.wait_for_output(kafka_bootstrap, sink, decode, 50)
    victim = pid_dir / f"{name}.g1.t2.pid"  # a task of stage 1, holding open windows
    os.kill(int(victim.read_text()), signal.SIGKILL)
    last = 1_700_000_000_000 + 2000
    before = [decode(r.value) for r in read_committed_records(kafka_bootstrap, sink)]
    assert before and all(v["end"] < last for v in before)
    produce_orders(kafka_bootstrap, source, range(2000, 3000))
    _close_every_window(kafka_bootstrap, source)
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    expected = _expected_by_product(range(3000))
    run.wait_for_output(kafka_bootstrap, sink, decode, len(expected))
    stats = run.stop()

    records = read_committed_records(kafka_bootstrap, sink)
    values = [decode(r.value) for r in records]
    seen = Counter((v["product"], v["end"]) for v in values)
    assert [w for w, n in seen.items() if n > 1] == []
    assert Counter({(v["product"], v["end"]): v["amount"] for v in values}) == expected
    # The sink sets no timestamp=: each result carries its window's end.
    assert [r.timestamp for r in records] == [v["end"] for v in values]
    assert stats.restarts == 1


GAP_MS = 1_000  # longer than the orders below span: no timer fires before the closers


def _seen(customer: str, o: dict[str, Any], ctx: ProcessContext) -> list[Any]:
    """Move the customer's timer to GAP_MS after its latest order."""
    if ctx.state is not None:
        ctx.delete_timer(ctx.state + GAP_MS)
    ctx.state = max(ctx.state or 0, ctx.timestamp)
    ctx.set_timer(ctx.state + GAP_MS)
    return [{"seen": o["id"]}]


def _silent(customer: str, ctx: ProcessContext) -> list[Any]:
    last, ctx.state = ctx.state, None
    return [{"customer": customer, "last": last}]


def test_a_pending_timer_survives_a_killed_worker_and_fires_exactly_once(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = _stamped_sink(topic_factory, source + "-out", 4)
    name = "timer-" + source[-8:]
    p = Pipeline(name)
    (
        p.source(
            source,
            value_format=AvroFormat.from_schema("order"),
            partitioned_by="customer",
            timestamp="ts_ms",
        )
        .key_by("customer")
        .process(_seen, on_timer=_silent, name="silence")
        .sink(sink)
    )
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
    )
    run = BackgroundRun(p, config, spark_context)
    produce_orders(kafka_bootstrap, source, range(200))
    decode = JsonFormat().decode_one
    before = run.wait_for_output(kafka_bootstrap, sink, decode, 200)
    assert all("seen" in v for v in before)  # every customer's timer is pending, committed
    os.kill(int((pid_dir / f"{name}.g1.t0.pid").read_text()), signal.SIGKILL)
    closers = [f"closer-{n}" for n in range(10)]  # customers of their own, in every partition
    assert {murmur2_partition(c.encode(), 4) for c in closers} == set(range(4))
    _close_every_window(kafka_bootstrap, source, closers)
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    run.wait_for_output(kafka_bootstrap, sink, decode, 200 + len(closers) + len(CUSTOMERS))
    stats = run.stop()

    values = [decode(r.value) for r in read_committed_records(kafka_bootstrap, sink)]
    seen = Counter(v["seen"] for v in values if "seen" in v)
    assert seen == Counter([*range(200), *range(100_000, 100_000 + len(closers))])
    alerts = sorted((v["customer"], v["last"]) for v in values if "customer" in v)
    last = {
        c: max(o["ts_ms"] for o in map(order, range(200)) if o["customer"] == c) for c in CUSTOMERS
    }
    assert alerts == sorted(last.items())  # each customer's timer, once; no closer's
    assert stats.restarts == 1
