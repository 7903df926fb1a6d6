"""The real engine in one process: runner, coordinator and tasks on a `MemoryBroker`.

`run_in_process` runs a pipeline the way a deployment runs it (the same
`PipelineRunner`, `CheckpointCoordinator`, `WorkerTask`s and recovery) with its
records in memory and its tasks on threads, so a protocol test takes
milliseconds. A crash point armed with `faults.kill_threads_at` ends the thread
that reaches it; a killed driver is started again, as a supervisor would.

A drain is a checkpoint like the others: a task whose alignment timed out, or
whose partitions the barrier skipped, cuts where its reading stands, and the
records past the cut wait in the log for the next run. On a loaded machine a
drain often cuts so (a downstream stage opens when its upstream decided, before
the upstream's last epoch is committed, let alone read). So a run here, like an
operator's `laminar-kafka run` again, resumes until no input record lies past
the committed offsets (`unread_input`; nor a writer's Watermark record, which closes
windows downstream): its output is that of all its input. A
bounded run (`until="end"`) is not resumed: it ends only once its stages are done
(`runtime/driver/bounded.py`), and leaves what came after its ends for the next run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from laminar_kafka import faults, waits
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.control.codec import decode
from laminar_kafka.control.headers import is_control
from laminar_kafka.control.records import Watermark
from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.names import PartitionKey, consumer_group
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.config import RestartPolicy, RuntimeConfig
from laminar_kafka.runtime.driver.events import CheckpointCommitted, Listener, RuntimeEvent
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.runtime.driver.stats import RunStats
from laminar_kafka.runtime.driver.thread_executor import ThreadExecutor
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_driver import MemoryDriverPorts
from laminar_kafka.testing.memory_log import MemoryMessage
from laminar_kafka.testing.memory_ports import memory_ports


def in_process_config(checkpoint_dir: str | Path, parallelism: int = 1) -> RuntimeConfig:
    """Settings for a run in memory: checkpoints back to back, short timeouts, no backoff."""
    return RuntimeConfig(
        bootstrap="in-memory:0",
        checkpoint_dir=str(checkpoint_dir),
        parallelism=parallelism,
        checkpoint_interval_s=0.001,
        checkpoint_timeout_s=5.0,
        ready_timeout_s=10.0,
        heartbeat_interval_s=0.05,
        heartbeat_timeout_s=2.0,
        restart=RestartPolicy(initial_backoff_s=0.0),
    )


@dataclass(frozen=True)
class InProcessRun:
    """What a run in one process did."""

    stats: RunStats
    """The last driver's (a killed driver's do not survive it)."""
    events: tuple[RuntimeEvent, ...]
    drivers: int
    """How many drivers ran: one more for each driver killed at a crash point."""
    resumed: int = 0
    """How often a drained run was run again because its drain left input unread."""


def unread_input(
    pipeline: Pipeline, broker: MemoryBroker, *, control: bool = False
) -> list[PartitionKey]:
    """The partitions `pipeline` reads (sources, tables, internal topics) that hold a
    committed data record or Watermark record past its group's committed offset (a
    writer's watermark left past a drain's cut closes windows in the next run); any
    committed record with `control`, a barrier too."""
    group = consumer_group(pipeline.name)
    topics = dict.fromkeys(t for stage in plan_stages(pipeline).stages for t in stage.inputs)
    keys = [(t, p) for t in topics for p in range(broker.partitions(t))]
    unread = []
    for tp in broker.committed(group, keys):
        key, offset = (tp.topic, tp.partition), max(tp.offset, 0)
        while True:
            records, after = broker.read_committed(key, offset, 1000)
            if any(control or _input(m) for m in records):
                unread.append(key)
                break
            if after == offset:
                break  # the end, or an open transaction
            offset = after
    return unread


def _input(message: MemoryMessage) -> bool:
    """A data record, or a writer's Watermark record (what changes the output)."""
    return not is_control(message.headers()) or isinstance(decode(message.value()), Watermark)


def run_in_process(
    pipeline: Pipeline,
    broker: MemoryBroker,
    config: RuntimeConfig,
    checkpoints: int = 1,
    timeout_s: float = 30.0,
    listener: Listener | None = None,
    until: Callable[[], bool] | None = None,
) -> InProcessRun:
    """Run `pipeline` on `broker` until `checkpoints` checkpoints committed, the last one
    a drain; then every task has exited. The source topics must exist in `broker`.
    A bounded run (`config.until="end"`) ends by itself, after its final checkpoint.

    `listener` hears each event in the driver's thread as it happens: records it
    appends to a source land before the next checkpoint's barrier. With `until`, the
    drain waits, besides, for `until()` to hold (asked after each event).
    """
    executor = ThreadExecutor(lambda spec: memory_ports(spec, broker))
    events: list[RuntimeEvent] = []
    outcome: list[RunStats | BaseException] = []

    runners: list[PipelineRunner] = []  # the driver now, then any that replaced it
    resumed = 0

    def due() -> bool:
        if config.until is not None:
            return False  # a bounded run stops by itself at its ends
        committed = sum(isinstance(e, CheckpointCommitted) for e in events)
        return committed >= checkpoints - 1 and (until is None or until())

    def heard(event: RuntimeEvent) -> None:
        events.append(event)
        if listener is not None:
            listener(event)
        if due():
            runners[-1].stop()  # the next checkpoint drains

    def drive() -> None:
        nonlocal resumed
        while True:
            ports = MemoryDriverPorts(broker, config)
            runners.append(PipelineRunner(pipeline, config, None, heard, ports, executor))
            if due():
                runners[-1].stop()
            try:
                stats = runners[-1].run()
                while config.until is None and unread_input(pipeline, broker):
                    # The drain cut short of the end: the stopped runner runs again (its
                    # stats add up), resumes from that cut and drains at once.
                    resumed += 1
                    stats = runners[-1].run()
                outcome.append(stats)
                return
            except faults.Killed:
                continue  # the driver died at a crash point: a new one takes over
            except BaseException as exc:
                outcome.append(exc)
                return

    driver = waits.thread(drive, f"{pipeline.name}-driver")
    driver.start()
    driver.join(timeout_s)
    if not outcome:
        raise LaminarError(f"pipeline {pipeline.name!r} did not drain within {timeout_s:g}s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    left = executor.join_all(timeout_s=5.0)
    if left:
        raise LaminarError(f"tasks still running after the drain: {left}")
    return InProcessRun(outcome[0], tuple(events), len(runners), resumed)
