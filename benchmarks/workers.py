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
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, Final

from benchmarks.executors import Executor, execute, executor_for
from benchmarks.tasks import (
    SYSTEMS,
    System,
    Task,
    TaskKind,
    TaskResult,
    WorkerSettings,
    one_line,
)
from benchmarks.venv import BENCH_VENV_ENV, bench_python

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

_REPO: Final = Path(__file__).resolve().parents[1]
_NEEDS: Final[dict[System, tuple[str, ...]]] = {
    "laminar": (),
    "limit": (),
    "ceiling": (),
    "quix": ("quixstreams",),
    "spark": ("pyspark", "pandas", "pyarrow"),
}
_EVENT: Final = "@@compare "


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def worker_main(spec_path: str) -> int:
    """`--worker SPEC`: run one system's tasks, reporting events as JSON lines on stdout."""
    # Events keep the real stdout; everything else written to it later (Spark, Quix,
    # the JVM this process starts) goes to stderr, so events cannot be garbled.
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    spec = json.loads(Path(spec_path).read_text())
    executor = executor_for(spec["system"], WorkerSettings(**spec["settings"]))
    try:
        for index, data in enumerate(spec["tasks"]):
            events.write(_EVENT + json.dumps({"event": "start", "index": index}) + "\n")
            result = execute(executor, Task.from_json(data))
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
    return str(bench_python())


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
        executor = executor_for(system, settings, spark_context)
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
            results[event["index"]] = on_done(event["index"], TaskResult.from_json(event["result"]))


def _run_in_process(
    executor: Executor, tasks: Sequence[Task], on_start: OnStart, on_done: OnDone
) -> list[TaskResult]:
    results = []
    try:
        for index, task in enumerate(tasks):
            on_start(index)
            results.append(on_done(index, execute(executor, task)))
    finally:
        executor.close()
    return results
