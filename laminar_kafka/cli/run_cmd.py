"""`laminar-kafka run PIPELINE`: run a pipeline until Ctrl-C or SIGTERM, then drain."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType
from typing import Any

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.cli.options import add_runtime_options, runtime_config
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
    parser.set_defaults(handler=run)


class ProgressPrinter:
    """Prints what the runtime says, but routine commits at most every `every_s` seconds.

    The first commit of each worker generation is always shown: it says that
    output flows again after a start or a restart.
    """

    def __init__(self, every_s: float = 10.0) -> None:
        self._every_s = every_s
        self._last = 0.0
        self._fresh_generation = True
        self._quiet = 0

    def __call__(self, message: str) -> None:
        now = time.monotonic()
        if message.startswith("checkpoint ") and " committed " in message:
            if not self._fresh_generation and now - self._last < self._every_s:
                self._quiet += 1
                return
            if self._quiet:
                message += f" ({self._quiet} more since the last line)"
            self._fresh_generation = False
            self._quiet = 0
            self._last = now
        elif message.startswith("generation "):
            self._fresh_generation = True
        print(message, flush=True)


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
    runner = PipelineRunner(pipeline, config, listener=ProgressPrinter())
    install_stop_handlers(runner)
    stats = runner.run()
    print(
        f"stopped: {stats.committed} checkpoints committed, {stats.aborted} aborted, "
        f"{stats.restarts} restarts",
        flush=True,
    )
    return 0
