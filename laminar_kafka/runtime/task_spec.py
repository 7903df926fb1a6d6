"""What a worker task is given (computed on the driver, pickled to it) and returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import Stage, plan_stages
from laminar_kafka.plan.tasks import TaskLayout
from laminar_kafka.runtime.config import RuntimeConfig


@dataclass(frozen=True)
class TaskSpec:
    pipeline: Pipeline
    config: RuntimeConfig
    generation: int
    task: int
    partitions: tuple[PartitionKey, ...]
    partition_counts: dict[str, int]
    """Partitions of every topic the task reads or routes keyed records to."""
    control_start_offset: int
    max_record_bytes: Mapping[str, int] = field(default_factory=dict)
    """Sink topic → the largest record it accepts; larger outputs are dead letters."""
    stage_index: int = 0
    writers: Mapping[PartitionKey, frozenset[int]] = field(default_factory=dict)
    """Internal partition → the tasks whose barriers align it."""
    outputs: Mapping[str, int] = field(default_factory=dict)
    """Internal topic the task writes → its partitions (each gets every barrier)."""
    ends: Mapping[PartitionKey, int] = field(default_factory=dict)
    """A bounded run's end offset of each source partition the task reads (none when
    unbounded): no record at or past it is processed (`runtime/driver/bounded.py`)."""

    @classmethod
    def of(
        cls,
        pipeline: Pipeline,
        config: RuntimeConfig,
        generation: int,
        layout: TaskLayout,
        partition_counts: dict[str, int],
        control_start_offset: int,
        max_record_bytes: Mapping[str, int],
        ends: Mapping[PartitionKey, int] | None = None,
    ) -> TaskSpec:
        return cls(
            pipeline,
            config,
            generation,
            layout.task,
            layout.partitions,
            partition_counts,
            control_start_offset,
            max_record_bytes,
            layout.stage,
            layout.writers,
            layout.outputs,
            {k: e for k, e in (ends or {}).items() if k in layout.partitions},
        )

    @cached_property
    def stage(self) -> Stage:
        """The stage the task runs (planned once per spec: planning walks every flow)."""
        return plan_stages(self.pipeline).stages[self.stage_index]


@dataclass(frozen=True)
class TaskSummary:
    """What a task did, returned to the driver when it exits after a drain."""

    task: int
    generation: int
    records_in: int
    records_out: int
    dead_letters: int
    late_records: int
    checkpoints: int
