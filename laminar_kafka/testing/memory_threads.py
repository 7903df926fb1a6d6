"""The test kit's hold on the engine's threads: a wall clock it moves, and ports that die.

A driver dies in its next read of the control log once `Driver.doomed`; a task in
its next poll once its generation is at or below the session's
`doomed_generation` (`faults.Killed`: a thread's SIGKILL). Both return from a wait
at any append, so that a request for a checkpoint, or a kill, is seen at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from laminar_kafka import faults
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.control.records import Ack, Heartbeat
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.runtime.driver.thread_executor import PortsFactory, ThreadExecutor, ThreadJob
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.testing.memory_committed import TracedBroker
from laminar_kafka.testing.memory_driver import MemoryDriverPorts
from laminar_kafka.testing.memory_log import MemoryMessage
from laminar_kafka.testing.memory_ports import MemoryControl, MemoryReader


class Steered(Protocol):
    """What a task's reader looks at: the session running it."""

    broker: TracedBroker
    changed: threading.Condition
    doomed_generation: int
    hurry: bool
    pokes: int
    """Counts the session's wake-ups (a checkpoint asked for, a kill, a job's end)."""


class VirtualClock:
    """Wall-clock milliseconds that move only when `ms` is set."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


@dataclass(eq=False)
class Driver:
    """One driver thread and what became of it."""

    pipeline: Pipeline
    config: RuntimeConfig
    doomed: bool = False
    runner: PipelineRunner | None = None
    error: BaseException | None = None
    thread: threading.Thread | None = None

    def check(self) -> None:
        if self.doomed:
            raise faults.Killed("the test kit stopped the run")


class DriverControl(MemoryControl):
    """The driver's control log; it dies in a read once its driver is doomed."""

    def __init__(self, driver: Driver, session: Steered, pipeline: str, start: int) -> None:
        topic = driver.config.control_topic(pipeline)
        super().__init__(session.broker, topic, pipeline, start, Ack, Heartbeat)
        self._driver, self._session = driver, session

    def catch_up(self, timeout_s: float = 30.0) -> list[Any]:
        self._driver.check()
        return super().catch_up(timeout_s)

    def receive(self, timeout_s: float) -> list[Any]:
        """As `MemoryControl.receive`, but back at the session's wake-up too: the driver's
        wait between checkpoints then sees a request for one at once."""
        deadline, pokes = time.monotonic() + timeout_s, self._session.pokes
        changed = self._session.broker.changed
        with changed:
            while True:
                found = self.catch_up()
                left = deadline - time.monotonic()
                if found or left <= 0 or self._session.pokes != pokes:
                    return found
                changed.wait(left)


class DriverPorts(MemoryDriverPorts):
    def __init__(self, session: Steered, driver: Driver) -> None:
        super().__init__(session.broker, driver.config)
        self._session, self._driver = session, driver

    def watch_control(self, pipeline: str) -> MemoryControl:
        return DriverControl(self._driver, self._session, pipeline, self.control_end(pipeline))


class TaskReader(MemoryReader):
    """A task's reader that counts its polls, and dies in one once its generation is doomed."""

    def __init__(self, session: Steered, spec: TaskSpec) -> None:
        super().__init__(session.broker, spec.pipeline.name, spec.config.batch_size)
        self._session, self.generation, self.task = session, spec.generation, spec.task
        self._control = (spec.config.control_topic(spec.pipeline.name), 0)
        self.polls = 0

    def poll(self, timeout_s: float) -> list[MemoryMessage]:
        """Up to a batch, waiting up to `timeout_s` for one, or for a control record (an
        announcement for the task), or for the session's wake-up."""
        session = self._session
        if self.generation <= session.doomed_generation:
            raise faults.Killed(f"task {self.task}: the test kit stopped the run")
        self.polls += 1
        deadline, pokes = time.monotonic() + timeout_s, session.pokes
        changed = session.broker.changed
        with changed:
            control = session.broker.bounds(self._control)[1]
            while True:
                found = super().poll(0.0)
                left = deadline - time.monotonic()
                if found or left <= 0 or session.hurry or session.pokes != pokes:
                    break
                if session.broker.bounds(self._control)[1] != control:
                    break
                changed.wait(left)
        with session.changed:
            session.changed.notify_all()
        return found


class WakingExecutor(ThreadExecutor):
    """Task threads whose job's end also wakes the session's threads: the driver then
    learns at once that a task died."""

    def __init__(self, ports: PortsFactory, wake: Callable[[], None]) -> None:
        super().__init__(ports)
        self._wake = wake

    def launch(
        self, specs: Sequence[TaskSpec], group: str, on_end: Callable[[], None]
    ) -> ThreadJob:
        def ended() -> None:
            on_end()
            self._wake()

        return super().launch(specs, group, ended)
