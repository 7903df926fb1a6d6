"""The worker job: one Spark barrier stage, one long-running task per partition group.

Barrier mode gives gang scheduling (all tasks run together or none) and fails the
whole stage when one task dies. Spark does not retry a failed barrier
ResultStage, so restarts are ours (runtime/driver/runner.py). Tasks of a failed attempt
may keep running in their Python workers; they fence themselves out (see
runtime/task/worker.py).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from laminar_kafka.checkpoint.participant import TaskIdentity, report_incurable
from laminar_kafka.control.records import Announcement
from laminar_kafka.control.transport import ControlChannel
from laminar_kafka.errors import FencedError, IncurableError, LaminarError
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.task.kafka_ports import kafka_ports
from laminar_kafka.runtime.task.worker import WorkerTask
from laminar_kafka.runtime.task_spec import TaskSpec, TaskSummary

log = logging.getLogger(__name__)


def worker_entry(specs: tuple[TaskSpec, ...]) -> Callable[[Iterable[Any]], Iterator[TaskSummary]]:
    """The function each Spark barrier task runs."""

    def run(_rows: Iterable[Any]) -> Iterator[TaskSummary]:
        from pyspark import BarrierTaskContext

        from laminar_kafka.runtime.logs import configure_worker_logging

        configure_worker_logging()
        index = BarrierTaskContext.get().partitionId()
        task = WorkerTask(specs[index], kafka_ports(specs[index]))
        profile_dir = os.environ.get("LAMINAR_PROFILE_DIR")
        if not profile_dir:
            generation = specs[index].generation
            try:
                yield task.run()
            except FencedError as exc:  # a stale task stopping, as designed
                log.info("task %d of generation %d stops: %s", index, generation, exc)
                raise
            except IncurableError as exc:
                log.error("task %d of generation %d failed for good: %s", index, generation, exc)
                _report_incurable(specs[index], str(exc))
                raise
            except Exception as exc:
                # Spark reports a failed barrier stage without the task's own error.
                log.error("task %d of generation %d failed: %s", index, generation, exc)
                log.debug("task %d failed", index, exc_info=True)
                raise
            return
        # Profiling a run: one cProfile dump per task, read with pstats.
        import cProfile

        profiler = cProfile.Profile()
        try:
            yield profiler.runcall(task.run)
        finally:
            spec = specs[index]
            profiler.dump_stats(
                os.path.join(profile_dir, f"{spec.pipeline.name}.g{spec.generation}.t{index}.prof")
            )

    return run


def _report_incurable(spec: TaskSpec, error: str) -> None:
    """Send the driver the error no restart can cure (the task's own channel is closed)."""
    cfg, name = spec.config, spec.pipeline.name
    control = ControlChannel(
        cfg.kafka, cfg.control_topic(name), name, spec.control_start_offset, Announcement
    )
    try:
        report_incurable(
            control, TaskIdentity(name, spec.task, spec.generation, spec.stage_index), error
        )
    except LaminarError as exc:  # the driver then restarts, and meets the error again
        log.warning("task %d could not report its failure: %s", spec.task, exc)
    finally:
        control.close()


class SparkExecutor:
    """Runs each generation as a Spark barrier job (the `Executor` of a real run)."""

    def __init__(self, config: RuntimeConfig, pipeline: str, spark_context: Any = None) -> None:
        self._config = config
        self._pipeline = pipeline
        self._sc = spark_context

    def prepare(self, tasks: int) -> None:
        from laminar_kafka.runtime.driver.spark_session import check_local_slots, spark_context

        if self._sc is None:  # the application's own, or one on --master, else local[tasks]
            self._sc = spark_context(self._config.master, f"laminar-{self._pipeline}", tasks)
        check_local_slots(self._sc, tasks)

    def launch(
        self, specs: Sequence[TaskSpec], group: str, on_end: Callable[[], None]
    ) -> WorkerJob:
        return WorkerJob(self._sc, list(specs), group, on_end)


class WorkerJob:
    """Runs the barrier job in a driver thread and reports how it ended."""

    def __init__(
        self,
        spark_context: Any,
        specs: list[TaskSpec],
        group: str,
        on_end: Callable[[], None] = lambda: None,
    ) -> None:
        self._sc = spark_context
        self._on_end = on_end
        self._specs = tuple(specs)
        self.group = group
        self.error: str | None = None
        self.detail: str | None = None
        self.summaries: list[TaskSummary] = []
        self._thread = threading.Thread(target=self._run, name=f"laminar-{group}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._sc.setJobGroup(self.group, f"laminar workers {self.group}", True)
            rdd = self._sc.parallelize(range(len(self._specs)), len(self._specs))
            self.summaries = rdd.barrier().mapPartitions(worker_entry(self._specs)).collect()
        except Exception as exc:
            self.error = _first_line(exc)
            self.detail = failure_text(exc)
        finally:
            self._on_end()

    @property
    def finished(self) -> bool:
        return not self._thread.is_alive()

    def lost(self) -> str | None:
        """Why the job ended before it was asked to, or None while it runs."""
        if self._thread.is_alive():
            return None
        return self.error or "worker job ended"

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def cancel(self) -> None:
        try:
            self._sc.cancelJobGroup(self.group)
        except Exception as exc:
            log.debug("cancel %s: %s", self.group, exc)


MAX_DETAIL = 16_000
"""Characters of a failure's text kept for the status page (its start: the cause)."""


_JVM_FRAME = re.compile(r"\s+(at [\w$.<>/-]+\(.*\)|\.\.\. \d+ more)$")
"""A JVM stack frame's line (`at pkg.Class.method(File.java:12)`), or `... 47 more`."""


def failure_text(exc: BaseException) -> str:
    """What Spark reported of a failed job (with the task's Python traceback, if it
    quotes one), without the JVM's stack frames, which say nothing of the pipeline."""
    lines = [line for line in str(exc).splitlines() if not _JVM_FRAME.match(line)]
    text = "\n".join(lines).strip() or type(exc).__name__
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL] + "\n…"


_PYTHON_ERROR = re.compile(r"^([A-Za-z_]\w*(?:Error|Exception)): (.+)$", re.MULTILINE)


def _first_line(exc: BaseException) -> str:
    """The reason a Spark job failed, in a line a person can read."""
    text = str(exc)
    if "Python worker exited unexpectedly" in text or "EOFException" in text:
        return "a worker task process died"
    # The task's own Python error, if one is quoted (the last one is the cause).
    found = [m for m in _PYTHON_ERROR.finditer(text) if "Py4J" not in m.group(1)]
    if found:
        return f"{found[-1].group(1)}: {found[-1].group(2)}"[:500]
    match = re.search(r"Job aborted due to stage failure: ([^\n]+)", text)
    if match:
        return match.group(1)[:500]
    return (text.splitlines() or [type(exc).__name__])[0][:500]
