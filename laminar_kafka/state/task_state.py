"""All keyed state one task holds: per source partition, a table per stateful step name
(and its event-time progress, `operators/event_time.WATERMARK_TABLE`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.snapshot import (
    PartitionTables,
    decode_partition_snapshot,
    encode_task_snapshot,
)


class TaskState:
    """The tables of a task's partitions; snapshots only when its stage keeps state
    (`Stage.keeps_state`)."""

    def __init__(self, stateful: bool) -> None:
        self.stateful = stateful
        self.partitions: dict[PartitionKey, PartitionTables] = {}

    def load(self, tables: Mapping[PartitionKey, PartitionTables]) -> None:
        self.partitions = dict(tables)

    def of(self, key: PartitionKey) -> PartitionTables:
        """Partition `key`'s tables, step name → table; steps add theirs on first use."""
        return self.partitions[key]

    def snapshot(self) -> bytes | None:
        """The task's state file, or None for a stage that keeps no state."""
        return encode_task_snapshot(self.partitions) if self.stateful else None

    def restore(self, snapshot: bytes, keys: Iterable[PartitionKey]) -> None:
        """Back to a snapshot this task took (its last committed state)."""
        if self.stateful:
            for key in keys:
                self.partitions[key] = decode_partition_snapshot(
                    snapshot, key, "last committed state"
                )
