"""Does an open status page slow checkpoints? Checkpoint p99 with and without it, one run.

    python -m benchmarks.status_checkpoints [--phase-s 10] [--phases 12] [--partitions 8]
                                            [--rate 1000] [--bootstrap HOST:PORT]

One pipeline (orders mapped to a sink, `--parallelism 2`, a checkpoint every
0.5 s) runs on the broker and Spark with its status collector and lag poller,
as `run --ui-port` has them, while orders arrive at `--rate` records/s. The run
alternates phases of `--phase-s` seconds (no page, page, page, no page, ...): in
"page" phases a client in a process of its own fetches `/api/status` every
second (what the open page does), in "no page" phases it is stopped (SIGSTOP,
so starting it costs no phase anything). Each committed checkpoint counts in the phase it
ended in; the result is each kind's p50 and p99 and whether the p99 with the page
is within 10% of the one without. Both kinds share the run, so its warm-up, the
machine's load and the broker's state touch both alike.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence

from benchmarks.broker import benchmark_broker
from benchmarks.topics import create_topic, delete_topics
from laminar_kafka import AvroFormat, Pipeline, RuntimeConfig
from laminar_kafka.metrics import LagPoller
from laminar_kafka.runtime.driver.events import CheckpointCommitted, RuntimeEvent
from laminar_kafka.runtime.driver.stats import quantile
from laminar_kafka.serving import RouteServer
from laminar_kafka.status import StatusCollector, plan_view, status_routes
from laminar_kafka.testing.orders import produce_orders
from laminar_kafka.testing.run import BackgroundRun

ALLOWED = 1.10
PAGE, NO_PAGE = "page", "no page"

_REFRESHING_CLIENT = """
import sys, time, urllib.request
url = sys.argv[1]
while True:
    with urllib.request.urlopen(url, timeout=10) as answer:
        answer.read()
    print("fetched", flush=True)
    time.sleep(1.0)
"""


class Phases:
    """Which phase the run is in, and the checkpoint durations each kind saw."""

    def __init__(self) -> None:
        self.kind = NO_PAGE
        self.measuring = False
        self.durations_ms: dict[str, list[float]] = {PAGE: [], NO_PAGE: []}

    def __call__(self, event: RuntimeEvent) -> None:
        if self.measuring and isinstance(event, CheckpointCommitted):
            self.durations_ms[self.kind].append(event.duration_s * 1000)


def produce_steadily(bootstrap: str, topic: str, rate: int, stop: threading.Event) -> None:
    """Orders at about `rate` per second, in batches of a tenth of a second."""
    batch, next_id = max(1, rate // 10), 0
    while not stop.is_set():
        started = time.monotonic()
        produce_orders(bootstrap, topic, range(next_id, next_id + batch))
        next_id += batch
        stop.wait(max(0.0, 0.1 - (time.monotonic() - started)))


def measure(bootstrap: str, args: argparse.Namespace) -> Phases:
    source = create_topic(bootstrap, "status-bench", args.partitions)
    sink = create_topic(bootstrap, "status-bench-out", args.partitions)
    pipeline = Pipeline("status-bench-" + source[-8:])
    orders = AvroFormat.from_schema("order")
    pipeline.source(source, value_format=orders).map(lambda o: {"id": o["id"]}).sink(sink, key="id")
    phases = Phases()
    stop = threading.Event()
    producer = threading.Thread(
        target=produce_steadily, args=(bootstrap, source, args.rate, stop), daemon=True
    )
    with tempfile.TemporaryDirectory(prefix="bench-status-") as checkpoints:
        config = RuntimeConfig(
            bootstrap=bootstrap,
            checkpoint_dir=checkpoints,
            parallelism=2,
            checkpoint_interval_s=0.5,
        )
        status = StatusCollector(plan_view(pipeline, config.parallelism))
        poller = LagPoller.for_pipeline(pipeline, config.kafka, 5.0, on_update=status.set_lag)
        server = RouteServer(status_routes(status), port=0, what="the status page")

        def listener(event: RuntimeEvent) -> None:
            status(event)
            poller.on_event(event)
            phases(event)

        producer.start()
        run = BackgroundRun(pipeline, config, listener=listener)
        try:
            run.wait_for(lambda: status.snapshot()["counts"]["committed"] >= 5, 180, "warm-up")
            url = server.url("/api/status")
            client = subprocess.Popen(
                [sys.executable, "-c", _REFRESHING_CLIENT, url], stdout=subprocess.PIPE
            )
            try:
                assert client.stdout is not None
                client.stdout.readline()  # its first fetch done: started, before any phase
                phases.measuring = True
                for n in range(args.phases):
                    # N P P N N P ...: neither kind always comes first after the warm-up.
                    phases.kind = NO_PAGE if n % 4 in (0, 3) else PAGE
                    client.send_signal(signal.SIGCONT if phases.kind == PAGE else signal.SIGSTOP)
                    _sleep_while_running(run, args.phase_s)
            finally:
                client.kill()
                client.wait()
            phases.measuring = False
        finally:
            stop.set()
            try:
                run.stop()
            finally:
                poller.close(2.0)
                server.close()
                delete_topics(bootstrap, [source, sink])
    return phases


def _sleep_while_running(run: BackgroundRun, seconds: float) -> None:
    """A phase's time, failing as soon as the pipeline does."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if run.error is not None:
            raise RuntimeError(f"the pipeline failed: {run.error}") from run.error
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--phase-s", type=float, default=10.0)
    parser.add_argument("--phases", type=int, default=12)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--bootstrap")
    args = parser.parse_args(argv)
    with benchmark_broker(args.bootstrap) as bootstrap:
        phases = measure(bootstrap, args)
    p99 = {}
    for kind in (NO_PAGE, PAGE):
        samples = phases.durations_ms[kind]
        if not samples:
            print(f"  {kind:<8} no checkpoint committed: nothing to compare")
            return 1
        p50, p95 = quantile(samples, 0.5), quantile(samples, 0.95)
        p99[kind] = quantile(samples, 0.99)
        print(
            f"  {kind:<8} {len(samples):4d} checkpoints, p50 {p50:.0f} ms, p95 {p95:.0f} ms, "
            f"p99 {p99[kind]:.0f} ms, max {max(samples):.0f} ms"
        )
    ratio = (p99[PAGE] or 0.0) / (p99[NO_PAGE] or 1.0)
    print(f"status_checkpoint_p99_ratio={ratio:.2f} allowed<={ALLOWED:.2f}")
    return 0 if ratio <= ALLOWED else 1


if __name__ == "__main__":
    raise SystemExit(main())
