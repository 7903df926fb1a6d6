"""Where a generation's tasks run: the executor the runner launches them through.

The runner, the coordinator and every task run the same code whatever runs the
tasks: a Spark barrier job (`runtime/spark_job.py`), or threads of this process
(`runtime/thread_executor.py`). A job ends as a whole: when one task fails it
counts as lost, as a failed barrier stage does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from laminar_kafka.runtime.task_spec import TaskSpec


class WorkerRun(Protocol):
    """One generation's tasks, running (`WorkerJob`)."""

    error: str | None
    """Why the job failed, once it did."""

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
