"""Runs a generation's tasks as threads of this process: the in-process executor.

The same `WorkerTask`s a Spark barrier job runs, on ports a factory gives each
(the in-memory transport's, `testing/memory_ports.py`). As a barrier stage does,
the job ends when every task returned or when the first one failed; the other
tasks of a failed job run on until the next generation fences them, as the
Python workers of a failed Spark job do. A thread killed at a crash point
(`faults.Killed`) stands for a killed worker process.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Sequence

from laminar_kafka import faults, waits
from laminar_kafka.checkpoint.participant import TaskIdentity, report_incurable
from laminar_kafka.errors import IncurableError, LaminarError
from laminar_kafka.runtime.task.ports import TaskPorts
from laminar_kafka.runtime.task.worker import WorkerTask
from laminar_kafka.runtime.task_spec import TaskSpec, TaskSummary

log = logging.getLogger(__name__)

PortsFactory = Callable[[TaskSpec], TaskPorts]


class ThreadExecutor:
    """Launches each generation's tasks on threads (the `Executor` of one process)."""

    def __init__(self, ports: PortsFactory) -> None:
        self._ports = ports
        self.jobs: list[ThreadJob] = []

    def prepare(self, tasks: int) -> None:
        pass

    def launch(
        self, specs: Sequence[TaskSpec], group: str, on_end: Callable[[], None]
    ) -> ThreadJob:
        job = ThreadJob(self._ports, specs, group, on_end)
        self.jobs.append(job)
        return job

    def join_all(self, timeout_s: float) -> list[str]:
        """Wait for every task thread ever launched; the names of those still running."""
        threads = [t for job in self.jobs for t in job.threads]
        for thread in threads:
            thread.join(timeout_s)
        return [t.name for t in threads if t.is_alive()]


class ThreadJob:
    """One generation's tasks on threads (the `WorkerRun` the runner watches)."""

    def __init__(
        self,
        ports: PortsFactory,
        specs: Sequence[TaskSpec],
        group: str,
        on_end: Callable[[], None],
    ) -> None:
        self._ports = ports
        self._on_end = on_end
        self._lock = waits.lock()
        self._running = len(specs)
        self._ended = waits.event()
        self.error: str | None = None
        self.detail: str | None = None
        self.summaries: list[TaskSummary] = []
        self.threads = [waits.thread(self._run, f"{group}-t{s.task}", (s,)) for s in specs]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _run(self, spec: TaskSpec) -> None:
        # The job ends however the thread does: a report that raises must not hang it.
        error: str | None = f"task {spec.task} ended without a summary"
        detail: str | None = None
        try:
            self.summaries.append(WorkerTask(spec, self._ports(spec)).run())
            error = None
        except faults.Killed as exc:
            error = f"task {spec.task} died: {exc}"
        except IncurableError as exc:
            error = f"IncurableError: {exc}"
            self._report_incurable(spec, str(exc))
        except Exception as exc:
            log.info("task %d of generation %d ends: %s", spec.task, spec.generation, exc)
            error = f"{type(exc).__name__}: {exc}"
            detail = "".join(traceback.format_exception(exc)).strip()
        finally:
            self._task_ended(error, detail)

    def _report_incurable(self, spec: TaskSpec, error: str) -> None:
        """Send the driver the error no restart can cure, on a control link of its own."""
        try:
            control = self._ports(spec).control
        except Exception as exc:
            log.warning("task %d could not report its failure: %s", spec.task, exc)
            return
        identity = TaskIdentity(spec.pipeline.name, spec.task, spec.generation, spec.stage_index)
        try:
            report_incurable(control, identity, error)
        except LaminarError as exc:
            log.warning("task %d could not report its failure: %s", spec.task, exc)
        finally:
            control.close()

    def _task_ended(self, error: str | None, detail: str | None = None) -> None:
        with self._lock:
            self._running -= 1
            if error and self.error is None:
                self.error, self.detail = error, detail
            if self._ended.is_set() or (not error and self._running):
                return
            self._ended.set()
        self._on_end()

    @property
    def finished(self) -> bool:
        return self._ended.is_set()

    def lost(self) -> str | None:
        if not self._ended.is_set():
            return None
        return self.error or "worker job ended"

    def join(self, timeout_s: float) -> bool:
        return self._ended.wait(timeout_s)

    def cancel(self) -> None:
        """Nothing to interrupt: the next generation's announcement fences what still runs."""
