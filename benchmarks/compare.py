"""laminar-kafka against the ceiling, Quix Streams and Spark Structured Streaming, in one run.

    python -m benchmarks.compare [--records 2000000] [--partitions 8] [--bootstrap HOST:PORT]
                                 [--systems laminar,ceiling,quix,spark] [--skip-latency]

One broker, one pre-produced input topic (`--records` 100-byte Avro records
over `--partitions` partitions, keyed with murmur2) read from the start by every
system with its own group and output topic; the two workloads of
`benchmarks.workloads` on each system:

    laminar   laminar-kafka, exactly-once, checkpoints every 1 s and every 5 s
    ceiling   the hand-written consume-transform-produce loop in Kafka transactions
    quix      Quix Streams, processing_guarantee="exactly-once"
    spark     Spark Structured Streaming, its own Kafka source and sink, DataFrame code

Every system runs in a process of its own (a worker: this module with
`--worker`), so that its memory can be measured as a process tree and Quix and
Spark can run in the bench virtualenv. The baselines run before laminar-kafka:
laminar-kafka's coordinator writes its barriers into the input topic, which the
baselines would not know to skip. Then, per system, a latency phase (workload
(a), records produced at a fixed rate, produce-to-read_committed-visibility per
record) and, for laminar-kafka, a run in which one worker task is killed with
SIGKILL. The table goes to stdout and ends with

    laminar/quix=Q laminar/ceiling=C laminar/spark=S checkpoint_p99_ms=P

for workload (a) with 1 s checkpoints; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Final, Literal, Protocol

from confluent_kafka import OFFSET_BEGINNING, Producer, TopicPartition

from benchmarks.broker import benchmark_broker
from benchmarks.harness import BaselineJob
from benchmarks.preload import PRODUCER_CONFIG, preload
from benchmarks.records import DEFAULT_NUM_KEYS, decode_record, encode_record, make_record
from benchmarks.results import RunResult, quantile
from benchmarks.topics import TopicMaker, delete_topics, new_topic_maker
from benchmarks.verify import read_committed_consumer
from benchmarks.workloads import WORKLOADS, Workload, expected_output_count
from laminar_kafka.errors import BrokerError, ConfigError, PipelineError

__all__ = [
    "SYSTEMS",
    "CompareSettings",
    "Comparison",
    "LatencyProbe",
    "Row",
    "Task",
    "TaskResult",
    "format_report",
    "main",
    "run_comparison",
    "summary_line",
    "tree_rss_bytes",
]

System = Literal["laminar", "ceiling", "quix", "spark"]
SYSTEMS: Final[tuple[System, ...]] = ("laminar", "ceiling", "quix", "spark")
_RUN_ORDER: Final[tuple[System, ...]] = ("ceiling", "quix", "spark", "laminar")
_LABELS: Final[dict[System, str]] = {
    "laminar": "laminar",
    "ceiling": "ceiling (txn loop)",
    "quix": "quix (exactly-once)",
    "spark": "spark sss",
}
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
_RSS_INTERVAL_S: Final = 0.5
_PROBE_TIMEOUT_S: Final = 600.0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- what to run -------------------------------------------------------------------


@dataclass(frozen=True)
class CompareSettings:
    """One comparison: input size, systems, laminar intervals, latency and recovery phases."""

    records: int = 2_000_000
    partitions: int = 8
    systems: tuple[System, ...] = SYSTEMS
    intervals_s: tuple[float, ...] = (1.0, 5.0)
    """laminar-kafka checkpoint intervals; the first is the reference for ratios."""
    commit_interval_s: float = 1.0
    """Commit interval of the ceiling and Quix, trigger interval of Spark."""
    parallelism: int = 2
    """laminar-kafka worker tasks (Spark local[N]); the ceiling and Quix use one process."""
    spark_master: str = "local[2]"
    latency: bool = True
    latency_rate: int = 5_000
    latency_seconds: float = 10.0
    latency_warmup: int = 1_000
    recovery: bool = True
    num_keys: int = DEFAULT_NUM_KEYS
    progress: bool = True

    def __post_init__(self) -> None:
        if self.records < 1 or self.partitions < 1 or self.parallelism < 1:
            raise ConfigError("records, partitions and parallelism must be positive")
        if not self.intervals_s or min(self.intervals_s) <= 0:
            raise ConfigError("give at least one positive checkpoint interval")
        unknown = set(self.systems) - set(SYSTEMS)
        if unknown or not self.systems:
            raise ConfigError(f"unknown systems {sorted(unknown)}; choose from {SYSTEMS}")

    @property
    def latency_records(self) -> int:
        """Records of a latency phase: the warm-up, then `latency_seconds` at `latency_rate`."""
        return self.latency_warmup + round(self.latency_rate * self.latency_seconds)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompareSettings:
        data = {
            **data,
            "systems": tuple(data["systems"]),
            "intervals_s": tuple(data["intervals_s"]),
        }
        return cls(**data)


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


# -- memory --------------------------------------------------------------------------


def tree_rss_bytes(root: int) -> int:
    """Summed RSS of process `root` and all its descendants, from /proc (Linux)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])  # field 4 of stat: ppid
        rss[pid] = int(fields[21])  # field 24: resident pages
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    """Samples `tree_rss_bytes(root)` every `interval_s` on a thread, with their times."""

    def __init__(self, root: int, interval_s: float = _RSS_INTERVAL_S) -> None:
        self._root = root
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-rss", daemon=True)
        self.samples: list[tuple[float, int]] = []

    def _run(self) -> None:
        while True:
            self.samples.append((time.monotonic(), tree_rss_bytes(self._root)))
            if self._stop.wait(self._interval_s):
                return

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def peak_mib(self, until: float | None = None) -> float:
        """The largest sample taken up to `until` (a `time.monotonic()` stamp; None: all)."""
        end = math.inf if until is None else until
        return max((size for at, size in self.samples if at <= end), default=0) / 2**20


