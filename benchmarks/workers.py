"""Each compared system runs in a worker process of its own.

A process per system lets its memory be measured as a process tree, and lets
Quix and Spark run with the bench virtualenv's Python when this one lacks
their packages. The worker is `python -m benchmarks.compare --worker SPEC`: it
runs the tasks of SPEC (a JSON file) and reports each as a JSON event line on
stdout; everything else it prints goes to stderr.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO, Any, Final, Literal, Protocol

from benchmarks.harness import BaselineJob
from benchmarks.memory import PeakRss
from benchmarks.results import RunResult

__all__ = [
    "BENCH_VENV_ENV",
    "SYSTEMS",
    "OnDone",
    "OnStart",
    "System",
    "Task",
    "TaskKind",
    "TaskResult",
    "WorkerSettings",
    "one_line",
    "run_tasks",
    "worker_main",
]

System = Literal["laminar", "ceiling", "quix", "spark"]
SYSTEMS: Final[tuple[System, ...]] = ("laminar", "ceiling", "quix", "spark")
TaskKind = Literal["throughput", "latency", "recovery"]

BENCH_VENV_ENV: Final = "BENCH_VENV"
_DEFAULT_VENV: Final = Path.home() / ".cache" / "laminar-kafka" / "bench-venv"
_REPO: Final = Path(__file__).resolve().parents[1]
_REQUIREMENTS: Final = _REPO / "benchmarks" / "requirements-baselines.txt"
_NEEDS: Final[dict[System, tuple[str, ...]]] = {
    "laminar": (),
    "ceiling": (),
    "quix": ("quixstreams",),
    "spark": ("pandas", "pyarrow"),
}
_EVENT: Final = "@@compare "


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- what a worker runs and reports ------------------------------------------------


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker needs beyond its tasks: laminar's task count, Spark's master."""

    parallelism: int = 2
    spark_master: str = "local[2]"


@dataclass(frozen=True)
class Task:
    """One run of one system: a timed workload, a latency phase, or a kill -9 run."""

    kind: TaskKind
    job: BaselineJob
    pipeline: str = ""
    """laminar-kafka pipeline name (chosen by the caller, which cleans up after it)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        return cls(kind=data["kind"], job=BaselineJob(**data["job"]), pipeline=data["pipeline"])


@dataclass(frozen=True)
class TaskResult:
    """What a task measured; `error` set means it failed (and its numbers mean nothing)."""

    name: str = ""
    records: int = 0
    seconds: float = 0.0
    warmup_s: float | None = None
    peak_rss_mib: float | None = None
    checkpoint_p50_ms: float | None = None
    checkpoint_p99_ms: float | None = None
    alignment_p50_ms: float | None = None
    alignment_p99_ms: float | None = None
    ended_at: float | None = None
    """`time.monotonic()` at the end of the timed span (in the process that ran it)."""
    recovery_s: float | None = None
    kill_to_running_s: float | None = None
    kill_to_output_s: float | None = None
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_samples: int = 0
    error: str | None = None

    @property
    def records_per_s(self) -> float | None:
        if self.error is not None or self.seconds <= 0:
            return None
        return self.records / self.seconds

    @classmethod
    def of_run(cls, run: RunResult, **extra: Any) -> TaskResult:
        return cls(
            name=run.name,
            records=run.records,
            seconds=run.seconds,
            warmup_s=run.warmup_s,
            ended_at=run.ended_at,
            **extra,
        )


def one_line(exc: BaseException) -> str:
    """`exc` as one short line, for a table footnote."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


# -- the systems, as run inside a worker -------------------------------------------


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
            from laminar_kafka.runtime.spark_session import spark_context

            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers: this Python
            self._sc = spark_context(f"local[{self._settings.parallelism}]", "laminar-bench")
        return self._sc

    def run(self, task: Task) -> TaskResult:
        from benchmarks.laminar import measure_recovery, run_laminar

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
            alignment_p50_ms=result.alignment_p50_ms,
            alignment_p99_ms=result.alignment_p99_ms,
        )

    def close(self) -> None:
        if self._owned and self._sc is not None:
            self._sc.stop()


class _CeilingExecutor:
    def run(self, task: Task) -> TaskResult:
        from benchmarks.baselines.transactional_loop import run_job

        return TaskResult.of_run(run_job(task.job))

    def close(self) -> None:
        pass


class _QuixExecutor:
    def run(self, task: Task) -> TaskResult:
        from benchmarks.baselines.quix import run_quix

        return TaskResult.of_run(run_quix(task.job))

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


def _executor(system: System, settings: WorkerSettings, spark_context: Any = None) -> Executor:
    if system == "laminar":
        return _LaminarExecutor(settings, spark_context)
    if system == "quix":
        return _QuixExecutor()
    if system == "spark":
        return _SparkExecutor(settings)
    return _CeilingExecutor()


def _execute(executor: Executor, task: Task) -> TaskResult:
    """Run `task`, sampling this process tree's memory; a failure becomes `error`.

    The peak is taken over the timed span only, not over the output check after it.
    """
    try:
        with PeakRss(os.getpid()) as rss:
            result = executor.run(task)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return TaskResult(name=f"{task.kind} {task.job.workload}", error=one_line(exc))
    return replace(result, peak_rss_mib=rss.peak_mib(result.ended_at))


