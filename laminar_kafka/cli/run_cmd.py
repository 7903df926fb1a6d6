"""`laminar-kafka run PIPELINE`: run a pipeline until Ctrl-C or SIGTERM, then drain."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
from collections.abc import Iterator, Mapping
from types import FrameType
from typing import Any

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.cli.exit_codes import ExitCode, starting
from laminar_kafka.cli.logging_setup import logging_choice
from laminar_kafka.cli.options import (
    add_metrics_options,
    add_runtime_options,
    add_schemas_option,
    add_ui_options,
    metrics_address,
    runtime_config,
    ui_address,
    use_schemas,
)
from laminar_kafka.cli.print_config import config_lines
from laminar_kafka.cli.progress import ProgressPrinter
from laminar_kafka.cli.settings_sources import RUN_SETTINGS, document_settings
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.metrics import LagPoller, PipelineMetrics, metrics_routes
from laminar_kafka.metrics.lag import LagSink
from laminar_kafka.plan.describe import describe_plan
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.plan.topology import describe_topology
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.events import Listener, RuntimeEvent, Stopped
from laminar_kafka.runtime.driver.preflight import check_brokers_answer
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.runtime.driver.spark_session import master_in_use
from laminar_kafka.serving import Route, RouteServer
from laminar_kafka.status import DeadLetterReader, StatusCollector, plan_view, status_routes

__all__ = ["register"]

log = logging.getLogger(__name__)
"""The run's own lines (what runs, where it serves): plain on stderr, or JSON lines."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a pipeline with exactly-once output",
        description="Run the pipeline defined in PIPELINE (a .py file or module:attr) on "
        "Spark. Ctrl-C or SIGTERM takes a final checkpoint and stops; a second one stops "
        "at once (the next run resumes from the last checkpoint). With --until end the run "
        "is bounded: it stops by itself, exit code 0, once the sources are read to the end "
        "they had when it started.",
    )
    parser.add_argument("pipeline", help="pipelines/<file>.py or package.module:attr")
    add_runtime_options(parser)
    add_schemas_option(parser)
    parser.add_argument(
        "--until",
        choices=["end"],
        help="'end': a bounded run (a backfill). Read each source partition up to its end "
        "offset at start (its last stable offset), take a final checkpoint and exit 0. "
        "Records written since are left for the next run; open windows stay open in the "
        "checkpoint. A bounded run started again after a crash keeps the ends of its "
        "first start",
    )
    parser.add_argument(
        "--events-file",
        metavar="PATH",
        help="also write every runtime event to PATH as a JSON line (for scripts)",
    )
    add_metrics_options(parser)
    add_ui_options(parser)
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="read settings from this TOML file, keys named as the options without their "
        "dashes (checkpoint-interval = 5); the command line and LAMINAR_* variables win "
        "[env LAMINAR_CONFIG]",
    )
    instead = parser.add_mutually_exclusive_group()
    instead.add_argument(
        "--print-config",
        action="store_true",
        help="print the settings in effect and where each came from (secrets masked), "
        "then exit without starting anything",
    )
    instead.add_argument(
        "--plan",
        action="store_true",
        help="print the stages, their steps, the internal topics with their partitions, "
        "the tasks per stage and the sinks, then exit without starting anything",
    )
    document_settings(parser, RUN_SETTINGS)
    parser.set_defaults(handler=run, settings=RUN_SETTINGS)


def install_stop_handlers(runner: PipelineRunner) -> None:
    """First SIGINT/SIGTERM drains gracefully; a second one exits now."""
    asked = {"n": 0}

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        asked["n"] += 1
        if asked["n"] == 1:
            log.info("stopping: taking a final checkpoint (again to stop at once)")
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


Wanted = tuple[tuple[str, int], str, str, dict[str, Route]]
"""(host, port), what is served, the path to print, and the routes."""