# -- the systems, as run inside a worker -------------------------------------------


class Executor(Protocol):
    """Runs the tasks of one system in this process."""

    def run(self, task: Task) -> TaskResult: ...

    def close(self) -> None: ...


class _LaminarExecutor:
    def __init__(self, settings: CompareSettings, spark_context: Any = None) -> None:
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
    def __init__(self, settings: CompareSettings) -> None:
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


def _executor(system: System, settings: CompareSettings, spark_context: Any = None) -> Executor:
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
        return TaskResult(name=f"{task.kind} {task.job.workload}", error=_one_line(exc))
    return replace(result, peak_rss_mib=rss.peak_mib(result.ended_at))


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _worker_main(spec_path: str) -> int:
    """`--worker SPEC`: run one system's tasks, reporting events as JSON lines on stdout."""
    # Events keep the real stdout; everything else written to it later (Spark, Quix,
    # the JVM this process starts) goes to stderr, so events cannot be garbled.
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    spec = json.loads(Path(spec_path).read_text())
    settings = CompareSettings.from_json(spec["settings"])
    executor = _executor(spec["system"], settings)
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


# -- end-to-end latency --------------------------------------------------------------


class LatencyProbe:
    """Produces records at a fixed rate and notes when each becomes visible downstream.

    First `warmup` records at once, to wait until the system under test is up
    (its start-up would otherwise count as latency); once their output is
    visible, the rest at `rate` records/s. A read_committed consumer on the
    output notes when each id first shows. Latency = visible - produced (both
    `time.monotonic()` in this process), for the records after the warm-up.
    Workload (a) only: its output carries the input `id`.
    """

    def __init__(
        self,
        bootstrap: str,
        input_topic: str,
        output_topic: str,
        *,
        warmup: int,
        records: int,
        rate: int,
        num_keys: int = DEFAULT_NUM_KEYS,
        timeout_s: float = _PROBE_TIMEOUT_S,
        progress: bool = True,
        on_failure: Callable[[], Any] = lambda: None,
    ) -> None:
        self._bootstrap = bootstrap
        self._input = input_topic
        self._output = output_topic
        self._warmup = warmup
        self._records = records
        self._rate = rate
        self._num_keys = num_keys
        self._timeout_s = timeout_s
        self._progress = progress
        self._on_failure = on_failure
        self._produced = [math.nan] * records
        self._visible = [math.nan] * records
        self._warm = threading.Event()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._guard, args=(self._produce,), daemon=True),
            threading.Thread(target=self._guard, args=(self._consume,), daemon=True),
        ]
        self.error: BaseException | None = None

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def finish(self, timeout_s: float = 60.0) -> None:
        """Wait up to `timeout_s` for every output record, then stop."""
        self._threads[1].join(timeout_s)
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def latencies_s(self) -> list[float]:
        """Produce-to-visible seconds of each record after the warm-up seen in the output."""
        pairs = zip(self._produced[self._warmup :], self._visible[self._warmup :], strict=True)
        return [seen - sent for sent, seen in pairs if not math.isnan(seen - sent)]

    def _guard(self, body: Callable[[], None]) -> None:
        try:
            body()
        except BaseException as exc:
            self.error = self.error or exc
            self._stop.set()
            self._on_failure()

    def _produce(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self._bootstrap, **PRODUCER_CONFIG, "linger.ms": 5}
        )
        values = [
            (record["key"].encode(), encode_record(record))
            for record in (make_record(i, self._num_keys) for i in range(self._records))
        ]
        for record_id in range(self._warmup):
            self._send(producer, record_id, *values[record_id])
        producer.flush(30.0)
        deadline = time.monotonic() + self._timeout_s
        while not self._warm.wait(0.5):
            if self._stop.is_set():
                return
            if time.monotonic() > deadline:
                raise PipelineError(f"latency: no warm-up output in {self._output}")
        start = time.monotonic()
        for record_id in range(self._warmup, self._records):
            if self._stop.is_set():
                return
            ahead = start + (record_id - self._warmup) / self._rate - time.monotonic()
            if ahead > 0.001:
                time.sleep(ahead)  # pacing to the rate, not waiting for a condition
            self._send(producer, record_id, *values[record_id])
        if producer.flush(30.0):
            raise BrokerError(f"latency: records to {self._input} undelivered")

    def _send(self, producer: Producer, record_id: int, key: bytes, value: bytes) -> None:
        while True:
            try:
                self._produced[record_id] = time.monotonic()
                producer.produce(self._input, value, key)
                producer.poll(0)
                return
            except BufferError:
                producer.poll(0.01)

    def _consume(self) -> None:
        warm_target = expected_output_count("stateless", self._warmup)
        target = expected_output_count("stateless", self._records)
        consumer = read_committed_consumer(self._bootstrap)
        try:
            meta = consumer.list_topics(self._output, timeout=30.0).topics[self._output]
            consumer.assign(
                [TopicPartition(self._output, p, OFFSET_BEGINNING) for p in meta.partitions]
            )
            seen = 0
            while seen < target and not self._stop.is_set():
                batch = consumer.consume(num_messages=1000, timeout=0.05)
                now = time.monotonic()
                for msg in batch:
                    value = msg.value()
                    if msg.error() is not None or value is None:
                        raise BrokerError(f"latency: reading {self._output}: {msg.error()}")
                    record_id = decode_record(value)["id"]
                    if math.isnan(self._visible[record_id]):
                        self._visible[record_id] = now
                        seen += 1
                if seen >= warm_target:
                    self._warm.set()
        finally:
            consumer.close()


