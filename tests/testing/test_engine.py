"""The real runner, coordinator and tasks in one process on the in-memory transport.

Each run goes through the same code as a run on Spark and Kafka (ports aside):
checkpoints driven by the coordinator, recovery at each generation's start,
and a task killed at one of the runtime's own crash points.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from laminar_kafka import JsonFormat, Pipeline, faults
from laminar_kafka.checkpoint.markers import parse_marker
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    RuntimeEvent,
    WorkerLost,
)
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader

SOURCE, SINK = "orders", "orders-out"
JSON = JsonFormat()


def _pipeline(name: str) -> Pipeline:
    pipeline = Pipeline(name)
    pipeline.source(SOURCE, value_format=JSON).map(lambda o: {"id": o["id"] * 10}).sink(
        SINK, value_format=JSON
    )
    return pipeline


def _broker(records: int, partitions: int = 2) -> MemoryBroker:
    broker = MemoryBroker()
    broker.create(SOURCE, partitions)
    for i in range(records):
        broker.append((SOURCE, i % partitions), JSON.encode_one({"id": i}))
    return broker


def _committed_output(broker: MemoryBroker) -> list[Any]:
    reader = MemoryReader(broker, "reader", 10_000)
    reader.assign({(SINK, p): 0 for p in range(broker.partitions(SINK))})
    return sorted(JSON.decode_one(m.value())["id"] for m in reader.poll(0))


def test_a_run_in_one_process_drains_with_its_output_committed(tmp_path: Path) -> None:
    broker = _broker(20)
    config = in_process_config(tmp_path, parallelism=2)

    run = run_in_process(_pipeline("engine"), broker, config, checkpoints=1)

    assert _committed_output(broker) == [i * 10 for i in range(20)]
    assert (run.stats.generations, run.stats.restarts, run.drivers) == (1, 0, 1)
    committed = MemoryReader(broker, "engine", 1).committed([(SOURCE, 0), (SOURCE, 1)], 1)
    # Each partition: 10 records, all there before the run: the drain's barrier skips them.
    assert [(tp.offset, parse_marker(tp.metadata).checkpoint_id) for tp in committed] == [
        (10, 1),
        (10, 1),
    ]


def test_a_task_killed_after_its_snapshot_recovers_to_exactly_once_output(
    tmp_path: Path,
) -> None:
    broker = _broker(20)
    config = in_process_config(tmp_path, parallelism=2)
    fed = iter(range(20, 60))

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            for _ in range(10):  # before the next barrier: checkpoint 2 holds records
                i = next(fed, None)
                if i is not None:
                    broker.append((SOURCE, i % 2), JSON.encode_one({"id": i}))

    began = time.monotonic()
    with faults.kill_threads_at(FaultPoint.AFTER_SNAPSHOT, min_checkpoint=2, task=1):
        run = run_in_process(_pipeline("killed"), broker, config, checkpoints=4, listener=feed)
    took = time.monotonic() - began

    lost = [e for e in run.events if isinstance(e, WorkerLost)]
    assert len(lost) == 1 and "task 1 died: killed at after_snapshot" in lost[0].reason
    aborted = [e.checkpoint_id for e in run.events if isinstance(e, CheckpointAborted)]
    assert aborted == [2] and run.stats.generations == 2
    assert next(fed, None) is None  # every record was fed, the last after recovery
    assert _committed_output(broker) == [i * 10 for i in range(60)]
    assert took < 10.0, f"took {took:.2f}s"  # about 0.3 s on a quiet machine