def serve(stack: contextlib.ExitStack, wanted: list[Wanted]) -> None:
    """Start one server per address, closed with `stack`; print what each serves.

    Two sets of routes asked at the same host and port share one server; port
    0 (any free port) is never shared.
    """
    merged: dict[object, tuple[str, int, dict[str, Route], list[tuple[str, str]]]] = {}
    for (host, port), what, path, routes in wanted:
        key = (host, port) if port else len(merged)
        entry = merged.setdefault(key, (host, port, {}, []))
        entry[2].update(routes)
        entry[3].append((what, path))
    for host, port, routes, shown in merged.values():
        server = RouteServer(routes, port, host, what=" and ".join(w for w, _ in shown))
        stack.callback(server.close)
        for what, path in shown:
            log.info("serving %s at %s", what, server.url(path))


@contextlib.contextmanager
def observed(
    pipeline: Pipeline, config: RuntimeConfig, args: argparse.Namespace
) -> Iterator[tuple[Listener, PipelineMetrics | None]]:
    """The run's listener: the progress printer, with --metrics-port the metrics,
    and with --ui-port the status page.

    The endpoints start before the pipeline does: a port already taken fails
    the command at once. The lag poller starts once the first worker generation
    runs (the topics are checked by then), unless --lag-interval 0; everything
    stops when the run ends.
    """
    address, ui = metrics_address(args), ui_address(args)
    metrics = PipelineMetrics(pipeline.name) if address else None
    dead_letters = config.dead_letters_to(pipeline.name)
    status = StatusCollector(plan_view(pipeline, config.parallelism, dead_letters)) if ui else None
    with contextlib.ExitStack() as stack:
        wanted: list[Wanted] = []
        if metrics is not None and address is not None:
            wanted.append((address, "metrics", "/metrics", metrics_routes(metrics.registry)))
        if status is not None and ui is not None:
            reader = DeadLetterReader(config.kafka, dead_letters)
            wanted.append((ui, "the status page", "/", status_routes(status, reader)))
        serve(stack, wanted)
        check_brokers_answer(config.kafka)  # local settings first, then before the lag poller
        poller = None
        if args.lag_interval > 0:
            poller = LagPoller.for_pipeline(
                pipeline,
                config.kafka,
                interval_s=args.lag_interval,
                on_update=lag_sinks(metrics, status),
            )
            stack.callback(poller.close, 2.0)
        lag = (lambda: poller.total) if poller is not None else None
        json_lines = logging_choice(args, os.environ)[1] == "json"
        progress = ProgressPrinter(events_file=args.events_file, lag=lag, json_lines=json_lines)
        stack.callback(progress.close)
        listeners: list[Listener] = [progress]
        if metrics is not None:
            listeners.append(metrics)
        if status is not None:
            listeners.append(status)
        if poller is not None:
            listeners.append(poller.on_event)
        yield chain(*listeners), metrics


def lag_sinks(metrics: PipelineMetrics | None, status: StatusCollector | None) -> LagSink | None:
    """One lag sink feeding the metrics and the status page, those of the two that run."""
    sinks = [s.set_lag for s in (metrics, status) if s is not None]
    if not sinks:
        return None

    def each(lags: Mapping[PartitionKey, int], at: float) -> None:
        for sink in sinks:
            sink(lags, at)

    return each


def run(args: argparse.Namespace) -> int:
    use_schemas(args.schemas)  # before the pipeline file's formats look their schemas up
    if args.print_config:
        print("\n".join(config_lines(args, args.sources)), flush=True)
        runtime_config(args)  # after the listing: a bad setting is an error (exit 2)
        return ExitCode.OK
    pipeline = load_pipeline(args.pipeline)
    if args.plan:
        print("\n".join(describe_topology(pipeline, args.parallelism)), flush=True)
        return ExitCode.OK
    config = runtime_config(args)
    metrics_address(args), ui_address(args)  # their usage errors before anything starts
    tasks = len(plan_stages(pipeline).stages) * config.parallelism  # before any capping
    master = master_in_use(config.master, tasks)
    log.info("running %s: %s", pipeline.name, config.describe(master))
    for line in describe_plan(pipeline):
        log.info("  %s", line)
    with starting(), observed(pipeline, config, args) as (listener, metrics):
        runner = PipelineRunner(pipeline, config, listener=listener)
        if metrics is not None:
            metrics.follow(runner.stats)
        install_stop_handlers(runner)
        stats = runner.run()
        listener(Stopped(stats.committed, stats.aborted, stats.restarts))
    return ExitCode.OK