# -- running the systems -------------------------------------------------------------


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


Events = Callable[[int], None]


def _run_in_worker(
    system: System,
    tasks: list[Task],
    settings: CompareSettings,
    on_start: Events,
    on_done: Callable[[int, TaskResult], TaskResult],
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
    on_start: Events,
    on_done: Callable[[int, TaskResult], TaskResult],
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
    executor: Executor,
    tasks: list[Task],
    on_start: Events,
    on_done: Callable[[int, TaskResult], TaskResult],
) -> list[TaskResult]:
    results = []
    try:
        for index, task in enumerate(tasks):
            on_start(index)
            results.append(on_done(index, _execute(executor, task)))
    finally:
        executor.close()
    return results


# -- the comparison ------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One (system, workload, commit interval) line of the table."""

    system: System
    workload: Workload
    interval_s: float
    result: TaskResult
    latency: TaskResult | None = None
    recovery: TaskResult | None = None


@dataclass(frozen=True)
class Comparison:
    """Everything one comparison measured, in table order."""

    bootstrap: str
    settings: CompareSettings
    rows: tuple[Row, ...]
    failures: tuple[str, ...] = field(default=())
    load_at_start: float = 0.0
    """1-minute load average when the comparison started (the machine may be shared)."""

    @property
    def ok(self) -> bool:
        return not self.failures


