"""Incremental checkpoints in the real engine: crashes recover from a base plus deltas.

The two-stage pipeline of `test_engine_crashes.py` (running totals per product in
its second stage) with a new base every third checkpoint and deltas in between;
a task or the driver is killed at checkpoint 6, when the last committed
checkpoint (5) is a delta on the base of 4; the run recovers from what the
store holds (retention keeping every base a kept delta needs), and its
committed output is exact.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from laminar_kafka import faults
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.events import CheckpointAborted, CheckpointCommitted, RuntimeEvent
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.product_checks import compare_product_totals
from tests.testing.engine_orders import (
    PARTITIONS,
    SOURCE,
    product_totals,
    read_output,
    send_orders,
)

SINK = "product-totals"
ORDERS = 90


@pytest.mark.parametrize(
    "point",
    [
        FaultPoint.MID_EPOCH,
        FaultPoint.AFTER_SNAPSHOT,
        FaultPoint.AFTER_DECISION_BEFORE_COMMIT,
        FaultPoint.AFTER_ACKS_BEFORE_DECISION,
    ],
    ids=lambda p: p.value,
)
def test_a_crash_with_deltas_recovers_to_exact_totals(tmp_path: Path, point: FaultPoint) -> None:
    broker = MemoryBroker()
    broker.create(SOURCE, PARTITIONS)
    send_orders(broker, range(10))
    batches = iter([range(a, a + 10) for a in range(10, ORDERS, 10)])

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            send_orders(broker, next(batches, range(0)))  # before the next checkpoint's barriers

    config = dataclasses.replace(in_process_config(tmp_path, 2), full_snapshot_every=3)
    with faults.kill_threads_at(point, min_checkpoint=6):
        run = run_in_process(product_totals("totals", SINK), broker, config, 12, listener=feed)

    report = compare_product_totals(range(ORDERS), read_output(broker, SINK))
    assert report.exact, report
    restarts = run.drivers - 1 if point.in_driver else run.stats.restarts
    assert restarts == 1, run.events
    assert list(tmp_path.rglob("*.delta")), "no checkpoint wrote a delta"
