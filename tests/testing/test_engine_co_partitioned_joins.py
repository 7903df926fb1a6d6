"""Co-partitioned interval joins run by the real engine in one process (memory transport):
one stage, no internal topic, side b's partitions read by the tasks holding side a's;
exactly once through a crash, equal to the batch interval join record by record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, faults
from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.operators.interval_join import IntervalHow
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    GenerationStarted,
    RuntimeEvent,
)
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.interval_workload import (
    ORDERS,
    PAID,
    PAYMENTS,
    WITHIN_S,
    batch_interval_join,
    interval_pipeline,
    order,
    payment,
    ticks,
)
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader

JSON = JsonFormat()
PARTITIONS = 3


def _append(broker: MemoryBroker, topic: str, record: dict[str, Any]) -> None:
    """Where a producer keyed by customer (murmur2) puts it."""
    partition = murmur2_partition(record["customer"].encode(), PARTITIONS)
    broker.append((topic, partition), JSON.encode_one(record))


def _batches(broker: MemoryBroker, sizes: list[int]) -> Iterator[None]:
    """Send `sizes` orders (and their payments) one batch per call, then the ticks."""
    start = 0
    for size in sizes:
        for i in range(start, start + size):
            _append(broker, ORDERS, order(i))
            if (p := payment(i)) is not None:
                _append(broker, PAYMENTS, p)
        start += size
        yield
    for _, record in ticks(PARTITIONS, start):
        _append(broker, ORDERS, record)
        _append(broker, PAYMENTS, record)
    yield


def _read(broker: MemoryBroker, topic: str) -> list[Any]:
    reader = MemoryReader(broker, "reader", 100_000)
    reader.assign({(topic, p): 0 for p in range(broker.partitions(topic))})
    return [JSON.decode_one(m.value()) for m in reader.poll(0)]


def _key(r: dict[str, Any]) -> tuple[int, int]:
    return r["id"], -1 if r["pay"] is None else r["pay"]


@pytest.mark.parametrize("how", ["inner", "left"])
def test_a_crash_after_the_snapshot_recovers_to_the_batch_interval_join(
    tmp_path: Path, how: IntervalHow
) -> None:
    broker = MemoryBroker()
    broker.create(ORDERS, PARTITIONS)
    broker.create(PAYMENTS, PARTITIONS)
    broker.create(PAID, 2)
    feeding = _batches(broker, [20, 20, 20])
    next(feeding)
    n = 60
    orders = [order(i) for i in range(n)]
    payments = [p for i in range(n) if (p := payment(i)) is not None]
    expected = batch_interval_join(orders, payments, 0, WITHIN_S * 1000, how == "left")
    pipeline = interval_pipeline(how, co_partitioned=True)

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            next(feeding, None)

    with faults.kill_threads_at(FaultPoint.AFTER_SNAPSHOT, min_checkpoint=2):
        run = run_in_process(
            pipeline,
            broker,
            in_process_config(tmp_path, 2),
            6,
            timeout_s=60,
            listener=feed,
            until=lambda: len(_read(broker, PAID)) >= len(expected),
        )

    assert sorted(_read(broker, PAID), key=_key) == sorted(expected, key=_key)
    assert run.stats.restarts == 1
    # One stage of two tasks, each reading partition p of both topics; no internal topic.
    committed = [e for e in run.events if isinstance(e, CheckpointCommitted)]
    assert committed and all(len(e.stages) == 1 for e in committed)
    assert {e.tasks for e in run.events if isinstance(e, GenerationStarted)} == {2}
    assert broker.partitions("intervals.paid.repartition") == 0


def test_sides_with_unequal_partition_counts_are_refused_at_start(tmp_path: Path) -> None:
    broker = MemoryBroker()
    broker.create(ORDERS, 3)
    broker.create(PAYMENTS, 2)
    with pytest.raises(ConfigError, match=r"'orders' \(3 partitions\) and 'payments' \(2"):
        run_in_process(
            interval_pipeline(co_partitioned=True), broker, in_process_config(tmp_path, 2)
        )