def _plan(
    system: System, settings: CompareSettings, input_topic: str, make_topic: TopicMaker
) -> list[Task]:
    """The tasks of `system`, their output (and latency input) topics created."""

    def job(
        workload: Workload, interval_s: float, prefix: str = "out", **changes: Any
    ) -> BaselineJob:
        base = BaselineJob(
            bootstrap="",
            input_topic=input_topic,
            output_topic=make_topic(f"bench-{prefix}-{system}-{workload}", settings.partitions),
            partitions=settings.partitions,
            records=settings.records,
            workload=workload,
            commit_interval_s=interval_s,
            num_keys=settings.num_keys,
            progress=settings.progress,
        )
        return replace(base, **changes)

    laminar = system == "laminar"
    intervals = settings.intervals_s if laminar else (settings.commit_interval_s,)
    reference = intervals[0]
    tasks = [
        Task("throughput", job(workload, interval), _pipeline(laminar, workload, interval))
        for workload in WORKLOADS
        for interval in intervals
    ]
    if settings.latency:
        lat_in = make_topic(f"bench-lat-in-{system}", settings.partitions)
        latency = job(
            "stateless", reference, "lat-out", input_topic=lat_in, records=settings.latency_records
        )
        tasks.append(Task("latency", latency, _pipeline(laminar, "stateless", reference, "lat-")))
    if laminar and settings.recovery:
        kill = job("stateless", reference)
        tasks.append(Task("recovery", kill, _pipeline(laminar, "stateless", reference, "kill-")))
    return tasks


def _pipeline(laminar: bool, workload: Workload, interval_s: float, tag: str = "") -> str:
    if not laminar:
        return ""
    from benchmarks.laminar import pipeline_name

    return pipeline_name(workload, interval_s, tag)


def _run_system(
    system: System,
    tasks: list[Task],
    settings: CompareSettings,
    bootstrap: str,
    spark_context: Any,
) -> list[TaskResult]:
    """Run one system's tasks (in a worker, or here for laminar given a Spark context)."""
    probes: dict[int, LatencyProbe] = {}
    kill_switch: list[Callable[[], None]] = []

    def on_start(index: int) -> None:
        task = tasks[index]
        interval = f"{task.job.commit_interval_s:g} s"
        _say(f"== {_LABELS[system]}: {task.kind}, {task.job.workload}, commit {interval} ==")
        if task.kind == "latency":
            probe = LatencyProbe(
                bootstrap,
                task.job.input_topic,
                task.job.output_topic,
                warmup=settings.latency_warmup,
                records=task.job.records,
                rate=settings.latency_rate,
                num_keys=settings.num_keys,
                progress=settings.progress,
                on_failure=lambda: [kill() for kill in kill_switch],
            )
            probes[index] = probe
            probe.start()

    def on_done(index: int, result: TaskResult) -> TaskResult:
        probe = probes.pop(index, None)
        if probe is None:
            return result
        probe.finish()
        if result.error is not None:
            return result
        if probe.error is not None:
            return replace(result, error=f"latency probe: {_one_line(probe.error)}")
        samples = probe.latencies_s()
        p50, p99 = quantile(samples, 0.5), quantile(samples, 0.99)
        return replace(
            result,
            latency_p50_ms=None if p50 is None else p50 * 1000,
            latency_p99_ms=None if p99 is None else p99 * 1000,
            latency_samples=len(samples),
        )

    tasks = [replace(task, job=replace(task.job, bootstrap=bootstrap)) for task in tasks]
    if system == "laminar" and spark_context is not None:
        executor = _executor(system, settings, spark_context)
        return _run_in_process(executor, tasks, on_start, on_done)
    return _run_in_worker(system, tasks, settings, on_start, on_done, kill_switch)


