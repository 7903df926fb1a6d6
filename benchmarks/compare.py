"""laminar-kafka against the ceiling, Quix Streams and Spark Structured Streaming, in one run.

    python -m benchmarks.compare [--records 2000000] [--partitions 8] [--bootstrap HOST:PORT]
                                 [--systems laminar,ceiling,quix,spark] [--skip-latency]

One pre-produced input topic; both workloads of `benchmarks.workloads` on each
system, each system in a worker process of its own (`benchmarks.workers`). The
baselines run before laminar-kafka: its coordinator writes barriers into the
input topic, which they would not know to skip. Then, per system, a latency
phase (`benchmarks.latency`) and, for laminar-kafka, a kill -9 run. The table
(`benchmarks.report`; benchmarks/README.md "Comparison") goes to stdout, ending

    laminar/quix=Q laminar/ceiling=C laminar/spark=S checkpoint_p99_ms=P

for workload (a) with 1 s checkpoints; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Final

from benchmarks.broker import benchmark_broker
from benchmarks.comparison import CompareSettings, Comparison, Row
from benchmarks.harness import BaselineJob
from benchmarks.latency import LatencyProbe, with_latency
from benchmarks.memory import tree_rss_bytes
from benchmarks.preload import preload
from benchmarks.records import DEFAULT_NUM_KEYS
from benchmarks.report import LABELS, format_report, summary_line, table_order, table_rows
from benchmarks.topics import TopicMaker, delete_topics, new_topic_maker
from benchmarks.workers import (
    SYSTEMS,
    System,
    Task,
    TaskResult,
    run_tasks,
    worker_main,
)
from benchmarks.workloads import WORKLOADS, Workload

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

_RUN_ORDER: Final[tuple[System, ...]] = ("ceiling", "quix", "spark", "laminar")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
    """Run one system's tasks, with a latency probe next to its latency task."""
    probes: dict[int, LatencyProbe] = {}
    kill_switch: list[Callable[[], None]] = []

    def on_start(index: int) -> None:
        task = tasks[index]
        interval = f"{task.job.commit_interval_s:g} s"
        _say(f"== {LABELS[system]}: {task.kind}, {task.job.workload}, commit {interval} ==")
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
        return result if probe is None else with_latency(result, probe)

    tasks = [replace(task, job=replace(task.job, bootstrap=bootstrap)) for task in tasks]
    return run_tasks(
        system,
        tasks,
        settings.worker,
        on_start=on_start,
        on_done=on_done,
        kill_switch=kill_switch,
        spark_context=spark_context,
    )


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
        rows += table_rows(system, tasks, results)
        failures += [
            f"{LABELS[system]} {task.kind} {task.job.workload}: {result.error}"
            for task, result in zip(tasks, results, strict=True)
            if result.error is not None
        ]
    rows.sort(key=table_order)
    return Comparison(bootstrap, settings, tuple(rows), tuple(failures), load)


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
        return worker_main(args.worker)
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
