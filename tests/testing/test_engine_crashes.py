"""Crash points against a two-stage pipeline run in one process: exactly-once totals.

The pipeline is `pipelines/product_totals.py` with JSON input: orders keyed by
customer, repartitioned by product through an internal topic, running totals
in the second stage. A task or the driver is killed at one of the runtime's own
crash points; the run recovers, drains, and its committed output is checked with
the same oracle as the chaos rounds on Spark.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka import faults
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.events import CheckpointAborted, CheckpointCommitted, RuntimeEvent
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from tests.testing.engine_orders import (
    PARTITIONS,
    SOURCE,
    product_totals,
    read_output,
    send_orders,
)

SINK = "product-totals"
ORDERS = 60


@pytest.mark.parametrize(
    "point",
    [
        FaultPoint.MID_EPOCH,
        FaultPoint.DURING_ALIGNMENT,
        FaultPoint.AFTER_SNAPSHOT,
        FaultPoint.AFTER_DECISION_BEFORE_COMMIT,
        FaultPoint.DURING_COMMIT,
        FaultPoint.DOWNSTREAM_ACKED,
        FaultPoint.AFTER_ACKS_BEFORE_DECISION,
        FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE,
        FaultPoint.UPSTREAM_COMMITTED,
    ],
    ids=lambda p: p.value,
)
def test_a_crash_in_one_process_recovers_to_exact_totals(tmp_path: Path, point: FaultPoint) -> None:
    broker = MemoryBroker()
    broker.create(SOURCE, PARTITIONS)
    send_orders(broker, range(20))
    batches = iter([range(20, 40), range(40, ORDERS)])

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            send_orders(broker, next(batches, range(0)))  # before the next checkpoint's barriers

    with faults.kill_threads_at(point, min_checkpoint=2):
        run = run_in_process(
            product_totals("totals", SINK), broker, in_process_config(tmp_path, 2), 5, listener=feed
        )

    report = compare_product_totals(range(ORDERS), read_output(broker, SINK))
    assert report.exact, report
    restarts = run.drivers - 1 if point.in_driver else run.stats.restarts
    assert restarts == 1, run.events
