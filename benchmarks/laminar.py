"""laminar-kafka on the benchmark workloads: a timed run (kill -9 run: `laminar_recovery`).

The pipelines are those of `benchmarks.laminar_pipelines` (the rekey one has
two stages). A run is exactly-once with checkpoints every
`commit_interval_s`; it is timed from the first worker task's ready (the
runner's `GenerationStarted` less its `ready_spread_s`: a ready task reads at
once; Spark and task start-up excluded) to the moment an `OutputWatcher` sees the last
expected record with read_committed, then drained and checked record by record;
the dead-letter topic must be empty. Checkpoint durations are reported end to
end (`RunStats.checkpoint_s`) and per stage (`RunStats.stage_checkpoint_s`).
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from benchmarks.harness import BaselineJob
from benchmarks.laminar_pipelines import build_pipeline, pipeline_name
from benchmarks.results import RunResult, quantile
from benchmarks.topics import delete_topics
from benchmarks.verify import OutputWatcher, check_output, count_topic, read_topic
from benchmarks.workloads import expected_output_count
from laminar_kafka import RuntimeConfig
from laminar_kafka.errors import PipelineError
from laminar_kafka.runtime.driver.events import GenerationStarted
from laminar_kafka.runtime.driver.stats import RunStats
from laminar_kafka.testing.run import BackgroundRun

__all__ = [
    "RUN_TIMEOUT_S",
    "LaminarResult",
    "Session",
    "build_pipeline",
    "pipeline_name",
    "run_laminar",
]

RUN_TIMEOUT_S: Final = 1800.0
_START_TIMEOUT_S: Final = 300.0
_STOP_TIMEOUT_S: Final = 180.0
_POLL_S: Final = 0.01


@dataclass(frozen=True)
class LaminarResult:
    """A timed laminar-kafka run and its checkpoint statistics (milliseconds)."""

    run: RunResult
    checkpoints: int
    restarts: int
    checkpoint_p50_ms: float | None
    checkpoint_p99_ms: float | None
    stage_checkpoint_p50_ms: tuple[float, ...]
    """Per stage, stage 0 first: the stage's part of a checkpoint (`stage_checkpoint_s`)."""
    stage_checkpoint_p99_ms: tuple[float, ...]
    alignment_p50_ms: float | None
    alignment_p99_ms: float | None
    injection_p50_ms: float | None = None
    """Barrier injection into every source partition (`RunStats.injection_s`)."""
    injection_p99_ms: float | None = None


