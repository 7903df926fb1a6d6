"""The systems, as run inside a worker process: one executor per system.

An executor runs one system's tasks in this process; `execute` wraps a task in
a memory sample of this process tree and turns a failure into the result's
`error`, so that one failed run does not end the comparison.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import replace
from typing import Any, Protocol

from benchmarks.machine import cpu_share, read_cpu_times
from benchmarks.memory import PeakRss
from benchmarks.tasks import System, Task, TaskResult, WorkerSettings, one_line
from benchmarks.tree_cpu import cpu_in_span, sample_tree_cpu

__all__ = ["Executor", "execute", "executor_for"]


class Executor(Protocol):
    """Runs the tasks of one system in this process."""

    def run(self, task: Task) -> TaskResult: ...

    def close(self) -> None: ...


class _LaminarExecutor:
    def __init__(self, settings: WorkerSettings, spark_context: Any = None) -> None:
        self._settings = settings
        self._sc = spark_context
        self._owned = spark_context is None

    def _context(self) -> Any:
        if self._sc is None:
            from laminar_kafka.runtime.driver.spark_session import spark_context

            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers: this Python
            slots = self._settings.laminar_slots or self._settings.parallelism
            self._sc = spark_context(f"local[{slots}]", "laminar-bench")
        return self._sc

    def run(self, task: Task) -> TaskResult:
        from benchmarks.laminar import run_laminar
        from benchmarks.laminar_recovery import measure_recovery

        sc, parallelism = self._context(), self._settings.parallelism
        if task.kind == "recovery":
            kill = measure_recovery(
                task.job, parallelism=parallelism, name=task.pipeline, spark_context=sc
            )
            return TaskResult.of_run(
                kill.run,
                recovery_s=kill.recovery_s,
                kill_to_running_s=kill.kill_to_running_s,
                kill_to_output_s=kill.kill_to_output_s,
            )
        result = run_laminar(
            task.job, parallelism=parallelism, name=task.pipeline, spark_context=sc
        )
        return TaskResult.of_run(
            result.run,
            checkpoint_p50_ms=result.checkpoint_p50_ms,
            checkpoint_p99_ms=result.checkpoint_p99_ms,
            stage_checkpoint_p50_ms=result.stage_checkpoint_p50_ms,
            stage_checkpoint_p99_ms=result.stage_checkpoint_p99_ms,
            alignment_p50_ms=result.alignment_p50_ms,
            alignment_p99_ms=result.alignment_p99_ms,
        )

    def close(self) -> None:
        if self._owned and self._sc is not None:
            self._sc.stop()


class _CeilingExecutor:
    """The transactional loop, or with `copy` the physical limit, as P processes.

    The ceiling's latency phase runs one process: its input is produced while
    it runs, so no process knows beforehand how many records its share holds.
    """

    def __init__(self, settings: WorkerSettings, copy: bool) -> None:
        self._parallelism = settings.parallelism
        self._copy = copy

    def run(self, task: Task) -> TaskResult:
        from benchmarks.baselines.parallel import run_loops
        from benchmarks.baselines.transactional_loop import run_job

        if not self._copy and (self._parallelism == 1 or task.kind == "latency"):
            return TaskResult.of_run(run_job(task.job))
        return TaskResult.of_run(run_loops(task.job, self._parallelism, copy=self._copy))

    def close(self) -> None:
        pass


class _QuixExecutor:
    def __init__(self, settings: WorkerSettings) -> None:
        self._parallelism = settings.parallelism

    def run(self, task: Task) -> TaskResult:
        from benchmarks.baselines.quix import run_quix

        return TaskResult.of_run(run_quix(task.job, self._parallelism))

    def close(self) -> None:
        pass


class _SparkExecutor:
    def __init__(self, settings: WorkerSettings) -> None:
        self._settings = settings
        self._session: Any = None

    def run(self, task: Task) -> TaskResult:
        from benchmarks.baselines.spark_sss import build_session, run_spark

        if self._session is None:
            self._session = build_session(self._settings.spark_master)
        return TaskResult.of_run(run_spark(task.job, self._session))

    def close(self) -> None:
        if self._session is not None:
            self._session.stop()


def executor_for(system: System, settings: WorkerSettings, spark_context: Any = None) -> Executor:
    if system == "laminar":
        return _LaminarExecutor(settings, spark_context)
    if system == "quix":
        return _QuixExecutor(settings)
    if system == "spark":
        return _SparkExecutor(settings)
    return _CeilingExecutor(settings, copy=system == "limit")


def execute(executor: Executor, task: Task) -> TaskResult:
    """Run `task`, sampling this process tree's memory and CPU; a failure becomes `error`.

    The peak is taken over the timed span only, not over the output check after it;
    the machine's steal and busy shares over the whole task (`benchmarks.machine`).
    A system that does not time its own CPU (all but the loops) gets its process
    tree's CPU over the timed span.
    """
    cpu = read_cpu_times()
    try:
        with PeakRss(os.getpid()) as rss, sample_tree_cpu(os.getpid()) as tree:
            result = executor.run(task)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return TaskResult(name=f"{task.kind} {task.job.workload}", error=one_line(exc))
    steal, busy = cpu_share(cpu, read_cpu_times()) or (None, None)
    cpu_s = result.cpu_s
    if cpu_s is None and result.ended_at is not None:
        cpu_s = cpu_in_span(tree.samples, result.ended_at - result.seconds, result.ended_at)
    return replace(
        result,
        peak_rss_mib=rss.peak_mib(result.ended_at),
        steal_pct=steal,
        busy_pct=busy,
        cpu_s=cpu_s,
    )
