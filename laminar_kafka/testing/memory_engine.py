"""The engine behind the test kit: a long-lived run of the real runtime, stepped on demand.

One `PipelineRunner` with its `CheckpointCoordinator` runs on a driver thread,
its `WorkerTask`s on threads, over a `TracedBroker` (testing/engine.py runs
whole runs so; here the run lasts as long as the tester). It checkpoints only
when asked (`settle`), and its tasks see a wall clock that moves only when told
(`VirtualClock`), so processing time, state TTL and idleness are the test's.

`stop` kills the run as a crash does: the driver thread and then every task
die at their next look at the control log or their input (`faults.Killed`),
without committing anything; `start` runs a driver again, whose new generation
recovers from the last committed checkpoint. A driver killed at an armed crash
point is started again at once, as a supervisor would.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from laminar_kafka import faults
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.checkpoint.markers import parse_marker
from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.names import PartitionKey, consumer_group, transactional_id
from laminar_kafka.runtime.config import RestartPolicy, RuntimeConfig
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    GenerationStarted,
    RuntimeEvent,
)
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.runtime.task.ports import TaskPorts
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.testing.engine import unread_input
from laminar_kafka.testing.memory_committed import TracedBroker
from laminar_kafka.testing.memory_ports import memory_ports
from laminar_kafka.testing.memory_threads import (
    Driver,
    DriverPorts,
    TaskReader,
    VirtualClock,
    WakingExecutor,
)


def scratch() -> str | None:
    """Where a tester keeps its checkpoints and files: in memory where the machine has a
    tmpfs (its fsyncs cost nothing), else the temporary directory."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def kit_config(
    home: Path, batch_size: int, dead_letter_topic: str | None, **state: Any
) -> RuntimeConfig:
    """The settings of a tester's runs (each start sets its parallelism); `state`: its
    `state_store` and `full_snapshot_every`."""
    return RuntimeConfig(
        bootstrap="in-memory:0",
        checkpoint_dir=str(home / "checkpoints"),
        checkpoint_interval_s=3600.0,  # a checkpoint when asked (`settle`)
        checkpoint_timeout_s=10.0,  # a stalled checkpoint (a task killed mid-way) is retried soon
        alignment_timeout_s=1.0,
        ready_timeout_s=10.0,
        heartbeat_interval_s=1.0,
        heartbeat_timeout_s=60.0,  # tasks die by the test's will, never by a slow machine
        restart=RestartPolicy(initial_backoff_s=0.0),
        batch_size=batch_size,
        dead_letter_topic=dead_letter_topic,
        **state,
    )