class Session:
    """One `BackgroundRun` of a pipeline with an `OutputWatcher` on its sink topic."""

    def __init__(
        self,
        job: BaselineJob,
        name: str,
        parallelism: int,
        checkpoint_dir: str,
        spark_context: Any,
        timeout_s: float,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.job = job
        self.name = name
        self.expected = expected_output_count(job.workload, job.records, job.num_keys)
        self.config = RuntimeConfig(
            bootstrap=job.bootstrap,
            checkpoint_dir=checkpoint_dir,
            parallelism=parallelism,
            checkpoint_interval_s=job.commit_interval_s,
            **(settings or {}),
        )
        self.timeout_s = timeout_s
        self.done = threading.Event()
        self.watcher = OutputWatcher(
            job.bootstrap,
            job.output_topic,
            self.expected,
            self.done.set,
            timeout_s=timeout_s,
            progress=job.progress,
        )
        pipeline = build_pipeline(
            name, job.workload, job.input_topic, job.output_topic, job.side_topic
        )
        self.internal_topics = list(pipeline.internal_topics)
        self.watcher.start()
        try:
            self.run = BackgroundRun(pipeline, self.config, spark_context)
        except BaseException:
            self.watcher.stop()
            raise
        self._stopped = False

    def await_started(self, occurrence: int = 1, *, first_task: bool = True) -> float:
        """`time.monotonic()` when the first task (else the last) of the `occurrence`-th
        generation was ready."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            # Polled, not awaited: BackgroundRun keeps the runner's events in a list.
            started = [e for e in list(self.run.events) if isinstance(e, GenerationStarted)]
            if len(started) >= occurrence:
                # From the first task's ready: a ready task reads before the others are.
                event = started[occurrence - 1]
                spread = event.ready_spread_s if first_task else 0.0
                return time.monotonic() - (time.time() - event.at) - spread
            self.check_alive(f"generation start #{occurrence}")
            if time.monotonic() > deadline:
                raise PipelineError(
                    f"{self.name}: no generation start #{occurrence} within "
                    f"{_START_TIMEOUT_S:.0f} s"
                )
            time.sleep(_POLL_S)

    def check_alive(self, what: str) -> None:
        if self.run.error is not None:
            raise PipelineError(f"{self.name} failed waiting for {what}: {self.run.error}")
        if self.watcher.error is not None:
            raise PipelineError(f"{self.name}: {self.watcher.error}") from self.watcher.error

    def await_output(self) -> float:
        """Wait until every expected output record is visible; return when that was seen."""
        self.run.wait_for(self.done.is_set, self.timeout_s, f"{self.expected} output records")
        self.check_alive("the output")
        if self.watcher.done_at is None:
            raise PipelineError(
                f"{self.name}: watch ended at {self.watcher.count}/{self.expected} records"
            )
        return self.watcher.done_at

    def stop(self) -> RunStats:
        """Drain the pipeline (final checkpoint) and stop the watch."""
        self._stopped = True
        try:
            return self.run.stop(_STOP_TIMEOUT_S)
        finally:
            self.watcher.stop()
            self.watcher.join()

    def verify_and_clean(self) -> None:
        """Check the output record by record and the dead letters; drop internal topics."""
        bootstrap = self.job.bootstrap
        dead_letters = self.config.dead_letters_to(self.name)
        try:
            letters = count_topic(bootstrap, dead_letters)
            if letters:
                raise PipelineError(f"{self.name}: {letters} records in {dead_letters}")
            pairs = read_topic(bootstrap, self.job.output_topic)
            check_output(self.job.workload, pairs, self.job.records, self.job.num_keys)
        finally:
            control = self.config.control_topic(self.name)
            delete_topics(bootstrap, [dead_letters, control, *self.internal_topics])

    def abandon(self) -> None:
        """After a failure: stop what still runs, keeping the first error."""
        if not self._stopped:
            with contextlib.suppress(Exception):
                self.stop()
        self.watcher.stop()


def run_laminar(
    job: BaselineJob,
    *,
    parallelism: int,
    name: str | None = None,
    spark_context: Any = None,
    timeout_s: float = RUN_TIMEOUT_S,
    on_started: Callable[[], object] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> LaminarResult:
    """Run `job.workload` with checkpoints every `job.commit_interval_s` until its output is in.

    `job.output_topic` must exist. Pass `spark_context` to reuse a running
    context; without it the runner gets or creates one (`local[parallelism]`).
    `on_started` is called once the tasks run (to start producing live input).
    `settings`: more `RuntimeConfig` fields (its state store, say).
    """
    name = name or pipeline_name(job.workload, job.commit_interval_s)
    with tempfile.TemporaryDirectory(prefix="bench-laminar-") as checkpoints:
        session = Session(job, name, parallelism, checkpoints, spark_context, timeout_s, settings)
        try:
            running_at = session.await_started()
            if on_started is not None:
                on_started()
            done_at = session.await_output()
            stats = session.stop()
        except BaseException:
            session.abandon()
            raise
    session.verify_and_clean()
    first = session.watcher.first_at
    seconds = done_at - running_at
    alignments = [float(ms) for ms in stats.alignment_ms]
    return LaminarResult(
        run=RunResult(
            name=f"laminar {job.workload} {job.commit_interval_s:g}s",
            records=job.records,
            seconds=seconds,
            records_out=session.expected,
            commits=stats.committed,
            warmup_s=None if first is None else first - running_at,
            ended_at=done_at,
        ),
        checkpoints=stats.committed,
        restarts=stats.restarts,
        checkpoint_p50_ms=_ms(quantile(stats.checkpoint_s, 0.5)),
        checkpoint_p99_ms=_ms(quantile(stats.checkpoint_s, 0.99)),
        stage_checkpoint_p50_ms=_per_stage(stats, 0.5),
        stage_checkpoint_p99_ms=_per_stage(stats, 0.99),
        alignment_p50_ms=quantile(alignments, 0.5),
        alignment_p99_ms=quantile(alignments, 0.99),
        injection_p50_ms=_ms(quantile(stats.injection_s, 0.5)),
        injection_p99_ms=_ms(quantile(stats.injection_s, 0.99)),
    )


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def _per_stage(stats: RunStats, q: float) -> tuple[float, ...]:
    """The `q` quantile of each stage's checkpoint durations in ms, stage 0 first."""
    found = (
        quantile(stats.stage_checkpoint_s[stage], q) for stage in sorted(stats.stage_checkpoint_s)
    )
    return tuple(seconds * 1000.0 for seconds in found if seconds is not None)
