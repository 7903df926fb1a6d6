"""Interval joins run by the real engine in one process (memory transport): both sides
repartitioned into one stage, exactly once through a crash, equal to the batch join."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline, faults
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.operators.interval_join import IntervalHow
from laminar_kafka.runtime.driver.events import CheckpointAborted, CheckpointCommitted, RuntimeEvent
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.interval_workload import (
    BASE,
    ORDERS,
    PAID,
    PAYMENTS,
    WITHIN_S,
    batch_interval_join,
    interval_pipeline,
    order,
    payment,
    tick,
)
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader

JSON = JsonFormat()


def _send(broker: MemoryBroker, ids: range) -> None:
    for i in ids:
        broker.append((ORDERS, i % 2), JSON.encode_one(order(i)))
        p = payment(i)
        if p is not None:
            broker.append((PAYMENTS, i % 2), JSON.encode_one(p))


def _end(broker: MemoryBroker, n: int) -> None:
    for p in range(2):
        broker.append((ORDERS, p), JSON.encode_one(tick(p, n)))
        broker.append((PAYMENTS, p), JSON.encode_one(tick(p, n)))


def _messages(broker: MemoryBroker, topic: str) -> list[Any]:
    if broker.partitions(topic) == 0:
        return []
    reader = MemoryReader(broker, "reader", 100_000)
    reader.assign({(topic, p): 0 for p in range(broker.partitions(topic))})
    return list(reader.poll(0))


def _read(broker: MemoryBroker, topic: str) -> list[Any]:
    return [JSON.decode_one(m.value()) for m in _messages(broker, topic)]


def _key(r: dict[str, Any]) -> tuple[int, int]:
    return r["id"], -1 if r["pay"] is None else r["pay"]


def _broker() -> MemoryBroker:
    broker = MemoryBroker()
    broker.create(ORDERS, 2)
    broker.create(PAYMENTS, 2)
    return broker


def _expected(n: int, left: bool) -> list[Any]:
    orders = [order(i) for i in range(n)]
    payments = [p for i in range(n) if (p := payment(i)) is not None]
    return sorted(batch_interval_join(orders, payments, 0, WITHIN_S * 1000, left), key=_key)


def _batches(broker: MemoryBroker, sizes: list[int]) -> Iterator[None]:
    """Send `sizes` orders (and payments) one batch per call, then the ticks."""
    start = 0
    for size in sizes:
        _send(broker, range(start, start + size))
        start += size
        yield
    _end(broker, start)
    yield


@pytest.mark.parametrize(("how", "state_store"), [("inner", "memory"), ("left", "disk")])
def test_a_crash_after_the_snapshot_recovers_to_the_batch_interval_join(
    tmp_path: Path, how: IntervalHow, state_store: str
) -> None:
    """With deltas: the crash at checkpoint 3 restores the base of 1 plus the delta of 2
    (buffers and timers in memory, or on disk)."""
    broker = _broker()
    feeding = _batches(broker, [20, 20, 20])
    next(feeding)
    expected = _expected(60, how == "left")

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            next(feeding, None)

    config = replace(in_process_config(tmp_path, 2), state_store=state_store, full_snapshot_every=3)
    with faults.kill_threads_at(FaultPoint.AFTER_SNAPSHOT, min_checkpoint=3):
        run_in_process(
            interval_pipeline(how),
            broker,
            config,
            6,
            timeout_s=60,
            listener=feed,
            until=lambda: len(_read(broker, PAID)) >= len(expected),
        )

    got = sorted(_read(broker, PAID), key=_key)
    assert got == expected
    assert any(r["pay"] is None for r in got) == (how == "left")
    assert list(tmp_path.rglob("*.delta")), "no checkpoint wrote a delta"


def test_streams_without_event_time_are_refused() -> None:
    pipeline = Pipeline("p")
    timed = pipeline.source(ORDERS, timestamp="ts")
    plain = pipeline.source(PAYMENTS)
    with pytest.raises(ConfigError, match=r"interval joins need event time.*'payments'"):
        timed.join_interval(plain, on="customer", within=(0, 10))
    with pytest.raises(ConfigError, match=r"within must be \(before, after\)"):
        timed.join_interval(timed, on="customer", within=10)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="how must be 'inner', 'left' or 'outer'"):
        timed.join_interval(timed, on="customer", within=(0, 1), how="right")  # type: ignore[arg-type]
    joined = timed.join_interval(pipeline.source("other", timestamp="ts"), "c", (0, 1))
    with pytest.raises(ConfigError, match="metadata=True after an interval join"):
        joined.map(lambda r: r.value, metadata=True)


def test_the_example_pairs_orders_with_payments_within_ten_minutes(tmp_path: Path) -> None:
    pipeline = load_pipeline("pipelines/orders_paid.py:pipeline")
    broker = MemoryBroker()
    for topic in ("orders", "payments"):
        broker.create(topic, 1)
    minute = 60_000
    for i in range(6):
        row = {"id": i, "customer": "c1", "amount": 100, "ts_ms": BASE + i * minute}
        broker.append(("orders", 0), JSON.encode_one(row))
    for i, delay in [(1, 10 * minute), (3, 10 * minute + 1), (5, 0)]:  # 3: a ms too late
        pay = {"order_id": i, "amount": 100 + i, "ts_ms": BASE + i * minute + delay}
        broker.append(("payments", 0), JSON.encode_one(pay))
    sink = "orders-paid"

    run_in_process(
        pipeline,
        broker,
        in_process_config(tmp_path, 1),
        4,
        until=lambda: len(_read(broker, sink)) >= 2,
    )

    messages = _messages(broker, sink)
    got = {(r := JSON.decode_one(m.value()))["id"]: r["paid_amount"] for m in messages}
    assert len(messages) == 2
    assert got == {1: 101, 5: 105}
    # A pair is stamped with the later of its times: here the payment's.
    stamps = {JSON.decode_one(m.value())["id"]: m.timestamp()[1] - BASE for m in messages}
    assert stamps == {1: 11 * minute, 5: 5 * minute}