class EngineSession:
    """A pipeline's run on `broker`, its checkpoints taken when `settle` asks."""

    def __init__(self, broker: TracedBroker, clock: VirtualClock, timeout_s: float) -> None:
        self.broker, self.clock, self.timeout_s = broker, clock, timeout_s
        self.changed = threading.Condition()
        """Notified at every event and every poll: whatever a step waits for."""
        self.doomed_generation = 0
        """Tasks of this generation and older die at their next poll."""
        self.hurry = False
        """Polls return at once (while a step waits for every task to go round)."""
        self.pokes = 0
        """Counts the wake-ups of the driver and the tasks (`memory_threads`)."""
        self.committed: list[int] = []
        self.events: list[RuntimeEvent] = []
        self.generation = 0
        self._readers: dict[PartitionKey, TaskReader] = {}
        self._wanted = False
        self._driver: Driver | None = None
        self._executor = WakingExecutor(self._ports, self._wake_reads)

    # -- running and killing ----------------------------------------------
    def start(self, pipeline: Pipeline, config: RuntimeConfig) -> None:
        """Run `pipeline` until `stop`; returns once its first generation reads (or raises
        what refused the start: a pipeline its checkpoint's state cannot follow)."""
        before = self.generation
        driver = self._driver = Driver(pipeline, config)
        driver.thread = threading.Thread(
            target=self._drive, args=(driver,), name=f"{pipeline.name}-driver", daemon=True
        )
        driver.thread.start()
        self.wait(lambda: self.generation > before or driver.error is not None, "to start")
        if driver.error is not None:
            self._driver = None
            raise driver.error

    def stop(self) -> None:
        """Kill the driver, then every task (nothing more is committed)."""
        driver, self._driver = self._driver, None
        if driver is None:
            return
        driver.doomed = True
        self._wake_reads()
        if driver.thread is not None:
            driver.thread.join(self.timeout_s)
        self.doomed_generation = self.generation
        self._wake_reads()

    def close(self) -> None:
        """Stop, and wait for every task thread to end."""
        self.stop()
        self.doomed_generation = 1 << 62  # every generation, a starting one too
        self._wake_reads()
        self._executor.join_all(timeout_s=self.timeout_s)

    def _drive(self, driver: Driver) -> None:
        while True:
            ports = DriverPorts(self, driver)
            runner = PipelineRunner(
                driver.pipeline, driver.config, None, self._heard, ports, self._executor
            )
            driver.runner = runner
            if self._wanted:
                runner.checkpoint_soon()
            try:
                runner.run()
                return
            except faults.Killed:
                if driver.doomed:
                    return
            except BaseException as exc:
                driver.error = exc
                return
            finally:
                with self.changed:
                    self.changed.notify_all()

    def _heard(self, event: RuntimeEvent) -> None:
        with self.changed:
            self.events.append(event)
            if isinstance(event, CheckpointCommitted):
                self.committed.append(event.checkpoint_id)
            if isinstance(event, GenerationStarted):
                self.generation = event.generation
            retry = isinstance(event, GenerationStarted | CheckpointAborted)
            if retry and self._wanted and self._driver is not None and self._driver.runner:
                self._driver.runner.checkpoint_soon()
            self.changed.notify_all()

    def _ports(self, spec: TaskSpec) -> TaskPorts:
        ports = memory_ports(spec, self.broker)
        reader = TaskReader(self, spec)
        self.broker.sources[transactional_id(spec.pipeline.name, spec.task)] = spec.partitions[0]
        with self.changed:
            for key in spec.partitions:
                known = self._readers.get(key)
                if known is None or known.generation <= spec.generation:
                    self._readers[key] = reader
        return replace(ports, reader=reader, wall_clock=self.clock, idle_check_s=0.0)

    def _wake_reads(self) -> None:
        with self.broker.changed:
            self.pokes += 1
            self.broker.changed.notify_all()

    # -- steps ------------------------------------------------------------
    def wait(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        with self.changed:
            while not done():
                driver = self._driver
                if driver is not None and driver.error is not None:
                    raise driver.error
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LaminarError(f"the engine did not get {what} in {self.timeout_s:g}s")
                self.changed.wait(min(left, 0.05))

    def read_to(self, ends: Mapping[PartitionKey, int]) -> None:
        """Wait until the tasks have read each partition up to its end in `ends`."""

        def read() -> bool:
            for key, end in ends.items():
                reader = self._readers.get(key)
                if reader is None or (reader.position(key) or 0) < end:
                    return False
            return True

        self.wait(read, "through the records sent")

    def go_round(self) -> None:
        """Wait until every task began a step after now and finished it (a step looks for
        idle partitions on the wall clock)."""
        with self.changed:
            readers = {r.task: r for r in self._readers.values() if r.generation == self.generation}
        start = {task: reader.polls for task, reader in readers.items()}

        def went(task: int, reader: TaskReader) -> bool:
            # A task killed meanwhile (an armed crash point) goes round no more: its
            # generation is replaced.
            return reader.polls >= start[task] + 2 or reader.generation < self.generation

        self.hurry = True
        try:
            self._wake_reads()
            self.wait(lambda: all(went(t, r) for t, r in readers.items()), "round")
        finally:
            self.hurry = False

    def settle(self, pipeline: Pipeline) -> int:
        """Checkpoint until a committed checkpoint holds everything written so far, every
        stage's included; its id."""
        while True:
            n = self._checkpoint(pipeline)
            if n is not None and not self._unread(pipeline):
                return n

    def _checkpoint(self, pipeline: Pipeline) -> int | None:
        """Ask for a checkpoint (again after an abort or a restart); its id once every task
        committed it (None: a new generation recovered meanwhile)."""
        seen = len(self.committed)
        with self.changed:
            self._wanted = True
            if self._driver is not None and self._driver.runner is not None:
                self._driver.runner.checkpoint_soon()
        self._wake_reads()
        try:
            self.wait(lambda: len(self.committed) > seen, "a checkpoint committed")
        finally:
            self._wanted = False
        n, generation = self.committed[-1], self.generation

        def marked() -> bool:  # or a crash: a task that did not commit N recovers before it
            return self.generation > generation or self._all_marked(pipeline, n)

        self.wait(marked, f"checkpoint {n} committed by every task")
        return n if self.generation == generation else None

    def _all_marked(self, pipeline: Pipeline, n: int) -> bool:
        keys = [k for k, r in self._readers.items() if r.generation == self.generation]
        found = self.broker.committed(consumer_group(pipeline.name), keys)
        markers = [parse_marker(tp.metadata) for tp in found if tp.offset >= 0]
        return len(markers) == len(keys) and all(m and m.checkpoint_id >= n for m in markers)

    def _unread(self, pipeline: Pipeline) -> bool:
        """Whether a partition the pipeline reads has a committed record (data or a
        Watermark) past the offset its group committed."""
        return bool(unread_input(pipeline, self.broker, control=True))
