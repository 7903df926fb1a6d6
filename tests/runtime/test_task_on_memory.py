"""The real task loop on in-memory ports: recovery, one drained checkpoint, a stale start.

The coordinator's part is played by hand here (announcements on the control
log, a barrier in the source partition): what the in-process executor will do
with the real coordinator.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline, RuntimeConfig
from laminar_kafka.checkpoint.markers import OffsetMarker, parse_marker
from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, barrier_headers
from laminar_kafka.control.records import Ack, Announcement, Barrier, BarrierFlags, Phase
from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.names import transactional_id
from laminar_kafka.runtime.task.worker import WorkerTask
from laminar_kafka.runtime.task_spec import TaskSpec, TaskSummary
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryControl, MemoryReader, memory_ports
from laminar_kafka.testing.memory_transaction import MemoryTransaction

NAME = "mem"
SOURCE, SINK = "orders", "orders-out"


def _setup(tmp_path: Path, generation: int = 1) -> tuple[MemoryBroker, TaskSpec]:
    broker = MemoryBroker()
    cfg = RuntimeConfig(bootstrap="unused:9092", checkpoint_dir=str(tmp_path), parallelism=1)
    for topic in (SOURCE, SINK, cfg.control_topic(NAME), cfg.dead_letters_to(NAME)):
        broker.create(topic, 1)
    pipeline = Pipeline(NAME)
    json = JsonFormat()
    pipeline.source(SOURCE, value_format=json).map(lambda o: {"id": o["id"] * 10}).sink(
        SINK, value_format=json
    )
    spec = TaskSpec(pipeline, cfg, generation, 0, ((SOURCE, 0),), {SOURCE: 1}, 0)
    return broker, spec


def _acks(control: MemoryControl, checkpoint_id: int, timeout_s: float = 10.0) -> Ack:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for ack in control.receive(0.1):
            if ack.checkpoint_id == checkpoint_id:
                return ack  # type: ignore[no-any-return]
    raise AssertionError(f"no Ack of checkpoint {checkpoint_id} within {timeout_s}s")


def test_a_task_on_memory_ports_recovers_checkpoints_and_drains(tmp_path: Path) -> None:
    broker, spec = _setup(tmp_path)
    for i in range(3):
        broker.append((SOURCE, 0), JsonFormat().encode_one({"id": i}))
    task = WorkerTask(spec, memory_ports(spec, broker))
    done: list[TaskSummary] = []
    thread = threading.Thread(target=lambda: done.append(task.run()), daemon=True)
    thread.start()

    coordinator = MemoryControl(broker, spec.config.control_topic(NAME), NAME, 0, Ack)
    ready = _acks(coordinator, 0)
    assert ready.ok and dict(ready.positions) == {f"{SOURCE}:0": 0}
    drain = BarrierFlags.DRAIN
    coordinator.send(Announcement(NAME, 1, 1, Phase.PREPARE, flags=drain))
    barrier = Barrier(NAME, 1, 1, drain, int(time.time() * 1000))
    broker.append((SOURCE, 0), encode(barrier), CONTROL_KEY, barrier_headers(barrier))
    ack = _acks(coordinator, 1)
    assert ack.ok and dict(ack.positions) == {f"{SOURCE}:0": 4}  # past the barrier
    coordinator.send(Announcement(NAME, 1, 1, Phase.COMMIT, flags=drain))
    thread.join(10)

    assert [(s.records_in, s.records_out, s.checkpoints) for s in done] == [(3, 3, 1)]
    sink = MemoryReader(broker, "reader", 100)
    sink.assign({(SINK, 0): 0})
    assert [JsonFormat().decode_one(m.value()) for m in sink.poll(0)] == [
        {"id": 0},
        {"id": 10},
        {"id": 20},
    ]
    (committed,) = MemoryReader(broker, NAME, 100).committed([(SOURCE, 0)], 1)
    assert (committed.offset, parse_marker(committed.metadata)) == (4, OffsetMarker(1, 1))


def test_a_stale_task_starting_late_on_memory_ports_exits_without_fencing(
    tmp_path: Path,
) -> None:
    broker, spec = _setup(tmp_path, generation=1)
    control = MemoryControl(broker, spec.config.control_topic(NAME), NAME, 0, Announcement)
    control.send(Announcement(NAME, 0, 2, Phase.ABORT, reason="generation 2 starts"))
    current = MemoryTransaction(broker, transactional_id(NAME, 0))
    current.init()
    current.begin()
    current.produce(SINK, b"from generation 2")

    zombie = WorkerTask(spec, memory_ports(spec, broker))
    with pytest.raises(FencedError, match="generation 2 started"):
        zombie.run()

    current.prepare([], None, timeout_s=1)
    current.commit(timeout_s=1)  # had the zombie fenced it, this would raise
    reader = MemoryReader(broker, "reader", 100)
    reader.assign({(SINK, 0): 0})
    values: list[Any] = [m.value() for m in reader.poll(0)]
    assert values == [b"from generation 2"]
