"""laminar-kafka against the ceiling, Quix Streams and Spark Structured Streaming, in one run.

    python -m benchmarks.compare [--records 2000000] [--partitions 8] [--bootstrap HOST:PORT]
                                 [--systems laminar,limit,ceiling,quix,spark]
                                 [--workloads stateless,keyed,rekey,windowed,
                                              join-table,join-interval]
                                 [--skip-latency]
                                 [--parallelism 2] [--repeat 1] [--json PATH]

One pre-produced input topic (and one with event times for the windowed
workload, and the orders, customers table and payments of the joins:
`benchmarks.inputs`); the workloads of `benchmarks.workloads` on each
system that implements them (the others get an "n/a" row), each system in a
worker process of its own (`benchmarks.workers`). The
baselines run before laminar-kafka: its coordinator writes barriers into the
input topic, which they would not know to skip. Then, per system, a latency
phase (`benchmarks.latency`) per workload that has one and, for laminar-kafka,
a kill -9 run. The table (`benchmarks.report`; benchmarks/README.md
"Comparison"), the machine and every repeat's figures (`benchmarks.spread`,
README "Reproducing a figure") go to stdout, ending

    P=N laminar/quix=Q laminar/ceiling=C laminar/spark=S laminar/limit=L checkpoint_p99_ms=P
    rekey_laminar/quix=R rekey_checkpoint_p99_ms=E rekey_stage_p99_ms=S0/S1
    windowed_laminar/quix=W windowed_laminar/spark=X window_close_p50_ms=A window_close_p99_ms=B
    join_laminar/quix=J join_interval_laminar/quix=I

    load_start=.. load_end=.. steal_pct=.. probe_us=.. laminar_spread_pct=..
    ceiling_spread_pct=..

(one line) for workload (a), the rekey, windowed and join workloads with 1 s
checkpoints; progress goes to stderr. `python -m benchmarks.repeat_invocations`
runs it twice in separate processes and compares the two.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from benchmarks.broker import benchmark_broker
from benchmarks.comparison import CompareSettings, Comparison, Row
from benchmarks.comparison_json import write_json
from benchmarks.inputs import preload_inputs
from benchmarks.latency import LatencyProbe, with_latency
from benchmarks.machine import MachineRun
from benchmarks.memory import tree_rss_bytes
from benchmarks.planning import not_applicable_rows, plan_tasks
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
from benchmarks.workloads import WORKLOADS

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

_RUN_ORDER: Final[tuple[System, ...]] = ("limit", "ceiling", "quix", "spark", "laminar")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
                workload=task.job.workload,
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
    machine, cpu = MachineRun.begin()
    inputs = preload_inputs(
        bootstrap,
        settings.workloads,
        settings.records,
        settings.partitions,
        make,
        num_keys=settings.num_keys,
        progress=settings.progress,
    )
    rows: list[Row] = []
    failures: list[str] = []
    for system in (s for s in _RUN_ORDER if s in settings.systems):
        rows += not_applicable_rows(system, settings)
        tasks = plan_tasks(system, settings, inputs, make)
        if not tasks:
            continue
        results = _run_system(system, tasks, settings, bootstrap, spark_context)
        rows += table_rows(system, tasks, results)
        failures += [
            f"{LABELS[system]} {task.kind} {task.job.workload}: {result.error}"
            for task, result in zip(tasks, results, strict=True)
            if result.error is not None
        ]
    rows.sort(key=table_order)
    done = machine.end(cpu)
    return Comparison(bootstrap, settings, tuple(rows), tuple(failures), done.load_start, done)


def _choices(kind: str, names: tuple[str, ...]) -> Callable[[str], tuple[Any, ...]]:
    """An argparse type: a comma-separated selection of `names`."""

    def parse(text: str) -> tuple[Any, ...]:
        chosen = tuple(name.strip() for name in text.split(",") if name.strip())
        for name in chosen:
            if name not in names:
                raise argparse.ArgumentTypeError(f"unknown {kind} {name!r}; choose from {names}")
        return chosen

    return parse


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
        "--systems",
        type=_choices("system", SYSTEMS),
        default=SYSTEMS,
        help="comma-separated, default: all",
    )
    parser.add_argument(
        "--workloads",
        type=_choices("workload", WORKLOADS),
        default=WORKLOADS,
        help="comma-separated, default: all (latency: stateless, windowed; kill -9: stateless)",
    )
    parser.add_argument(
        "--intervals", type=_intervals, default=(1.0, 5.0), help="laminar checkpoint seconds"
    )
    parser.add_argument(
        "--parallelism",
        type=int,
        default=2,
        help="P: laminar tasks per stage, ceiling/limit/quix processes, Spark local[P]",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="timed runs each, medians reported (full run: 3)"
    )
    parser.add_argument("--spark-master", default="", help="Spark baseline master (local[P])")
    parser.add_argument("--skip-latency", action="store_true", help="no end-to-end latency phase")
    parser.add_argument("--skip-recovery", action="store_true", help="no kill -9 run")
    parser.add_argument("--latency-rate", type=int, default=5_000, help="records/s, latency phase")
    parser.add_argument("--latency-seconds", type=float, default=10.0, help="latency phase length")
    parser.add_argument("--num-keys", type=int, default=DEFAULT_NUM_KEYS, help="distinct keys")
    parser.add_argument("--keep-topics", action="store_true", help="do not delete the topics")
    parser.add_argument("--quiet", action="store_true", help="fewer progress lines on stderr")
    parser.add_argument(
        "--json", type=Path, help="also write the results and the machine there as JSON"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args.worker)
    settings = CompareSettings(
        records=args.records,
        partitions=args.partitions,
        systems=args.systems,
        workloads=args.workloads,
        intervals_s=args.intervals,
        parallelism=args.parallelism,
        spark_master=args.spark_master,
        repeat=args.repeat,
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
    if args.json is not None:
        write_json(comparison, args.json)
    return 0 if comparison.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
