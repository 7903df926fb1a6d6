"""The collector's threshold while tasks run, and the one from before after they end."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from laminar_kafka import JsonFormat, Pipeline, RuntimeConfig
from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, barrier_headers
from laminar_kafka.control.records import Ack, Announcement, Barrier, BarrierFlags, Phase
from laminar_kafka.errors import FencedError
from laminar_kafka.runtime.task.gc_policy import GEN0_THRESHOLD, task_collector
from laminar_kafka.runtime.task.worker import WorkerTask
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryControl, memory_ports

NAME, SOURCE, SINK = "gc", "in", "out"


@pytest.fixture(autouse=True)
def _own_threshold() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(640, 9, 8)  # not the default: the one from before must come back
    yield
    gc.set_threshold(*before)


def test_the_threshold_is_raised_inside_and_restored_after() -> None:
    with task_collector():
        assert gc.get_threshold() == (GEN0_THRESHOLD, 9, 8)
    assert gc.get_threshold() == (640, 9, 8)


def test_the_threshold_is_restored_when_the_task_raises() -> None:
    with pytest.raises(RuntimeError, match="boom"), task_collector():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (640, 9, 8)


def test_overlapping_tasks_restore_it_when_the_last_ends() -> None:
    first, second = task_collector(), task_collector()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == GEN0_THRESHOLD  # the second still runs
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (640, 9, 8)


def _spec(tmp_path: Path, broker: MemoryBroker, seen: list[int]) -> TaskSpec:
    cfg = RuntimeConfig(bootstrap="unused:9092", checkpoint_dir=str(tmp_path), parallelism=1)
    for topic in (SOURCE, SINK, cfg.control_topic(NAME), cfg.dead_letters_to(NAME)):
        broker.create(topic, 1)

    def observe(record: dict[str, int]) -> dict[str, int]:
        seen.append(gc.get_threshold()[0])
        return record

    pipeline = Pipeline(NAME)
    pipeline.source(SOURCE, value_format=JsonFormat()).map(observe).sink(
        SINK, value_format=JsonFormat()
    )
    return TaskSpec(pipeline, cfg, 1, 0, ((SOURCE, 0),), {SOURCE: 1}, 0)


def _ack(control: MemoryControl, checkpoint_id: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(ack.checkpoint_id == checkpoint_id for ack in control.receive(0.1)):
            return
    raise AssertionError(f"no Ack of checkpoint {checkpoint_id}")


def test_a_task_runs_its_records_with_the_raised_threshold(tmp_path: Path) -> None:
    broker, seen = MemoryBroker(), []
    spec = _spec(tmp_path, broker, seen)
    broker.append((SOURCE, 0), JsonFormat().encode_one({"id": 1}))
    task = WorkerTask(spec, memory_ports(spec, broker))
    thread = threading.Thread(target=task.run, daemon=True)
    thread.start()
    coordinator = MemoryControl(broker, spec.config.control_topic(NAME), NAME, 0, Ack)
    _ack(coordinator, 0)
    drain = BarrierFlags.DRAIN
    coordinator.send(Announcement(NAME, 1, 1, Phase.PREPARE, flags=drain))
    barrier = Barrier(NAME, 1, 1, drain, int(time.time() * 1000))
    broker.append((SOURCE, 0), encode(barrier), CONTROL_KEY, barrier_headers(barrier))
    _ack(coordinator, 1)
    coordinator.send(Announcement(NAME, 1, 1, Phase.COMMIT, flags=drain))
    thread.join(10)

    assert not thread.is_alive()
    assert seen == [GEN0_THRESHOLD]
    assert gc.get_threshold() == (640, 9, 8)


def test_a_task_that_raises_restores_the_threshold(tmp_path: Path) -> None:
    broker = MemoryBroker()
    spec = _spec(tmp_path, broker, [])
    control = MemoryControl(broker, spec.config.control_topic(NAME), NAME, 0, Announcement)
    control.send(Announcement(NAME, 0, 2, Phase.ABORT, reason="generation 2 starts"))
    with pytest.raises(FencedError):  # stale: a newer generation started
        WorkerTask(spec, memory_ports(spec, broker)).run()
    assert gc.get_threshold() == (640, 9, 8)
