"""`laminar-kafka demo`: a two-stage exactly-once pipeline on a local broker, with a crash.

Starts the local broker (fetching Kafka once) and runs `pipelines/product_totals.py`
on fresh topics while orders are produced: stage 0 reads the orders (partitioned
by customer) and repartitions them by product through an internal topic, stage 1
keeps the running totals per product. Halfway one worker task is SIGKILLed; the
committed output still counts every order exactly once, and each product's last
total is the sum of its orders. `--pipeline` runs another pipeline over orders
(`pipelines/customer_totals.py`: one stage) with the check that fits it.
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

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.cli.progress import describe
from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.admin import partition_counts, watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.events import CheckpointCommitted, GenerationStarted, RuntimeEvent
from laminar_kafka.runtime.runner import PipelineRunner
from laminar_kafka.testing.broker import TopicFactory
from laminar_kafka.testing.chaos_workloads import OrderWorkload
from laminar_kafka.testing.orders import order, produce_orders, read_committed
from laminar_kafka.testing.retarget import retarget
from laminar_kafka.testing.worker_pids import kill_newest_worker

__all__ = ["register"]

_EXAMPLES = Path(__file__).resolve().parents[2] / "pipelines"
PARALLELISM = 2
"""Worker tasks per stage."""
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
        default=str(_EXAMPLES / "product_totals.py"),
        help="a pipeline over orders (schemas/order.avsc), one source and one sink; %(default)s",
    )
    parser.add_argument("--no-crash", action="store_true", help="do not kill a worker")
    parser.set_defaults(handler=demo)


def _say(message: str) -> None:
    print(message, flush=True)


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
            _say(f"  [runtime] {line}")


def demo(args: argparse.Namespace) -> int:
    if not Path(args.pipeline).exists():
        raise ConfigError(f"{args.pipeline} not found: run the demo from a laminar-kafka checkout")
    original = load_pipeline(args.pipeline)
    workload = OrderWorkload(original, args.orders)  # the oracle that fits the pipeline
    bootstrap = args.bootstrap or _local_broker()
    work = Path(tempfile.mkdtemp(prefix="laminar-demo-"))
    os.environ["LAMINAR_PID_DIR"] = str(work)  # read by the worker tasks Spark starts
    topics = TopicFactory(bootstrap)
    source = topics.create(prefix="demo-orders", partitions=4)
    name = f"demo-{uuid.uuid4().hex[:6]}"
    sink = f"{name}-totals"
    pipeline = retarget(
        original,
        name,
        {workload.source_flow.source.topic: source, workload.sink_flow.sink.topic: sink},
    )
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
    _say(f"pipeline {original.name} as {name}: {source} -> {sink}, checkpoints in {work}")
    for topic, internal in plan.internal.items():
        froms = ", ".join(str(s) for s in internal.writers)
        _say(f"  stage {froms} -> stage {internal.reader} through the internal topic {topic}")
    per_stage = f", {PARALLELISM} per stage" if stages > 1 else ""
    _say(f"starting Spark (local[{tasks}]) and {tasks} worker tasks{per_stage}...")
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
    decode = workload.sink_flow.sink.value_format.decode_one

    def alive() -> bool:
        return not failure and thread.is_alive()

    produced = _produce_with_progress(bootstrap, source, sink, args, work, stages, decode, alive)
    _wait_for_output(bootstrap, sink, workload.expected_outputs(), decode, alive)
    runner.stop()
    thread.join(120)
    if failure:
        raise failure[0]
    outputs = read_committed(bootstrap, sink, decode)
    report = workload.check(outputs)
    key = workload.sink_flow.sink.key
    if workload.stateful and isinstance(key, str):
        _show_totals(outputs, key, produced)
    for topic, internal in plan.internal.items():
        _show_internal(bootstrap, topic, internal.reader)
    _say(
        f"exactly-once check (read_committed): {report.records} orders in, {len(outputs)} "
        f"updates out, duplicates={report.duplicates} losses={report.losses} "
        f"wrong={report.wrong}"
    )
    if report.example:
        _say(f"  for example: {report.example}")
    topics.cleanup()
    return 0 if report.exact else 1


def _local_broker() -> str:
    from laminar_kafka.broker.local import LocalBroker

    _say("starting the local Kafka broker (the first run fetches Kafka with Maven)...")
    info = LocalBroker().start()
    _say(f"broker at {info.bootstrap} (stop it with: laminar-kafka broker stop)")
    return info.bootstrap


def _produce_with_progress(
    bootstrap: str,
    source: str,
    sink: str,
    args: argparse.Namespace,
    work: Path,
    stages: int,
    decode: Callable[[bytes | None], Any],
    alive: Callable[[], bool],
) -> int:
    total: int = args.orders
    chunk = max(1, total // 40)
    crashed = args.no_crash
    for start in range(0, total, chunk):
        if not alive():
            break
        produce_orders(bootstrap, source, range(start, min(start + chunk, total)))
        done = min(start + chunk, total)
        if start % (chunk * 4) == 0:
            out = len(read_committed(bootstrap, sink, decode)) if _exists(bootstrap, sink) else 0
            _say(f"produced {done:>7}/{total}   committed output {out:>7}")
        if not crashed and done >= total // 2:
            crashed = _kill_a_worker(work, stages)
        time.sleep(0.1)
    return total


def _exists(bootstrap: str, topic: str) -> bool:
    return topic in partition_counts(KafkaConnection(bootstrap), timeout_s=10)


def _kill_a_worker(work: Path, stages: int) -> bool:
    victim = kill_newest_worker(work, random.Random())
    if victim is not None:
        stage = f" (stage {victim.task // PARALLELISM})" if stages > 1 else ""
        _say(
            f"*** kill -9 worker task {victim.task}{stage} "
            f"of generation {victim.generation} (pid {victim.pid}) ***"
        )
    return victim is not None


def _wait_for_output(
    bootstrap: str,
    sink: str,
    expected: int,
    decode: Callable[[bytes | None], Any],
    alive: Callable[[], bool],
) -> None:
    deadline = time.monotonic() + 300
    last = -1
    while time.monotonic() < deadline and alive():
        out = len(read_committed(bootstrap, sink, decode))
        if out != last:
            _say(f"produced {expected:>7}/{expected}   committed output {out:>7}")
            last = out
        if out >= expected:
            return
        time.sleep(1.0)


def _show_totals(outputs: list[Any], key: str, produced: int) -> None:
    """Each key's last update (most orders) next to the count and sum of its input orders."""
    final: dict[str, tuple[int, int]] = {}
    for o in outputs:
        if not isinstance(o, dict) or not {key, "orders", "amount"} <= o.keys():
            continue
        if o["orders"] >= final.get(o[key], (0, 0))[0]:
            final[o[key]] = (o["orders"], o["amount"])
    expected: dict[str, tuple[int, int]] = {}
    for i in range(produced):
        o = order(i)
        count, amount = expected.get(o[key], (0, 0))
        expected[o[key]] = (count + 1, amount + o["amount"])
    _say(f"{key:<10}{'orders':>8}{'amount':>10}   last update vs the sum of its orders")
    for k in sorted(expected, key=lambda k: (len(k), k)):
        count, amount = final.get(k, (0, 0))
        mark = "equal" if (count, amount) == expected[k] else f"DIFFERS: {expected[k]}"
        _say(f"{k:<10}{count:>8}{amount:>10}   {mark}")


def _show_internal(bootstrap: str, topic: str, reader: int) -> None:
    """How much of an internal topic was written, and how much is purged already."""
    kafka = KafkaConnection(bootstrap)
    partitions = partition_counts(kafka, timeout_s=10).get(topic, 0)
    consumer = probe_consumer(kafka)
    try:
        marks = [watermark_offsets(consumer, topic, p) for p in range(partitions)]
    finally:
        consumer.close()
    written, purged = sum(high for _, high in marks), sum(low for low, _ in marks)
    _say(
        f"internal topic {topic}: {partitions} partitions, {written} records written "
        f"(data and barriers), {purged} purged below stage {reader}'s committed offsets"
    )