def run_comparison(
    bootstrap: str,
    settings: CompareSettings,
    *,
    make_topic: TopicMaker | None = None,
    spark_context: Any = None,
) -> Comparison:
    """Preload the input once, run every chosen system on it, collect the rows.

    Every system runs in a worker process, except laminar-kafka when
    `spark_context` is given: it then runs here, in that context (for tests,
    whose session already holds one).
    """
    make = make_topic or new_topic_maker(bootstrap)
    load = os.getloadavg()[0]
    _say(
        f"== input: {settings.records:,} records over {settings.partitions} partitions"
        f" on {bootstrap} =="
    )
    input_topic = preload(
        bootstrap,
        settings.records,
        settings.partitions,
        make_topic=make,
        num_keys=settings.num_keys,
        progress=settings.progress,
    )
    rows: list[Row] = []
    failures: list[str] = []
    for system in (s for s in _RUN_ORDER if s in settings.systems):
        tasks = _plan(system, settings, input_topic, make)
        results = _run_system(system, tasks, settings, bootstrap, spark_context)
        by_kind = {t.kind: r for t, r in zip(tasks, results, strict=True) if t.kind != "throughput"}
        for task, result in zip(tasks, results, strict=True):
            if result.error is not None:
                failures.append(
                    f"{_LABELS[system]} {task.kind} {task.job.workload}: {result.error}"
                )
            if task.kind != "throughput":
                continue
            first = task.job.commit_interval_s == tasks[0].job.commit_interval_s
            stateless = task.job.workload == "stateless" and first
            rows.append(
                Row(
                    system,
                    task.job.workload,
                    task.job.commit_interval_s,
                    result,
                    latency=by_kind.get("latency") if stateless else None,
                    recovery=by_kind.get("recovery") if stateless else None,
                )
            )
    order = {system: i for i, system in enumerate(SYSTEMS)}
    rows.sort(key=lambda r: (WORKLOADS.index(r.workload), order[r.system], r.interval_s))
    return Comparison(bootstrap, settings, tuple(rows), tuple(failures), load)


# -- the report ----------------------------------------------------------------------


def _reference(comparison: Comparison, workload: Workload) -> Row | None:
    interval = comparison.settings.intervals_s[0]
    for row in comparison.rows:
        if row.system == "laminar" and row.workload == workload and row.interval_s == interval:
            return row
    return None


def _ratio(comparison: Comparison, system: System, workload: Workload) -> float | None:
    """laminar (reference interval) records/s over `system`'s, for `workload`."""
    reference = _reference(comparison, workload)
    ours = None if reference is None else reference.result.records_per_s
    for row in comparison.rows:
        if row.system == system and row.workload == workload:
            theirs = row.result.records_per_s
            if ours is not None and theirs:
                return ours / theirs
    return None


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _cells(comparison: Comparison, row: Row) -> list[str]:
    result = row.result
    reference = _reference(comparison, row.workload)
    ours = None if reference is None else reference.result.records_per_s
    rate = result.records_per_s
    latency, recovery = row.latency, row.recovery
    if latency is not None and latency.error is not None:
        latency = None
    if recovery is not None and recovery.error is not None:
        recovery = None
    return [
        _LABELS[row.system],
        row.workload,
        f"{row.interval_s:g} s",
        "FAILED" if result.error is not None else f"{result.seconds:.2f}",
        _num(rate),
        "-" if ours is None or not rate else f"{ours / rate:.2f}",
        _num(result.checkpoint_p50_ms),
        _num(result.checkpoint_p99_ms),
        _num(result.alignment_p50_ms),
        _num(result.alignment_p99_ms),
        _num(None if latency is None else latency.latency_p50_ms),
        _num(None if latency is None else latency.latency_p99_ms),
        _num(result.peak_rss_mib),
        _num(None if recovery is None else recovery.recovery_s, 1),
    ]


_HEADER: Final = [
    "system",
    "workload",
    "commit",
    "seconds",
    "records/s",
    "laminar/x",
    "ckpt p50 ms",
    "ckpt p99 ms",
    "align p50 ms",
    "align p99 ms",
    "e2e p50 ms",
    "e2e p99 ms",
    "peak MiB",
    "recovery s",
]


