"""laminar-kafka, kill -9 of one worker task in the middle of a run, and how fast it came back.

The run is a `benchmarks.laminar.Session` like a timed one; once a third of
the output is visible, one worker task gets SIGKILL (found by its pid file in
`$LAMINAR_PID_DIR`). The run must still produce its exact output (checked).
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from benchmarks.harness import BaselineJob
from benchmarks.laminar import RUN_TIMEOUT_S, Session, pipeline_name
from benchmarks.results import RunResult
from benchmarks.workloads import expected_output_count
from laminar_kafka.chaos.worker_pids import WorkerPid, worker_pids
from laminar_kafka.errors import ConfigError, PipelineError

__all__ = ["PID_DIR_ENV", "RecoveryResult", "measure_recovery"]

PID_DIR_ENV: Final = "LAMINAR_PID_DIR"
"""Where worker tasks write `<pipeline>.g<gen>.t<task>.pid`; set before Spark starts."""
_POLL_S: Final = 0.01


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


def measure_recovery(
    job: BaselineJob,
    *,
    parallelism: int,
    name: str | None = None,
    spark_context: Any = None,
    kill_fraction: float = 1 / 3,
    victim_task: int = 0,
    timeout_s: float = RUN_TIMEOUT_S,
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
        session = Session(job, name, parallelism, checkpoints, spark_context, timeout_s)
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
            running_again_at = session.await_started(occurrence=2, first_task=False)
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


def _output_advances(session: Session) -> float | None:
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
