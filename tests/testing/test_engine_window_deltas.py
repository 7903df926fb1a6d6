"""Windows with incremental checkpoints in the real engine: crashes recover from a base
plus deltas, and every window closes once.

`pipelines/revenue_per_minute.py` (stage 1 keeps one-minute windows per product), its
state in memory or on disk (LMDB), a new base every third checkpoint: one minute of
orders arrives per checkpoint, so windows open, change and close across deltas. A
task dies at checkpoint 6, when the last committed checkpoint (5) is a delta; the new
generation restores the base of 4 plus that delta, and the output holds each window the
final watermark closed, once, with every order of it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from laminar_kafka import JsonFormat, faults
from laminar_kafka.chaos.engine_rounds import committed_values
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.events import CheckpointAborted, CheckpointCommitted, RuntimeEvent
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from tests.chaos.engine_examples import example
from tests.testing.test_engine_restored_watermarks import (
    OUT_OF_ORDER_MS,
    PARTITIONS,
    _closed,
    _orders,
)

MINUTES = 10


@pytest.mark.parametrize("state_store", ["memory", "disk"])
@pytest.mark.parametrize(
    "point", [FaultPoint.MID_EPOCH, FaultPoint.AFTER_SNAPSHOT], ids=lambda p: p.value
)
def test_a_crash_with_window_deltas_closes_every_window_once(
    tmp_path: Path, point: FaultPoint, state_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "local"  # where tasks keep a disk store
    local.mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(local))
    pipeline = example("revenue_per_minute")
    fmt = pipeline.flows[0].source.value_format
    minutes = [_orders(range(m, m + 1), 1000 * m) for m in range(MINUTES)]
    broker = MemoryBroker()
    broker.create("orders", PARTITIONS)

    def send(orders: list[tuple[int, dict]]) -> None:  # type: ignore[type-arg]
        for p, o in orders:
            broker.append(("orders", p), fmt.encode_one(o), o["customer"].encode())

    later = iter(minutes[1:])

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            send(next(later, []))  # before the next checkpoint's barriers

    send(minutes[0])
    config = dataclasses.replace(
        in_process_config(tmp_path / "checkpoints", 3),
        full_snapshot_every=3,
        state_store=state_store,
    )
    with faults.kill_threads_at(point, min_checkpoint=6) as fired:
        run = run_in_process(pipeline, broker, config, MINUTES + 4, listener=feed)
        assert fired() == 1
    assert run.stats.restarts == 1, run.events
    orders = [o for chunk in minutes for _, o in chunk]
    watermark = max(o["ts_ms"] for o in orders) - OUT_OF_ORDER_MS
    expected = _closed(orders, watermark)
    assert len({end for _, end, _, _ in expected}) == MINUTES - 2  # the last two stay open
    output = committed_values(broker, "revenue-per-minute", JsonFormat().decode_one)
    got = sorted((r["product"], r["minute_end"], r["orders"], r["revenue"]) for r in output)
    assert got == expected
    assert list(tmp_path.rglob("*.delta")), "no checkpoint wrote a delta"
    assert not os.listdir(local)
