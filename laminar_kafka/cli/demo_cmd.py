"""`laminar-kafka demo`: an exactly-once pipeline on a local broker, with a crash.

Starts the local broker (fetching Kafka once), runs `pipelines/customer_totals.py`
on fresh topics while orders are produced, SIGKILLs one worker task halfway, and
shows that the running totals still count every order exactly once.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.cli.progress import describe
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats.json import JsonFormat
from laminar_kafka.kafka.admin import partition_counts
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.events import GenerationStarted, RuntimeEvent
from laminar_kafka.runtime.runner import PipelineRunner
from laminar_kafka.testing.broker import TopicFactory
from laminar_kafka.testing.orders import (
    compare_totals,
    expected_totals,
    produce_orders,
    read_committed,
)
from laminar_kafka.testing.retarget import retarget
from laminar_kafka.testing.worker_pids import kill_newest_worker

__all__ = ["register"]

_EXAMPLES = Path(__file__).resolve().parents[2] / "pipelines"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the keyed example pipeline on a local broker, kill a worker, check the totals",
    )
    parser.add_argument("--orders", type=int, default=20_000, help="orders to produce")
    parser.add_argument("--bootstrap", help="use this Kafka instead of the local broker")
    parser.add_argument(
        "--pipeline", default=str(_EXAMPLES / "customer_totals.py"), help="%(default)s"
    )
    parser.add_argument("--no-crash", action="store_true", help="do not kill a worker")
    parser.set_defaults(handler=demo)


def _say(message: str) -> None:
    print(message, flush=True)


def demo(args: argparse.Namespace) -> int:
    if not Path(args.pipeline).exists():
        raise ConfigError(f"{args.pipeline} not found: run the demo from a laminar-kafka checkout")
    bootstrap = args.bootstrap or _local_broker()
    work = Path(tempfile.mkdtemp(prefix="laminar-demo-"))
    os.environ["LAMINAR_PID_DIR"] = str(work)  # read by the worker tasks Spark starts
    topics = TopicFactory(bootstrap)
    source = topics.create(prefix="demo-orders", partitions=4)
    name = f"demo-{uuid.uuid4().hex[:6]}"
    sink = f"{name}-totals"
    original = load_pipeline(args.pipeline)
    pipeline = retarget(
        original, name, {original.source_topics[0]: source, original.sink_topics[0]: sink}
    )
    config = RuntimeConfig(
        bootstrap=bootstrap,
        checkpoint_dir=str(work / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=1.0,
        checkpoint_timeout_s=20.0,
    )
    _say(f"pipeline {original.name} as {name}: {source} -> {sink}, checkpoints in {work}")
    _say("starting Spark (local[2]) and 2 worker tasks...")
    ready = threading.Event()

    def listen(event: RuntimeEvent) -> None:
        _say(f"  [runtime] {describe(event)}")
        if isinstance(event, GenerationStarted):
            ready.set()

    runner = PipelineRunner(pipeline, config, listener=listen)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            runner.run()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while not ready.wait(0.5):
        if failure or not thread.is_alive():
            raise failure[0] if failure else ConfigError("the pipeline stopped while starting")
    produced = _produce_with_progress(
        bootstrap, source, sink, args.orders, work, args.no_crash, thread, failure
    )
    _wait_for_output(bootstrap, sink, produced, thread, failure)
    runner.stop()
    thread.join(120)
    if failure:
        raise failure[0]
    outputs = read_committed(bootstrap, sink, JsonFormat().decode_one)
    report = compare_totals(expected_totals(range(produced)), outputs)
    _show_totals(outputs)
    _say(
        f"exactly-once check (read_committed): {report.records} orders in, {len(outputs)} "
        f"updates out, duplicates={report.duplicates} losses={report.losses}"
    )
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
    total: int,
    work: Path,
    no_crash: bool,
    thread: threading.Thread,
    failure: list[BaseException],
) -> int:
    chunk = max(1, total // 40)
    crashed = no_crash
    decode = JsonFormat().decode_one
    for start in range(0, total, chunk):
        if failure or not thread.is_alive():
            break
        produce_orders(bootstrap, source, range(start, min(start + chunk, total)))
        done = min(start + chunk, total)
        if start % (chunk * 4) == 0:
            out = len(read_committed(bootstrap, sink, decode)) if _exists(bootstrap, sink) else 0
            _say(f"produced {done:>7}/{total}   committed output {out:>7}")
        if not crashed and done >= total // 2:
            crashed = _kill_a_worker(work)
        time.sleep(0.1)
    return total


def _exists(bootstrap: str, topic: str) -> bool:
    return topic in partition_counts(KafkaConnection(bootstrap), timeout_s=10)


def _kill_a_worker(work: Path) -> bool:
    victim = kill_newest_worker(work, random.Random())
    if victim is not None:
        _say(
            f"*** kill -9 worker task {victim.task} of generation {victim.generation} "
            f"(pid {victim.pid}) ***"
        )
    return victim is not None


def _wait_for_output(
    bootstrap: str,
    sink: str,
    expected: int,
    thread: threading.Thread,
    failure: list[BaseException],
) -> None:
    decode = JsonFormat().decode_one
    deadline = time.monotonic() + 300
    last = -1
    while time.monotonic() < deadline and not failure and thread.is_alive():
        out = len(read_committed(bootstrap, sink, decode))
        if out != last:
            _say(f"produced {expected:>7}/{expected}   committed output {out:>7}")
            last = out
        if out >= expected:
            return
        time.sleep(1.0)


def _show_totals(outputs: list[dict[str, Any]]) -> None:
    final: dict[str, dict[str, Any]] = {}
    for o in outputs:
        if o["orders"] >= final.get(o["customer"], {"orders": 0})["orders"]:
            final[o["customer"]] = o
    _say(f"{'customer':<10}{'orders':>8}{'amount':>10}")
    for customer in sorted(final, key=lambda c: int(c[1:])):
        o = final[customer]
        _say(f"{customer:<10}{o['orders']:>8}{o['amount']:>10}")
    sys.stdout.flush()
