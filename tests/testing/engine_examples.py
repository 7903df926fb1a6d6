"""The example pipelines of `pipelines/` with the workload a chaos round gives each:
numbered orders (windowed ones for a window feeding the sink, with table rows
for a stream-table join), or, for the
silent-sensors example, sensor readings checked against the in-memory runner."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.testing.chaos_workloads import GeneratorWorkload, Workload, round_workload

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
EXAMPLES = sorted(p.stem for p in PIPELINES.glob("*.py"))
MINUTE = 60_000
BASE = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE


def example(name: str) -> Pipeline:
    return load_pipeline(str(PIPELINES / f"{name}.py"))


def readings(records: int) -> Iterator[tuple[str, Any]]:
    """Readings of six sensors, some silent for minutes, a few out of order."""
    rng, minute = random.Random(records), 0.0
    for _ in range(records):
        minute += rng.choice([0.1, 0.5, 1, 2])
        ts = BASE + round((minute - rng.choice([0, 0, 0.1])) * MINUTE)
        yield "readings", {"sensor": f"s{rng.randrange(6)}", "ts": ts, "value": 1.0}


def workload(pipeline: Pipeline, records: int, partitions: int) -> Workload:
    if pipeline.source_topics == ("readings",):
        return GeneratorWorkload(pipeline, records, readings, partitions)
    return round_workload(pipeline, records, partitions)