def _table(lines: list[list[str]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for line in lines:
        first = [cell.ljust(width) for cell, width in zip(line[:3], widths[:3], strict=True)]
        rest = [cell.rjust(width) for cell, width in zip(line[3:], widths[3:], strict=True)]
        out.append("  ".join(first + rest))
    out.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(out)


def _notes(comparison: Comparison) -> list[str]:
    s = comparison.settings
    ref = f"{s.intervals_s[0]:g} s"
    notes = [
        "records/s: input records over the time from the system running (laminar: all worker"
        " tasks running; ceiling: first transaction; quix: app.run(); spark: query start())"
        " to the last expected output record visible to a read_committed consumer. Process,"
        " JVM, Spark context and worker start-up are excluded for every system alike. Each"
        " output was then read back and checked record by record (exact, no duplicate).",
        f"laminar/x: laminar records/s ({ref} checkpoints, same workload) over the row's.",
        "commit: laminar's checkpoint interval; the ceiling and Quix commit every"
        f" {s.commit_interval_s:g} s, Spark triggers a micro-batch every {s.commit_interval_s:g} s."
        " Output becomes visible at commits, so a 5 s interval adds up to 5 s at the end.",
        "ckpt: laminar checkpoint duration, barrier injection to Commit decided (RunStats."
        "checkpoint_s); align: per task, time from the checkpoint's announcement (or first"
        " barrier) to its snapshot (RunStats.alignment_ms). Behind a backlog a barrier comes"
        f" late: after the alignment timeout ({_alignment_timeout_s():g} s) a task snapshots"
        " unaligned.",
        "peak MiB: largest sum of RSS over the system's process tree (laminar and spark:"
        " Python driver, Spark JVM, Python workers; ceiling, quix: the one process), sampled"
        f" every {_RSS_INTERVAL_S:g} s over the timed span (pages shared by processes count in"
        " each).",
        "The ceiling and Quix run in one Python process (one core at most); laminar runs"
        f" {s.parallelism} worker tasks (Spark local[{s.parallelism}]) and Spark runs on"
        f" {s.spark_master}: they can use more than one core.",
        "Spark's Kafka sink is at-least-once: its records are visible before their micro-batch"
        " commits, which favours it in records/s and e2e.",
    ]
    if s.latency:
        notes.append(
            f"e2e: workload (a) at {ref} (baselines {s.commit_interval_s:g} s), a separate phase"
            f" on a fresh topic: {s.latency_warmup:,} warm-up records, then {s.latency_rate:,}"
            f" records/s for {s.latency_seconds:g} s; time from produce() to the record being"
            " visible to a read_committed consumer, over the records after the warm-up."
        )
    else:
        notes.append("e2e: not measured (--skip-latency).")
    kill = next((row.recovery for row in comparison.rows if row.recovery is not None), None)
    if kill is not None and kill.error is None:
        output = (
            f", output advancing again {kill.kill_to_output_s:.1f} s after the kill"
            if kill.kill_to_output_s is not None
            else ""
        )
        notes.append(
            f"recovery s: laminar, workload (a), {ref} checkpoints, one worker task killed with"
            f" SIGKILL a third of the way: {kill.recovery_s:.1f} s from the job loss to all tasks"
            f" running again (RunStats.recovery_s); {kill.kill_to_running_s:.1f} s from the kill"
            f"{output}; the output was then checked exact."
        )
    elif "laminar" in s.systems and s.recovery:
        notes.append("recovery s: the kill -9 run failed, see below.")
    notes += [f"FAILED {failure}" for failure in comparison.failures]
    return notes


def _alignment_timeout_s() -> float:
    from laminar_kafka.runtime.config import RuntimeConfig

    return RuntimeConfig(bootstrap="-", checkpoint_dir="-").alignment_timeout_s


def summary_line(comparison: Comparison) -> str:
    """The last line: workload (a) ratios at the reference interval and its checkpoint p99."""
    reference = _reference(comparison, "stateless")

    def ratio(system: System) -> str:
        value = _ratio(comparison, system, "stateless")
        return "-" if value is None else f"{value:.2f}"

    p99 = None if reference is None else reference.result.checkpoint_p99_ms
    return (
        f"laminar/quix={ratio('quix')} laminar/ceiling={ratio('ceiling')}"
        f" laminar/spark={ratio('spark')} checkpoint_p99_ms={_num(p99).replace(',', '')}"
    )


def format_report(comparison: Comparison) -> str:
    """Heading, table, numbered notes, and the summary line last."""
    s = comparison.settings
    heading = (
        f"compare: {s.records:,} records of 100 B Avro, {s.partitions} partitions, broker"
        f" {comparison.bootstrap}; laminar parallelism {s.parallelism}, spark {s.spark_master};"
        f" {os.cpu_count()} cores, load average {comparison.load_at_start:.1f} at the start"
    )
    table = _table([_HEADER, *(_cells(comparison, row) for row in comparison.rows)])
    notes = [f"[{i}] {note}" for i, note in enumerate(_notes(comparison), start=1)]
    return "\n".join([heading, table, "", *notes, summary_line(comparison)])


# -- command line --------------------------------------------------------------------


def _systems(text: str) -> tuple[System, ...]:
    chosen = tuple(name.strip() for name in text.split(",") if name.strip())
    for name in chosen:
        if name not in SYSTEMS:
            raise argparse.ArgumentTypeError(f"unknown system {name!r}; choose from {SYSTEMS}")
    return chosen  # type: ignore[return-value]


def _intervals(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of seconds: {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.compare`: run the comparison and print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compare",
        description="laminar-kafka vs the transactional-loop ceiling, Quix Streams and Spark"
        " Structured Streaming, on one broker and one input.",
    )
    parser.add_argument("--records", type=int, default=2_000_000, help="input records")
    parser.add_argument("--partitions", type=int, default=8, help="partitions of every topic")
    parser.add_argument(
        "--bootstrap",
        default=None,
        help="Kafka bootstrap servers (default: $LAMINAR_KAFKA_BOOTSTRAP, else the local broker)",
    )
    parser.add_argument(
        "--systems", type=_systems, default=SYSTEMS, help="comma-separated, default: all"
    )
    parser.add_argument(
        "--intervals", type=_intervals, default=(1.0, 5.0), help="laminar checkpoint seconds"
    )
    parser.add_argument(
        "--parallelism", type=int, default=2, help="laminar worker tasks (Spark local[N])"
    )
    parser.add_argument("--spark-master", default="local[2]", help="master of the Spark baseline")
    parser.add_argument("--skip-latency", action="store_true", help="no end-to-end latency phase")
    parser.add_argument("--skip-recovery", action="store_true", help="no kill -9 run")
    parser.add_argument("--latency-rate", type=int, default=5_000, help="records/s, latency phase")
    parser.add_argument("--latency-seconds", type=float, default=10.0, help="latency phase length")
    parser.add_argument("--num-keys", type=int, default=DEFAULT_NUM_KEYS, help="distinct keys")
    parser.add_argument("--keep-topics", action="store_true", help="do not delete the topics")
    parser.add_argument("--quiet", action="store_true", help="fewer progress lines on stderr")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker_main(args.worker)
    settings = CompareSettings(
        records=args.records,
        partitions=args.partitions,
        systems=args.systems,
        intervals_s=args.intervals,
        parallelism=args.parallelism,
        spark_master=args.spark_master,
        latency=not args.skip_latency,
        latency_rate=args.latency_rate,
        latency_seconds=args.latency_seconds,
        recovery=not args.skip_recovery,
        num_keys=args.num_keys,
        progress=not args.quiet,
    )
    with benchmark_broker(args.bootstrap) as bootstrap:
        created: list[str] = []
        make = new_topic_maker(bootstrap)

        def make_and_track(prefix: str, partitions: int) -> str:
            created.append(make(prefix, partitions))
            return created[-1]

        try:
            comparison = run_comparison(bootstrap, settings, make_topic=make_and_track)
        finally:
            if not args.keep_topics:
                delete_topics(bootstrap, created)
    print(format_report(comparison))
    return 0 if comparison.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
