"""Incremental checkpoints in the real engine: crashes recover from a base plus deltas.

The two-stage pipeline of `test_engine_crashes.py` (running totals per product in
its second stage), its state in memory or on disk (LMDB), with a new base every
third checkpoint and deltas in between;
a task or the driver is killed at checkpoint 6, when the last committed
checkpoint (5) is a delta on the base of 4; the run recovers from what the
store holds (retention keeping every base a kept delta needs), and its
committed output is exact.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from laminar_kafka import faults
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.events import CheckpointAborted, CheckpointCommitted, RuntimeEvent
from laminar_kafka.testing.engine import InProcessRun, in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from tests.testing.engine_orders import (
    PARTITIONS,
    SOURCE,
    product_totals,
    read_output,
    send_orders,
)

SINK = "product-totals"
ORDERS = 90


def _crash_run(
    tmp_path: Path, state_store: str, point: FaultPoint, min_checkpoint: int
) -> tuple[InProcessRun, MemoryBroker, int, set[str]]:
    """The pipeline fed ten orders a checkpoint, a base every third, a task or the driver
    killed at `point` from `min_checkpoint` on: the run, its broker, how many kills fired,
    and the disk stores seen meanwhile (under `tmp_path/local`, `$SPARK_LOCAL_DIRS`)."""
    local = tmp_path / "local"
    stores_seen: set[str] = set()
    broker = MemoryBroker()
    broker.create(SOURCE, PARTITIONS)
    send_orders(broker, range(10))
    batches = iter([range(a, a + 10) for a in range(10, ORDERS, 10)])

    def feed(event: RuntimeEvent) -> None:
        stores_seen.update(os.listdir(local))
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            send_orders(broker, next(batches, range(0)))  # before the next checkpoint's barriers

    config = dataclasses.replace(
        in_process_config(tmp_path / "checkpoints", 2),
        full_snapshot_every=3,
        state_store=state_store,
    )
    with faults.kill_threads_at(point, min_checkpoint=min_checkpoint) as fired:
        run = run_in_process(product_totals("totals", SINK), broker, config, 12, listener=feed)
        return run, broker, fired(), stores_seen


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where tasks keep a disk store."""
    (tmp_path / "local").mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(tmp_path / "local"))
    return tmp_path / "local"


@pytest.mark.parametrize("state_store", ["memory", "disk"])
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
def test_a_crash_with_deltas_recovers_to_exact_totals(
    tmp_path: Path, local: Path, point: FaultPoint, state_store: str
) -> None:
    run, broker, _, stores_seen = _crash_run(tmp_path, state_store, point, 6)

    report = compare_product_totals(range(ORDERS), read_output(broker, SINK))
    assert report.exact, report
    restarts = run.drivers - 1 if point.in_driver else run.stats.restarts
    assert restarts == 1, run.events
    assert list(tmp_path.rglob("*.delta")), "no checkpoint wrote a delta"
    # The stateful stage's two tasks kept a store each, in each generation; all removed.
    assert len(stores_seen) >= (4 if state_store == "disk" else 0)
    assert not os.listdir(local)


@pytest.mark.parametrize("state_store", ["memory", "disk"])
def test_a_kill_while_a_new_base_is_written_restores_the_chain_before_it(
    tmp_path: Path, local: Path, state_store: str
) -> None:
    """Checkpoint 7 writes a new base (1 and 4 were bases, every third): a task dies with
    that file half written; the run restores 6 (the base of 4 plus the deltas 5 and 6)."""
    run, broker, fired, _ = _crash_run(tmp_path, state_store, FaultPoint.DURING_SNAPSHOT, 7)
    assert fired == 1
    report = compare_product_totals(range(ORDERS), read_output(broker, SINK))
    assert report.exact, report
    assert run.stats.restarts == 1, run.events
    bases = {
        e.checkpoint_id: e.delta_bases for e in run.events if isinstance(e, CheckpointCommitted)
    }
    assert bases[5] == bases[6] == (4,) and 7 not in bases, bases
