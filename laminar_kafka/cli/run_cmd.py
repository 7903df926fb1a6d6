"""`laminar-kafka run PIPELINE`: run a pipeline until Ctrl-C or SIGTERM, then drain."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.cli.options import (
    add_metrics_options,
    add_runtime_options,
    metrics_address,
    runtime_config,
)
from laminar_kafka.cli.progress import ProgressPrinter
from laminar_kafka.metrics import LagPoller, MetricsServer, PipelineMetrics
from laminar_kafka.plan.describe import describe_plan
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.events import Listener, RuntimeEvent, Stopped
from laminar_kafka.runtime.preflight import check_brokers_answer
from laminar_kafka.runtime.runner import PipelineRunner

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a pipeline with exactly-once output",
        description="Run the pipeline defined in PIPELINE (a .py file or module:attr) on "
        "Spark. Ctrl-C or SIGTERM takes a final checkpoint and stops; a second one stops "
        "at once (the next run resumes from the last checkpoint).",
    )
    parser.add_argument("pipeline", help="pipelines/<file>.py or package.module:attr")
    add_runtime_options(parser)
    parser.add_argument(
        "--events-file",
        metavar="PATH",
        help="also write every runtime event to PATH as a JSON line (for scripts)",
    )
    add_metrics_options(parser)
    parser.set_defaults(handler=run)


def install_stop_handlers(runner: PipelineRunner) -> None:
    """First SIGINT/SIGTERM drains gracefully; a second one exits now."""
    asked = {"n": 0}

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        asked["n"] += 1
        if asked["n"] == 1:
            print("stopping: taking a final checkpoint (again to stop at once)", file=sys.stderr)
            runner.stop()
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def chain(*listeners: Listener) -> Listener:
    """One listener that hands each event to every one of `listeners`, in order."""

    def each(event: RuntimeEvent) -> None:
        for listener in listeners:
            listener(event)

    return each


@contextlib.contextmanager
def observed(
    pipeline: Pipeline, config: RuntimeConfig, args: argparse.Namespace
) -> Iterator[tuple[Listener, PipelineMetrics | None]]:
    """The run's listener: the progress printer, and with --metrics-port the metrics.

    The endpoint starts before the pipeline does: a port already taken fails
    the command at once. The lag poller starts once the first worker generation
    runs (the topics are checked by then), unless --lag-interval 0; everything
    stops when the run ends.
    """
    address = metrics_address(args)
    metrics = PipelineMetrics(pipeline.name) if address else None
    with contextlib.ExitStack() as stack:
        if metrics is not None and address is not None:
            server = MetricsServer(metrics.registry, port=address[1], host=address[0])
            stack.callback(server.close)
            print(f"serving metrics at {server.url}", file=sys.stderr, flush=True)
        check_brokers_answer(config.kafka)  # local settings first, then before the lag poller
        poller = None
        if args.lag_interval > 0:
            poller = LagPoller.for_pipeline(
                pipeline,
                config.kafka,
                interval_s=args.lag_interval,
                on_update=metrics.set_lag if metrics is not None else None,
            )
            stack.callback(poller.close, 2.0)
        lag = (lambda: poller.total) if poller is not None else None
        progress = ProgressPrinter(events_file=args.events_file, lag=lag)
        stack.callback(progress.close)
        listeners: list[Listener] = [progress]
        if metrics is not None:
            listeners.append(metrics)
        if poller is not None:
            listeners.append(poller.on_event)
        yield chain(*listeners), metrics


def run(args: argparse.Namespace) -> int:
    pipeline = load_pipeline(args.pipeline)
    config = runtime_config(args)
    print(f"running {pipeline.name}: {config.describe()}", file=sys.stderr, flush=True)
    for line in describe_plan(pipeline):
        print(f"  {line}", file=sys.stderr, flush=True)
    with observed(pipeline, config, args) as (listener, metrics):
        runner = PipelineRunner(pipeline, config, listener=listener)
        if metrics is not None:
            metrics.follow(runner.stats)
        install_stop_handlers(runner)
        stats = runner.run()
        listener(Stopped(stats.committed, stats.aborted, stats.restarts))
    return 0
