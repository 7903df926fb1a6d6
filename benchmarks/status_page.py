"""The status page's cost on the driver: CPU per refresh of `/api/status`.

    python -m benchmarks.status_page [--partitions 1024] [--refreshes 300]

No broker and no Spark: a `StatusCollector` of the two-stage rekey pipeline is
filled as a long run would leave it (its 300 kept checkpoints, restarts and
generations, the last error's traceback, five minutes of lag readings for
`--partitions` source partitions), then:

    (a) route   the `/api/status` route called in this process, CPU per call
                (`time.process_time`, every thread of the process)
    (b) http    the same route served by `RouteServer`, fetched by a client in a
                process of its own: this process's CPU (the server's threads:
                HTTP parsing, the route, the answer) per request

The target is under 50 ms per refresh at 1,024 partitions. The page refreshes
once a second, so that is at most 5% of one core. `benchmarks.status_checkpoints`
measures what it does to checkpoint durations in a real run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks.laminar_pipelines import build_pipeline
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    GenerationStarted,
    StageProgress,
    WorkerLost,
)
from laminar_kafka.runtime.driver.spark_job import MAX_DETAIL
from laminar_kafka.runtime.driver.stats import quantile
from laminar_kafka.serving import QueryRoute, Reply, RouteServer
from laminar_kafka.status import KEEP, StatusCollector, plan_view, status_routes
from laminar_kafka.status.collector import LAG_POINTS, LAG_WINDOW_S

TARGET_MS = 50.0

_CLIENT = """
import sys, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
for _ in range(n):
    with urllib.request.urlopen(url, timeout=10) as answer:
        answer.read()
"""


@dataclass(frozen=True)
class Cost:
    """CPU milliseconds per refresh, and the answer's size."""

    what: str
    mean_ms: float
    p99_ms: float | None
    body_bytes: int


def filled_collector(partitions: int, restarts: int = 20) -> StatusCollector:
    """A collector as a long run leaves it: every kept slot used, the last error with a
    traceback as long as kept, and a full lag history for every partition."""
    pipeline = build_pipeline("status-bench", "rekey", "bench-in", "bench-out")
    status = StatusCollector(plan_view(pipeline, parallelism=8))
    at = time.time() - 3600
    status(GenerationStarted(1, 16, 2.0, at=at))
    for n in range(1, restarts + 1):
        reason = f"task {n % 8} lost: Python worker exited unexpectedly"
        status(WorkerLost(n, reason, n, 0.5, "x" * MAX_DETAIL))
        status(GenerationStarted(n + 1, 16, 2.0, recovery_s=3.5, at=at + n))
    for checkpoint in range(1, 2 * KEEP + 1):
        at += 1.0
        if checkpoint % 50 == 0:
            status(CheckpointAborted(checkpoint, restarts + 1, "timed out at stage 1", at=at))
            continue
        stages = tuple(
            StageProgress(s, 8, 1000 * checkpoint, 1000 * checkpoint, 3, 0.05, 2, 8, 1_700_000)
            for s in (0, 1)
        )
        status(CheckpointCommitted(checkpoint, restarts + 1, 0.1, (3,), stages, at=at))
    now = time.time()
    for reading in range(LAG_POINTS):
        lags = {("bench-in", p): 1000 + p + reading for p in range(partitions)}
        status.set_lag(lags, now - LAG_WINDOW_S + reading * LAG_WINDOW_S / LAG_POINTS)
    return status


def status_route(status: StatusCollector) -> Callable[[], Reply]:
    """The route of `/api/status`, which reads no query."""
    route = status_routes(status)["/api/status"]
    assert not isinstance(route, QueryRoute)
    return route


def route_cost(status: StatusCollector, refreshes: int) -> Cost:
    route = status_route(status)
    route()  # warm
    samples = []
    for _ in range(refreshes):
        started = time.process_time()
        body = route().body
        samples.append((time.process_time() - started) * 1000)
    return Cost("route", sum(samples) / len(samples), quantile(samples, 0.99), len(body))


def http_cost(status: StatusCollector, refreshes: int) -> Cost:
    server = RouteServer(status_routes(status), port=0, what="the status page")
    try:
        url = server.url("/api/status")
        subprocess.run([sys.executable, "-c", _CLIENT, url, "1"], check=True)  # warm
        started = time.process_time()
        subprocess.run([sys.executable, "-c", _CLIENT, url, str(refreshes)], check=True)
        spent = time.process_time() - started
    finally:
        server.close()
    body = status_route(status)().body
    return Cost("http", spent * 1000 / refreshes, None, len(body))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=1024)
    parser.add_argument("--refreshes", type=int, default=300)
    args = parser.parse_args(argv)
    status = filled_collector(args.partitions)
    costs = [route_cost(status, args.refreshes), http_cost(status, args.refreshes)]
    print(f"status page, {args.partitions} source partitions, {args.refreshes} refreshes")
    for cost in costs:
        p99 = "" if cost.p99_ms is None else f", p99 {cost.p99_ms:.2f} ms"
        print(
            f"  {cost.what:<6} {cost.mean_ms:6.2f} ms CPU per refresh{p99} "
            f"({cost.body_bytes / 1024:.0f} KiB answer)"
        )
    worst = max(c.mean_ms for c in costs)
    print(f"status_cpu_ms={worst:.2f} target<{TARGET_MS:g}")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
