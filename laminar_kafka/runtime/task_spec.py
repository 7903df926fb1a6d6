"""What a worker task is given (computed on the driver, pickled to it) and returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.config import RuntimeConfig


@dataclass(frozen=True)
class TaskSpec:
    pipeline: Pipeline
    config: RuntimeConfig
    generation: int
    task: int
    partitions: tuple[PartitionKey, ...]
    partition_counts: dict[str, int]
    control_start_offset: int
    max_record_bytes: Mapping[str, int] = field(default_factory=dict)
    """Sink topic → the largest record it accepts; larger outputs are dead letters."""


@dataclass(frozen=True)
class TaskSummary:
    """What a task did, returned to the driver when it exits after a drain."""

    task: int
    generation: int
    records_in: int
    records_out: int
    dead_letters: int
    checkpoints: int


def assign_partitions(
    partition_counts: dict[str, int], parallelism: int
) -> list[tuple[PartitionKey, ...]]:
    """Spread every source partition over `parallelism` tasks, round-robin, stably."""
    keys = [(t, p) for t in sorted(partition_counts) for p in range(partition_counts[t])]
    return [tuple(keys[i::parallelism]) for i in range(parallelism)]
