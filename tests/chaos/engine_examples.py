"""The example pipelines of `pipelines/` with the workload a chaos round gives each:
numbered orders (windowed ones for a window feeding the sink, with table rows
for a stream-table join, with event times and a versioned table's changes for an
as-of join), or, for the silent-sensors example, sensor readings
(orders and payments for orders-paid) checked against the in-memory runner."""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.chaos.workloads import GeneratorWorkload, Workload, round_workload

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
EXAMPLES = sorted(p.stem for p in PIPELINES.glob("*.py"))
MINUTE = 60_000
BASE = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE


@functools.cache
def example(name: str) -> Pipeline:
    """The example pipeline `name`, loaded once (a run does not change its pipeline)."""
    return load_pipeline(str(PIPELINES / f"{name}.py"))


def readings(records: int) -> Iterator[tuple[str, Any]]:
    """Readings of six sensors, some silent for minutes, a few out of order."""
    rng, minute = random.Random(records), 0.0
    for _ in range(records):
        minute += rng.choice([0.1, 0.5, 1, 2])
        ts = BASE + round((minute - rng.choice([0, 0, 0.1])) * MINUTE)
        yield "readings", {"sensor": f"s{rng.randrange(6)}", "ts": ts, "value": 1.0}


def orders_and_payments(records: int) -> Iterator[tuple[str, Any]]:
    """Orders a minute apart, most paid 0 to 12 minutes later (some too late), in time
    order but for a few seconds; then orders and payments far later that close every
    order's interval. No record is late, so the pairs do not depend on the interleaving."""
    rng = random.Random(records)
    found: list[tuple[int, str, dict[str, Any]]] = []
    for i in range(records // 2):
        ts = BASE + i * MINUTE
        found.append((ts, "orders", {"id": i, "customer": f"c{i % 4}", "amount": i, "ts_ms": ts}))
        if i % 3:
            paid = ts + rng.choice([0, 5, 10, 12]) * MINUTE
            found.append((paid, "payments", {"order_id": i, "amount": i, "ts_ms": paid}))
    found.sort(key=lambda r: r[0] + rng.choice([0, 10_000]))
    yield from ((topic, value) for _, topic, value in found)
    end = BASE + (records + 60) * MINUTE
    for i in range(-1, -13, -1):  # enough ids to reach every partition of both topics
        yield "orders", {"id": i, "customer": "end", "amount": 0, "ts_ms": end}
        yield "payments", {"order_id": i, "amount": 0, "ts_ms": end}


def workload(pipeline: Pipeline, records: int, partitions: int) -> Workload:
    if pipeline.source_topics == ("readings",):
        return GeneratorWorkload(pipeline, records, readings, partitions)
    if pipeline.source_topics == ("orders", "payments"):
        return GeneratorWorkload(pipeline, records, orders_and_payments, partitions)
    return round_workload(pipeline, records, partitions)
