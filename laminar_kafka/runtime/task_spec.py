"""Everything one worker task needs to know, computed on the driver and pickled to it."""

from __future__ import annotations

from dataclasses import dataclass

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.runtime.config import RuntimeConfig

PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class TaskSpec:
    pipeline: Pipeline
    config: RuntimeConfig
    generation: int
    task: int
    partitions: tuple[PartitionKey, ...]
    partition_counts: dict[str, int]
    control_start_offset: int


def assign_partitions(
    partition_counts: dict[str, int], parallelism: int
) -> list[tuple[PartitionKey, ...]]:
    """Spread every source partition over `parallelism` tasks, round-robin, stably."""
    keys = [(t, p) for t in sorted(partition_counts) for p in range(partition_counts[t])]
    return [tuple(keys[i::parallelism]) for i in range(parallelism)]
