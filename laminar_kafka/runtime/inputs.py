"""A task's input partitions: where each one stands, which are held at a barrier.

The aligner (barriers/aligner.py) only counts barriers and decides; this part
only blocks, resumes and rewinds partitions, as the aligner's decisions and the
checkpoint's outcome ask. A held partition is paused in the reader; whatever
was fetched past its barrier is read again from its position when released.
"""

from __future__ import annotations

from collections.abc import Mapping

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.ports import SourceReader
from laminar_kafka.sources.kafka_reader import KafkaMessage


class TaskInputs:
    """The positions of a task's partitions and the partitions held at a barrier."""

    def __init__(self, reader: SourceReader) -> None:
        self.reader = reader
        self.positions: dict[PartitionKey, int] = {}
        """Partition → the offset of the next record to process."""
        self.held: set[PartitionKey] = set()
        self.fresh: frozenset[PartitionKey] = frozenset()
        """Partitions that started without a checkpoint (runtime/table_bootstrap.py)."""

    def start(self, positions: Mapping[PartitionKey, int]) -> None:
        self.positions = dict(positions)
        self.reader.assign(dict(self.positions))

    def poll(self, timeout_s: float) -> list[KafkaMessage]:
        return self.reader.poll(timeout_s)

    def advance(self, key: PartitionKey, next_offset: int) -> None:
        self.positions[key] = next_offset

    def hold(self, key: PartitionKey, at: int | None = None) -> None:
        """Pause `key`; with `at`, it will be read again from that offset."""
        self.reader.pause(key)
        self.held.add(key)
        if at is not None:
            self.positions[key] = at

    def reread(self, keys: set[PartitionKey]) -> None:
        """Read these partitions again from their positions (what followed was dropped)."""
        keys = keys - self.held
        if keys:
            self.reader.continue_at({k: self.positions[k] for k in keys})

    def release_held(self) -> None:
        """After a commit: held partitions resume past their barrier, the rest read on."""
        if self.held:
            self.reader.continue_at({k: self.positions[k] for k in self.held})
        self.held.clear()

    def rewind(self, positions: Mapping[PartitionKey, int]) -> None:
        """After an abort: every partition restarts at the given positions."""
        self.positions = dict(positions)
        # Re-assigning rather than seeking: a seek on a partition that has not
        # started fetching yet fails with an erroneous-state error.
        self.reader.reposition(self.positions)
        self.held.clear()

    def group_metadata(self) -> object:
        """What a transaction needs to commit offsets for this reader's group."""
        return self.reader.group_metadata
