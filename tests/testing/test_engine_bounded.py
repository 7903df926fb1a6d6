"""Bounded runs (`until="end"`) on the in-memory engine: to the ends at start, then exit.

Records written after the ends were fixed are neither processed nor skipped: a
later run reads them, and every record is in the output exactly once overall.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import Pipeline, faults
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.checkpoint.bounded_end import read_bounded_end
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.events import (
    BoundedFinished,
    BoundedProgress,
    BoundedStarted,
    CheckpointCommitted,
    Drained,
    RuntimeEvent,
)
from laminar_kafka.testing.engine import InProcessRun, in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.orders import order
from tests.testing.engine_orders import (
    JSON,
    PARTITIONS,
    SOURCE,
    product_totals,
    read_output,
    send_orders,
)

SINK = "orders-out"


def _copy(name: str = "copy", barriers: bool = True) -> Pipeline:
    pipeline = Pipeline(name)
    pipeline.source(SOURCE, value_format=JSON, barriers=barriers).sink(SINK, value_format=JSON)
    return pipeline


def _broker(ids: range) -> MemoryBroker:
    broker = MemoryBroker()
    broker.create(SOURCE, PARTITIONS)
    send_orders(broker, ids)
    return broker


def _bounded(tmp_path: Path, parallelism: int = 2) -> RuntimeConfig:
    return replace(in_process_config(tmp_path, parallelism), until="end")


def _later(broker: MemoryBroker, ids: range) -> Any:
    """A listener that writes `ids` once the bounded run fixed its ends."""

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, BoundedStarted) and not event.resumed:
            send_orders(broker, ids)

    return feed


def _names(run: InProcessRun) -> list[str]:
    return [e.name for e in run.events]


def test_a_bounded_run_reads_to_the_ends_at_start_and_exits(tmp_path: Path) -> None:
    broker = _broker(range(30))
    config = _bounded(tmp_path)

    run = run_in_process(_copy(), broker, config, listener=_later(broker, range(30, 45)))

    assert sorted(r["id"] for r in read_output(broker, SINK)) == list(range(30))
    names = _names(run)
    assert names[0] == "bounded_started" and names[-2:] == ["drained", "bounded_finished"]
    progress = [e for e in run.events if isinstance(e, BoundedProgress)]
    assert (progress[-1].left, progress[-1].partitions_done, progress[-1].partitions) == (0, 3, 3)
    drained = next(e for e in run.events if isinstance(e, Drained))
    assert next(e for e in run.events if isinstance(e, BoundedFinished)).checkpoint_id == (
        drained.checkpoint_id
    )
    assert read_bounded_end(CheckpointStore(config.checkpoint_dir, "copy")) is None

    # The next run, unbounded, reads what came after the ends: each record once overall.
    run_in_process(_copy(), broker, in_process_config(tmp_path, 2))
    assert sorted(r["id"] for r in read_output(broker, SINK)) == list(range(45))


def test_a_second_bounded_run_reads_what_came_since(tmp_path: Path) -> None:
    broker = _broker(range(12))
    run_in_process(_copy(), broker, _bounded(tmp_path), listener=_later(broker, range(12, 20)))
    run = run_in_process(_copy(), broker, _bounded(tmp_path))
    assert sorted(r["id"] for r in read_output(broker, SINK)) == list(range(20))
    assert "bounded_finished" in _names(run)


def test_a_two_stage_bounded_run_commits_every_stage_before_it_exits(tmp_path: Path) -> None:
    broker = _broker(range(40))
    config = _bounded(tmp_path)

    run_in_process(
        product_totals("totals", SINK), broker, config, listener=_later(broker, range(40, 60))
    )

    report = compare_product_totals(range(40), read_output(broker, SINK))
    assert report.exact, report
    run_in_process(product_totals("totals", SINK), broker, config)
    report = compare_product_totals(range(60), read_output(broker, SINK))
    assert report.exact, report


def test_a_source_without_barriers_finishes_too(tmp_path: Path) -> None:
    broker = _broker(range(20))
    run = run_in_process(_copy(barriers=False), broker, _bounded(tmp_path))
    assert sorted(r["id"] for r in read_output(broker, SINK)) == list(range(20))
    assert "bounded_finished" in _names(run)


def test_partitions_ending_in_markers_aborted_or_open_transactions_finish(
    tmp_path: Path,
) -> None:
    """The last offsets below an end may hold nothing a read_committed reader gets."""
    broker = MemoryBroker()
    broker.create(SOURCE, PARTITIONS)
    epoch = broker.init_producer("writer")
    txn = broker.begin("writer", epoch)
    for i in range(9):  # committed: each partition ends in a commit marker
        o = order(i)
        broker.append((SOURCE, i % PARTITIONS), JSON.encode_one(o), None, txn=txn)
    broker.commit(txn)
    aborted = broker.begin("writer", epoch)  # partition 0 then ends in an abort marker
    broker.append((SOURCE, 0), JSON.encode_one(order(100)), None, txn=aborted)
    broker.abort(aborted)
    open_txn = broker.begin("writer", epoch)  # and partition 1 in an open transaction
    broker.append((SOURCE, 1), JSON.encode_one(order(101)), None, txn=open_txn)

    run = run_in_process(_copy(), broker, _bounded(tmp_path), timeout_s=20)

    assert sorted(r["id"] for r in read_output(broker, SINK)) == list(range(9))
    assert "bounded_finished" in _names(run)
    broker.commit(open_txn)  # the open transaction commits later: a later run reads it
    run_in_process(_copy(), broker, in_process_config(tmp_path, 2))
    assert sorted(r["id"] for r in read_output(broker, SINK)) == [*range(9), 101]


@pytest.mark.parametrize(
    "point",
    [FaultPoint.MID_EPOCH, FaultPoint.AFTER_SNAPSHOT, FaultPoint.AFTER_ACKS_BEFORE_DECISION],
    ids=lambda p: p.value,
)
def test_a_bounded_run_killed_midway_resumes_to_the_ends_of_its_first_start(
    tmp_path: Path, point: FaultPoint
) -> None:
    """A killed driver's successor (as a supervisor starts it) finds the recorded ends;
    a killed task's generation restarts with them."""
    broker = _broker(range(300))
    config = replace(_bounded(tmp_path), batch_size=4)  # checkpoints before the end
    pipeline = product_totals("totals", SINK)

    with faults.kill_threads_at(point, min_checkpoint=1):
        run = run_in_process(pipeline, broker, config, listener=_later(broker, range(300, 320)))

    restarts = run.drivers - 1 if point.in_driver else run.stats.restarts
    assert restarts == 1, run.events
    starts = [e for e in run.events if isinstance(e, BoundedStarted)]
    assert [s.resumed for s in starts] == ([False, True] if point.in_driver else [False])
    report = compare_product_totals(range(300), read_output(broker, SINK))
    assert report.exact, report
    assert sum(isinstance(e, CheckpointCommitted) for e in run.events) >= 2
    run_in_process(pipeline, broker, in_process_config(tmp_path, 2))
    report = compare_product_totals(range(320), read_output(broker, SINK))
    assert report.exact, report


