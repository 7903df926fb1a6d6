"""A seed's schedule for a round on the engine in one process: which example pipeline,
its input's size, partitions, parallelism, how many chunks the input arrives in
between checkpoints, the checkpoint interval, and one or two crashes (point,
checkpoint, task)."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from laminar_kafka.chaos.engine_rounds import in_process_points
from laminar_kafka.faults import FaultPoint, ThreadCrash
from tests.chaos.engine_examples import EXAMPLES, example


@dataclass(frozen=True)
class Schedule:
    example: str
    records: int
    partitions: int
    parallelism: int
    chunks: int
    interval_s: float
    crashes: tuple[ThreadCrash, ...]


@functools.cache
def points_of(name: str) -> list[FaultPoint]:
    return in_process_points(example(name))


def schedule(seed: int) -> Schedule:
    rng = random.Random(seed)
    name = rng.choice(EXAMPLES)
    partitions = rng.randint(1, 4)
    parallelism = rng.randint(1, partitions)
    points = points_of(name)
    crashes = tuple(_crash(rng, points, parallelism) for _ in range(rng.choice([1, 1, 2])))
    return Schedule(
        name,
        rng.randint(20, 120),  # a windowed round needs 3 windows a partition
        partitions,
        parallelism,
        rng.randint(1, 5),
        rng.choice([0.0005, 0.002, 0.01]),
        crashes,
    )


def _crash(rng: random.Random, points: list[FaultPoint], parallelism: int) -> ThreadCrash:
    """A crash at a point, checkpoint 1 to 4 or later, in any task or in one of the first
    stage's: stage 1's for `downstream_acked`, which only a downstream task reaches (a
    crash that cannot fire would hold the input's tail back, a record a checkpoint)."""
    point, checkpoint = rng.choice(points), rng.randint(1, 4)
    task = rng.choice([None, *range(parallelism)])
    if point is FaultPoint.DOWNSTREAM_ACKED and task is not None:
        task += parallelism
    return ThreadCrash(point, checkpoint, task)
