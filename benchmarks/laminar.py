"""laminar-kafka on the benchmark workloads: the pipelines, a timed run, a kill -9 run.

The pipelines use the functions of `benchmarks.workloads` and the schemas of
`benchmarks.records`, decoded and encoded as schemaless Avro (`framing="raw"`),
so their output is byte for byte what the other systems write:

    stateless  source(Avro) -> filter(keep) -> map(map_record) -> sink(Avro, key=key)
    keyed      source(Avro) -> key_by("key") -> aggregate(running count, last id)
               -> sink({id, key, count} as Avro, key=key)

`key_by` needs the input partitioned by `key` with Kafka's murmur2 partitioner,
which `benchmarks.preload` does. A run is exactly-once with checkpoints every
`commit_interval_s`; it is timed from the runner's "tasks running" message (Spark
and task start-up excluded) to the moment an `OutputWatcher` sees the last
expected record with read_committed, then drained and checked record by record;
the dead-letter topic must be empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from benchmarks.harness import BaselineJob
from benchmarks.records import COUNT_SCHEMA_JSON, RECORD_SCHEMA_JSON, Record
from benchmarks.results import RunResult, quantile
from benchmarks.topics import delete_topics
from benchmarks.verify import OutputWatcher, check_output, count_topic, read_topic
from benchmarks.workloads import Workload, expected_output_count, keep, map_record
from laminar_kafka import AvroFormat, Pipeline, RuntimeConfig
from laminar_kafka.errors import ConfigError, PipelineError
from laminar_kafka.runtime.events import GenerationStarted
from laminar_kafka.runtime.stats import RunStats
from laminar_kafka.testing.run import BackgroundRun
from laminar_kafka.testing.worker_pids import WorkerPid, worker_pids

__all__ = [
    "PID_DIR_ENV",
    "LaminarResult",
    "RecoveryResult",
    "build_pipeline",
    "measure_recovery",
    "pipeline_name",
    "run_laminar",
]

PID_DIR_ENV: Final = "LAMINAR_PID_DIR"
"""Where worker tasks write `<pipeline>.g<gen>.t<task>.pid`; set before Spark starts."""

_RUN_TIMEOUT_S: Final = 1800.0
_START_TIMEOUT_S: Final = 300.0
_STOP_TIMEOUT_S: Final = 180.0
_POLL_S: Final = 0.01


def _initial() -> tuple[int, int]:
    """Keyed state: (running count, id of the last record counted)."""
    return 0, -1


def _add(state: tuple[int, int], record: Record) -> tuple[int, int]:
    return state[0] + 1, record["id"]


def _emit(key: str, state: tuple[int, int]) -> Record:
    return {"id": state[1], "key": key, "count": state[0]}


def _avro(schema_json: str) -> AvroFormat:
    # No per-record validation on encode: no other system validates, and every
    # output record is checked against the workload afterwards.
    return AvroFormat(json.loads(schema_json), framing="raw", validate=False)


def build_pipeline(name: str, workload: Workload, input_topic: str, output_topic: str) -> Pipeline:
    """The laminar-kafka pipeline of `workload` from `input_topic` to `output_topic`."""
    pipeline = Pipeline(name)
    source = pipeline.source(input_topic, value_format=_avro(RECORD_SCHEMA_JSON))
    if workload == "keyed":
        counted = source.key_by("key").aggregate(_initial, _add, _emit)
        counted.sink(output_topic, value_format=_avro(COUNT_SCHEMA_JSON), key="key")
    else:
        mapped = source.filter(keep).map(map_record)
        mapped.sink(output_topic, value_format=_avro(RECORD_SCHEMA_JSON), key="key")
    return pipeline


def pipeline_name(workload: Workload, interval_s: float, tag: str = "") -> str:
    """A fresh pipeline name: its checkpoints, topics and transactional ids are its own."""
    return f"bench-{tag}{workload}-{interval_s:g}s-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class LaminarResult:
    """A timed laminar-kafka run and its checkpoint statistics (milliseconds)."""

    run: RunResult
    checkpoints: int
    restarts: int
    checkpoint_p50_ms: float | None
    checkpoint_p99_ms: float | None
    alignment_p50_ms: float | None
    alignment_p99_ms: float | None


@dataclass(frozen=True)
class RecoveryResult:
    """A run in which one worker task was killed with SIGKILL, and how fast it came back.

    `recovery_s` is the runtime's own figure (`RunStats.recovery_s`): from the
    moment the runner saw the worker job lost to every task of the new
    generation running. `kill_to_running_s` counts from the kill instead, so it
    includes the time Spark takes to report the loss; `kill_to_output_s` runs
    from the kill to the first output made visible by the new generation.
    """

    victim: str
    recovery_s: float
    kill_to_running_s: float
    kill_to_output_s: float | None
    run: RunResult


class _Session:
    """One `BackgroundRun` of a pipeline with an `OutputWatcher` on its sink topic."""

    def __init__(
        self,
        job: BaselineJob,
        name: str,
        parallelism: int,
        checkpoint_dir: str,
        spark_context: Any,
        timeout_s: float,
    ) -> None:
        self.job = job
        self.name = name
        self.expected = expected_output_count(job.workload, job.records)
        self.config = RuntimeConfig(
            bootstrap=job.bootstrap,
            checkpoint_dir=checkpoint_dir,
            parallelism=parallelism,
            checkpoint_interval_s=job.commit_interval_s,
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
        pipeline = build_pipeline(name, job.workload, job.input_topic, job.output_topic)
        self.watcher.start()
        try:
            self.run = BackgroundRun(pipeline, self.config, spark_context)
        except BaseException:
            self.watcher.stop()
            raise
        self._stopped = False

    def await_started(self, occurrence: int = 1) -> float:
        """`time.monotonic()` soon after the `occurrence`-th worker generation started."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            # Polled, not awaited: BackgroundRun keeps the runner's events in a list.
            if self.run.count(GenerationStarted) >= occurrence:
                return time.monotonic()
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
            delete_topics(bootstrap, [dead_letters, self.config.control_topic(self.name)])

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
    timeout_s: float = _RUN_TIMEOUT_S,
) -> LaminarResult:
    """Run `job.workload` with checkpoints every `job.commit_interval_s` until its output is in.

    `job.output_topic` must exist. Pass `spark_context` to reuse a running
    context; without it the runner gets or creates one (`local[parallelism]`).
    """
    name = name or pipeline_name(job.workload, job.commit_interval_s)
    with tempfile.TemporaryDirectory(prefix="bench-laminar-") as checkpoints:
        session = _Session(job, name, parallelism, checkpoints, spark_context, timeout_s)
        try:
            running_at = session.await_started()
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
        alignment_p50_ms=quantile(alignments, 0.5),
        alignment_p99_ms=quantile(alignments, 0.99),
    )


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def measure_recovery(
    job: BaselineJob,
    *,
    parallelism: int,
    name: str | None = None,
    spark_context: Any = None,
    kill_fraction: float = 1 / 3,
    victim_task: int = 0,
    timeout_s: float = _RUN_TIMEOUT_S,
) -> RecoveryResult:
    """Run `job`, SIGKILL one worker task once `kill_fraction` of the output is visible.

    The run must still produce its exact output (checked). Needs
    `$LAMINAR_PID_DIR`, set before the Spark context started its workers.
    """
    where = os.environ.get(PID_DIR_ENV)
    if not where:
        raise ConfigError(f"${PID_DIR_ENV} must name a directory before Spark starts")
    pid_dir = Path(where)
    name = name or pipeline_name(job.workload, job.commit_interval_s, tag="kill-")
    kill_at = max(1, int(expected_output_count(job.workload, job.records) * kill_fraction))
    with tempfile.TemporaryDirectory(prefix="bench-laminar-") as checkpoints:
        session = _Session(job, name, parallelism, checkpoints, spark_context, timeout_s)
        try:
            session.await_started()
            session.run.wait_for(
                lambda: session.watcher.count >= kill_at, timeout_s, f"{kill_at} output records"
            )
            if session.done.is_set():
                raise PipelineError(f"{name}: all output was in before the kill; use more records")
            victim = _worker(pid_dir, name, victim_task)
            os.kill(victim.pid, signal.SIGKILL)
            killed_at = time.monotonic()
            running_again_at = session.await_started(occurrence=2)
            resumed_at = _output_advances(session)
            done_at = session.await_output()
            stats = session.stop()
        except BaseException:
            session.abandon()
            raise
    session.verify_and_clean()
    if not stats.recovery_s:
        raise PipelineError(f"{name}: the runner recorded no recovery after the kill")
    return RecoveryResult(
        victim=f"{name}.{victim.label}",
        recovery_s=stats.recovery_s[0],
        kill_to_running_s=running_again_at - killed_at,
        kill_to_output_s=None if resumed_at is None else resumed_at - killed_at,
        run=RunResult(
            name=f"laminar {job.workload} {job.commit_interval_s:g}s kill -9",
            records=job.records,
            seconds=done_at - killed_at,
            records_out=session.expected,
            commits=stats.committed,
        ),
    )


def _worker(pid_dir: Path, name: str, task: int) -> WorkerPid:
    """Task `task` of the newest generation of pipeline `name`, from its pid file."""
    mine = [w for w in worker_pids(pid_dir) if w.pipeline == name and w.task == task]
    if not mine:
        raise PipelineError(f"{name}: no pid file of task {task} in {pid_dir}")
    return mine[-1]


def _output_advances(session: _Session) -> float | None:
    """When the visible output first grows after this call; None if it was already complete."""
    seen = session.watcher.count
    deadline = time.monotonic() + session.timeout_s
    while session.watcher.count <= seen:
        if session.done.is_set():
            return None
        session.check_alive("the output to advance")
        if time.monotonic() > deadline:
            raise PipelineError(f"{session.name}: output stuck at {seen} after the restart")
        time.sleep(_POLL_S)
    return time.monotonic()