WINDOW_MS = 100


def _windowed() -> Pipeline:
    pipeline = Pipeline("windows")
    (
        pipeline.source(SOURCE, value_format=JSON, timestamp="ts_ms")
        .key_by("customer")
        .tumbling_window(WINDOW_MS / 1000)
        .aggregate(
            initial=lambda: 0,
            add=lambda total, o: total + o["amount"],
            emit=lambda c, w, total: {"customer": c, "end": w.end, "amount": total},
        )
        .sink(SINK, value_format=JSON, key="customer")
    )
    return pipeline


def _window_totals(ids: range, ends: set[int]) -> dict[tuple[str, int], int]:
    totals: dict[tuple[str, int], int] = {}
    for i in ids:
        o = order(i)
        end = o["ts_ms"] - o["ts_ms"] % WINDOW_MS + WINDOW_MS
        if end in ends:
            totals[(o["customer"], end)] = totals.get((o["customer"], end), 0) + o["amount"]
    return totals


def test_windows_open_at_the_end_stay_open_for_the_next_run(tmp_path: Path) -> None:
    """Order i is stamped T + i ms: the first run ends at 150, inside the window
    [100, 200), which it keeps open; the second run adds 150..399 to it and closes it."""
    t = order(0)["ts_ms"]
    broker = _broker(range(150))
    config = _bounded(tmp_path)

    run_in_process(_windowed(), broker, config, listener=_later(broker, range(150, 400)))
    first = {(r["customer"], r["end"]): r["amount"] for r in read_output(broker, SINK)}
    assert first == _window_totals(range(150), {t + 100})  # [100, 200) still open

    run_in_process(_windowed(), broker, config)
    output = read_output(broker, SINK)
    both = {(r["customer"], r["end"]): r["amount"] for r in output}
    assert len(output) == len(both)  # each window's result once over the two runs
    assert both == _window_totals(range(400), {t + 100, t + 200, t + 300})
