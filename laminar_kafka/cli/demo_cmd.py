"""`laminar-kafka demo`: a two-stage exactly-once pipeline on a local broker, with a crash.

Starts the local broker (fetching Kafka once) and runs `pipelines/product_totals.py`
on fresh topics while orders are produced: stage 0 reads the orders (partitioned
by customer) and repartitions them by product through an internal topic, stage 1
keeps the running totals per product. Halfway one worker task is SIGKILLed; the
committed output still counts every order exactly once, and each product's last
total is the sum of its orders. `--pipeline` runs another pipeline over orders
with the check that fits it (`order_workload`): `pipelines/customer_totals.py`
(one stage), or `pipelines/revenue_per_minute.py` (windows: orders whose event
time advances, every window's result against a batch computation of its orders,
late orders once each in the late topic).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from laminar_kafka.api.examples import examples_dir
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.producer import InputRecord, PacedProducer
from laminar_kafka.chaos.sink_output import count_outputs, read_output
from laminar_kafka.chaos.window_workload import WindowWorkload
from laminar_kafka.chaos.worker_pids import kill_newest_worker
from laminar_kafka.chaos.workloads import OrderWorkload, order_workload
from laminar_kafka.cli.demo_show import (
    say,
    show_check,
    show_internal,
    show_totals,
    show_windows,
)
from laminar_kafka.cli.exit_codes import ExitCode
from laminar_kafka.cli.progress import describe
from laminar_kafka.errors import ConfigError
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.events import CheckpointCommitted, GenerationStarted, RuntimeEvent
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.testing.broker import TopicFactory
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.retarget import retarget

__all__ = ["register"]

PARALLELISM = 2
"""Worker tasks per stage."""
PARTITIONS = 4
"""Of the source topic."""
COMMITS_EVERY_S = 5.0
"""Routine checkpoint commits are shown at most this often (the first of a generation always)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the two-stage example pipeline on a local broker, kill a worker, check totals",
    )
    parser.add_argument("--orders", type=int, default=20_000, help="orders to produce")
    parser.add_argument("--bootstrap", help="use this Kafka instead of the local broker")
    parser.add_argument(
        "--pipeline",
        default=str(examples_dir() / "product_totals.py"),
        help="a pipeline over orders (schemas/order.avsc), one source and one sink (which a "
        "window may feed, as in pipelines/revenue_per_minute.py); %(default)s",
    )
    parser.add_argument("--no-crash", action="store_true", help="do not kill a worker")
    parser.set_defaults(handler=demo)


