"""Where a generation's tasks run: the executor the runner launches them through.

The runner, the coordinator and every task run the same code whatever runs the
tasks: a Spark barrier job (`runtime/driver/spark_job.py`), or threads of this process
(`runtime/driver/thread_executor.py`). A job ends as a whole: when one task fails it
counts as lost, as a failed barrier stage does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from laminar_kafka.runtime.task_spec import TaskSpec


@dataclass(frozen=True)
class Lost:
    """Why a worker generation ended before it drained."""

    reason: str
    starting: bool = False


class WorkerRun(Protocol):
    """One generation's tasks, running (`WorkerJob`)."""

    error: str | None
    """Why the job failed, once it did."""
    detail: str | None
    """The traceback behind `error`, when an exception ended the job."""

    def start(self) -> None: ...

    @property
    def finished(self) -> bool: ...

    def lost(self) -> str | None:
        """Why the job ended before it was asked to, or None while it runs."""
        ...

    def join(self, timeout_s: float) -> bool:
        """Wait for the job's end; whether it ended."""
        ...

    def cancel(self) -> None:
        """Stop what still runs (its tasks are fenced by the next generation anyway)."""
        ...


class Executor(Protocol):
    """Launches a generation's tasks."""

    def prepare(self, tasks: int) -> None:
        """Before the first generation: make room for `tasks` tasks, or raise ConfigError."""
        ...

    def launch(
        self, specs: Sequence[TaskSpec], group: str, on_end: Callable[[], None]
    ) -> WorkerRun:
        """A job running one task per spec (not started); `on_end` is called when it ends."""
        ...


def failure_detail(job: WorkerRun | None, reason: str) -> str | None:
    """The traceback behind `reason` when the job's own failure lost the generation
    (not a silent task, a late ack or a broker outage): for the `WorkerLost` event."""
    return job.detail if job is not None and job.error == reason else None