def worker_main(spec_path: str) -> int:
    """`--worker SPEC`: run one system's tasks, reporting events as JSON lines on stdout."""
    # Events keep the real stdout; everything else written to it later (Spark, Quix,
    # the JVM this process starts) goes to stderr, so events cannot be garbled.
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    spec = json.loads(Path(spec_path).read_text())
    executor = _executor(spec["system"], WorkerSettings(**spec["settings"]))
    try:
        for index, data in enumerate(spec["tasks"]):
            events.write(_EVENT + json.dumps({"event": "start", "index": index}) + "\n")
            result = _execute(executor, Task.from_json(data))
            done = {"event": "done", "index": index, "result": asdict(result)}
            events.write(_EVENT + json.dumps(done) + "\n")
    finally:
        executor.close()
        events.close()
    return 0


# -- starting workers and reading their events ---------------------------------------

OnStart = Callable[[int], None]
"""Called with a task's index as it starts."""
OnDone = Callable[[int, TaskResult], TaskResult]
"""Called with a task's index and result as it ends; returns the result to keep."""


def _interpreter(system: System) -> str:
    """This interpreter when it has what `system` needs, else the bench virtualenv's."""
    needs = _NEEDS[system]
    if all(importlib.util.find_spec(module) is not None for module in needs):
        return sys.executable
    venv = Path(os.environ.get(BENCH_VENV_ENV) or _DEFAULT_VENV).expanduser()
    python = venv / "bin" / "python"
    if not python.exists():
        _say(f"creating the bench virtualenv {venv} (see benchmarks/README.md)")
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True
        )
    probe = subprocess.run([python, "-c", f"import {', '.join(needs)}"], capture_output=True)
    if probe.returncode != 0:
        _say(f"installing {_REQUIREMENTS.name} into {venv} (first run only)")
        subprocess.run(
            [python, "-m", "pip", "install", "-r", str(_REQUIREMENTS)],
            check=True,
            stdout=sys.stderr,
        )
    return str(python)


def run_tasks(
    system: System,
    tasks: Sequence[Task],
    settings: WorkerSettings,
    *,
    on_start: OnStart,
    on_done: OnDone,
    kill_switch: list[Callable[[], None]],
    spark_context: Any = None,
) -> list[TaskResult]:
    """Run `system`'s tasks in a worker process, one result per task.

    laminar-kafka runs here instead when `spark_context` is given (for tests,
    whose session already holds one). `kill_switch[0]` is set to a function
    that kills the worker, for a caller that sees the run go wrong.
    """
    if system == "laminar" and spark_context is not None:
        executor = _executor(system, settings, spark_context)
        return _run_in_process(executor, tasks, on_start, on_done)
    return _run_in_worker(system, tasks, settings, on_start, on_done, kill_switch)


def _run_in_worker(
    system: System,
    tasks: Sequence[Task],
    settings: WorkerSettings,
    on_start: OnStart,
    on_done: OnDone,
    kill_switch: list[Callable[[], None]],
) -> list[TaskResult]:
    """Run `tasks` in a worker process; `kill_switch[0]` is set to a function that kills it."""
    python = _interpreter(system)
    with tempfile.TemporaryDirectory(prefix=f"bench-{system}-") as work:
        spec = Path(work) / "spec.json"
        spec.write_text(
            json.dumps(
                {
                    "system": system,
                    "settings": asdict(settings),
                    "tasks": [asdict(task) for task in tasks],
                }
            )
        )
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(_REPO), os.environ.get("PYTHONPATH", "")]),
        }
        pid_dir = Path(work) / "pids"
        pid_dir.mkdir()
        env["LAMINAR_PID_DIR"] = str(pid_dir)  # the worker tasks read it (kill -9 run)
        proc = subprocess.Popen(
            [python, "-m", "benchmarks.compare", "--worker", str(spec)],
            cwd=_REPO,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        kill_switch[:] = [proc.kill]
        results: dict[int, TaskResult] = {}
        try:
            _read_events(proc.stdout, on_start, on_done, results)
            code = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    failed = f"{system} worker exited with status {code} before the task ended"
    return [
        results.get(i, TaskResult(name=task.kind, error=failed)) for i, task in enumerate(tasks)
    ]


def _read_events(
    stream: IO[str] | None,
    on_start: OnStart,
    on_done: OnDone,
    results: dict[int, TaskResult],
) -> None:
    assert stream is not None
    for line in stream:
        if not line.startswith(_EVENT):
            sys.stderr.write(line)
            continue
        event = json.loads(line[len(_EVENT) :])
        if event["event"] == "start":
            on_start(event["index"])
        else:
            results[event["index"]] = on_done(event["index"], TaskResult(**event["result"]))


def _run_in_process(
    executor: Executor, tasks: Sequence[Task], on_start: OnStart, on_done: OnDone
) -> list[TaskResult]:
    results = []
    try:
        for index, task in enumerate(tasks):
            on_start(index)
            results.append(on_done(index, _execute(executor, task)))
    finally:
        executor.close()
    return results
