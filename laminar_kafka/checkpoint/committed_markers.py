"""Which checkpoint each partition's committed offset marker names, read on the driver.

Retention must keep every checkpoint a marker names; `checkpoint inspection`
shows them. Reading committed offsets does not join the group.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from laminar_kafka import waits
from laminar_kafka.checkpoint.markers import OffsetMarker, parse_marker
from laminar_kafka.checkpoint.run_start import follow_markers
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.clients import KafkaConnection, committed_offsets_reader
from laminar_kafka.kafka.names import PartitionKey, consumer_group

log = logging.getLogger(__name__)

_COORDINATOR_MOVING = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
)


class OffsetsReader(Protocol):
    """Reads a group's committed offsets (a confluent-kafka `Consumer` of that group)."""

    def committed(
        self, partitions: list[TopicPartition], timeout: float = ...
    ) -> list[TopicPartition]: ...

    def close(self) -> None: ...


class CommittedMarkers:
    """Reads the pipeline group's committed markers for a fixed set of partitions.

    `reader` replaces the Kafka client that reads them (the in-memory transport's).
    """

    def __init__(
        self,
        kafka: KafkaConnection,
        pipeline: str,
        partitions: Sequence[PartitionKey],
        store: CheckpointStore | None = None,
        reader: OffsetsReader | None = None,
    ) -> None:
        self._store = store
        self._partitions = [TopicPartition(t, p) for t, p in partitions]
        self._consumer: OffsetsReader = reader or committed_offsets_reader(
            kafka, consumer_group(pipeline)
        )

    def read(self, timeout_s: float = 10.0) -> dict[PartitionKey, OffsetMarker | None]:
        """Partition → the marker its committed offset carries, if any."""
        return {k: parse_marker(tp.metadata) for k, tp in self._committed(timeout_s).items()}

    def offsets(self, timeout_s: float = 10.0) -> dict[PartitionKey, int | None]:
        """Partition → its committed offset, if it has one."""
        found = self._committed(timeout_s)
        return {k: (tp.offset if tp.offset >= 0 else None) for k, tp in found.items()}

    def _committed(self, timeout_s: float) -> dict[PartitionKey, TopicPartition]:
        deadline = waits.monotonic() + timeout_s
        while True:
            try:
                found = self._consumer.committed(self._partitions, timeout=timeout_s)
                return {(tp.topic, tp.partition): tp for tp in found}
            except KafkaException as exc:
                # A broker that just started may not have elected the group's
                # coordinator yet (NOT_COORDINATOR): that passes, so ask again.
                err = exc.args[0] if exc.args else None
                transient = isinstance(err, KafkaError) and err.code() in _COORDINATOR_MOVING
                if not transient or waits.monotonic() > deadline:
                    raise LaminarError(f"cannot read the committed offset markers: {exc}") from None
            waits.sleep(0.2)

    def lowest(self) -> int | None:
        """The lowest checkpoint id any partition's marker names, or the run's recorded
        start while a partition may resume from it (`checkpoint/run_start.py`); None if
        neither.

        Seeing one is noted in the store: from then on, markers that vanish were lost.

        When the markers cannot be read now, 0: retention then deletes nothing.
        """
        try:
            markers = self.read()
        except LaminarError as exc:
            log.warning("cannot read committed offset markers, keeping all checkpoints: %s", exc)
            return 0
        ids = [m.checkpoint_id for m in markers.values() if m is not None]
        if self._store is not None:
            if ids:
                self._store.note_markers_seen()
            try:
                start = follow_markers(self._store, markers)
            except LaminarError as exc:
                log.warning("cannot update the run's start record, keeping all: %s", exc)
                return 0
            ids += [start] if start is not None else []
        return min(ids) if ids else None

    def close(self) -> None:
        self._consumer.close()


def read_markers(
    kafka: KafkaConnection, pipeline: str, partitions: Sequence[PartitionKey], timeout_s: float = 30
) -> dict[PartitionKey, OffsetMarker | None]:
    """The markers committed now for `partitions`, read once by a reader of its own."""
    markers = CommittedMarkers(kafka, pipeline, partitions)
    try:
        return markers.read(timeout_s)
    finally:
        markers.close()