class _Listener:
    """Prints runtime events; routine commits at most every COMMITS_EVERY_S seconds."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self._last = float("-inf")
        self._fresh = True

    def __call__(self, event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted):
            now = time.monotonic()
            if not self._fresh and now - self._last < COMMITS_EVERY_S:
                return
            self._fresh, self._last = False, now
        elif isinstance(event, GenerationStarted):
            self._fresh = True
            self.ready.set()
        for line in describe(event).splitlines():
            say(f"  [runtime] {line}")


def demo(args: argparse.Namespace) -> int:
    if not Path(args.pipeline).exists():
        raise ConfigError(f"pipeline file {args.pipeline} not found")
    original = load_pipeline(args.pipeline)
    # The input and the oracle that fit the pipeline.
    workload = order_workload(original, args.orders, PARTITIONS)
    bootstrap = args.bootstrap or _local_broker()
    work = Path(tempfile.mkdtemp(prefix="laminar-demo-"))
    os.environ["LAMINAR_PID_DIR"] = str(work)  # read by the worker tasks Spark starts
    topics = TopicFactory(bootstrap)
    source = topics.create(prefix="demo-orders", partitions=PARTITIONS)
    name = f"demo-{uuid.uuid4().hex[:6]}"
    outputs = {t: f"{name}-{t}" for t in original.sink_topics}  # the sink, a late topic
    source_topic = workload.source_flow.source.topic
    pipeline = retarget(original, name, {source_topic: source, **outputs})
    plan = plan_stages(pipeline)
    stages = len(plan.stages)
    tasks = PARALLELISM * stages
    config = RuntimeConfig(
        bootstrap=bootstrap,
        checkpoint_dir=str(work / "checkpoints"),
        parallelism=PARALLELISM,
        checkpoint_interval_s=1.0,
        checkpoint_timeout_s=20.0,
    )
    written = ", ".join(outputs.values())
    say(f"pipeline {original.name} as {name}: {source} -> {written}, checkpoints in {work}")
    for topic, internal in plan.internal.items():
        froms = ", ".join(str(s) for s in internal.writers)
        say(f"  stage {froms} -> stage {internal.reader} through the internal topic {topic}")
    per_stage = f", {PARALLELISM} per stage" if stages > 1 else ""
    say(f"starting Spark (local[{tasks}]) and {tasks} worker tasks{per_stage}...")
    listener = _Listener()
    runner = PipelineRunner(pipeline, config, listener=listener)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            runner.run()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while not listener.ready.wait(0.5):
        if failure or not thread.is_alive():
            raise failure[0] if failure else ConfigError("the pipeline stopped while starting")

    def alive() -> bool:
        return not failure and thread.is_alive()

    planned = workload.plan({source_topic: source}, PARTITIONS)
    crash = None if args.no_crash else (work, stages)
    _produce_with_progress(bootstrap, planned, outputs, crash, alive)
    _wait_for_output(bootstrap, outputs, workload.expected_outputs(), alive)
    runner.stop()
    thread.join(120)
    if failure:
        raise failure[0]
    report = _check(bootstrap, workload, outputs, len(planned))
    for topic, internal in plan.internal.items():
        show_internal(bootstrap, topic, internal.reader)
    topics.cleanup()
    return ExitCode.OK if report.exact else ExitCode.FAILURE


def _check(
    bootstrap: str,
    workload: OrderWorkload | WindowWorkload,
    outputs: dict[str, str],
    produced: int,
) -> ExactlyOnceReport:
    """Read the committed output, show it next to the oracle's, print the check."""
    if isinstance(workload, WindowWorkload):
        results, late = workload.read(bootstrap, outputs)
        report = workload.check(results, late)
        show_windows(workload, results, late)
        counts = (
            f"{produced} orders in, {len(results) + len(late)} records out ({len(results)} "
            f"window results, {len(late)} late orders)"
        )
        show_check(report, counts)
        return report
    sink = workload.sink_flow.sink
    updates = read_output(bootstrap, sink, outputs[sink.topic])
    report = workload.check(updates)
    if workload.stateful and isinstance(sink.key, str):
        show_totals(updates, sink.key, produced)
    show_check(report, f"{report.records} orders in, {len(updates)} updates out")
    return report


def _local_broker() -> str:
    from laminar_kafka.local.broker.local import LocalBroker

    say("starting the local Kafka broker (the first run fetches Kafka with Maven)...")
    info = LocalBroker().start()
    say(f"broker at {info.bootstrap} (stop it with: laminar-kafka broker stop)")
    return info.bootstrap


def _produce_with_progress(
    bootstrap: str,
    planned: list[InputRecord],
    outputs: dict[str, str],
    crash: tuple[Path, int] | None,
    alive: Callable[[], bool],
) -> None:
    """Produce in 40 chunks, a tenth at a time shown; past half, kill a worker of
    `crash` (pid directory, stages) unless None."""
    total = len(planned)
    producer = PacedProducer(bootstrap, planned, chunks=40, pause_s=0.1)
    producer.start()
    try:
        for tenth in range(1, 11):
            done = total * tenth // 10
            producer.wait_delivered(done, 120)
            out = count_outputs(bootstrap, outputs, {})
            say(f"produced {done:>7}/{total}   committed output {out:>7}")
            if crash is not None and done >= total // 2 and _kill_a_worker(*crash):
                crash = None
            if not alive():
                return
    finally:
        producer.close()


def _kill_a_worker(work: Path, stages: int) -> bool:
    victim = kill_newest_worker(work, random.Random())
    if victim is not None:
        stage = f" (stage {victim.task // PARALLELISM})" if stages > 1 else ""
        say(
            f"*** kill -9 worker task {victim.task}{stage} "
            f"of generation {victim.generation} (pid {victim.pid}) ***"
        )
    return victim is not None


def _wait_for_output(
    bootstrap: str, outputs: dict[str, str], expected: int, alive: Callable[[], bool]
) -> None:
    deadline = time.monotonic() + 300
    last = -1
    while time.monotonic() < deadline and alive():
        out = count_outputs(bootstrap, outputs, {})
        if out != last:
            say(f"expected output {expected:>7}   committed output {out:>7}")
            last = out
        if out >= expected:
            return
        time.sleep(1.0)  # polling the committed output: the broker gives no notification
