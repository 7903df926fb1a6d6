"""`laminar-kafka run PIPELINE`: run a pipeline until Ctrl-C or SIGTERM, then drain."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType
from typing import Any

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.cli.options import add_runtime_options, runtime_config
from laminar_kafka.cli.progress import ProgressPrinter
from laminar_kafka.runtime.events import Stopped
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


def run(args: argparse.Namespace) -> int:
    pipeline = load_pipeline(args.pipeline)
    config = runtime_config(args)
    print(f"running {pipeline.name}: {config.describe()}", file=sys.stderr, flush=True)
    progress = ProgressPrinter(events_file=args.events_file)
    runner = PipelineRunner(pipeline, config, listener=progress)
    install_stop_handlers(runner)
    try:
        stats = runner.run()
        progress(Stopped(stats.committed, stats.aborted, stats.restarts))
    finally:
        progress.close()
    return 0
