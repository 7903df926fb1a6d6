"""Everything one task writes in a checkpoint: its Kafka transaction and its file sinks.

The participant drives this as its one two-phase sink. The order inside each
phase matters:

- prepare: files are staged before the Kafka transaction is flushed, so that an
  Ack(ok) always means both are durable;
- commit: the Kafka transaction commits first; it carries the offset marker that
  *is* the decision for the files too, so files are published only after it
  (a crash in between is repaired by recovery, see sinks/file_recovery.py);
- abort: both roll back; staged files are deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import TopicPartition

from laminar_kafka import faults
from laminar_kafka.faults import FaultPoint
from laminar_kafka.sinks.file_output import FileOutput
from laminar_kafka.sinks.file_rows import Rejected
from laminar_kafka.sinks.file_transaction import FileTransaction
from laminar_kafka.sinks.output import OutputHeader
from laminar_kafka.sinks.producer import TransactionalProducer


class TaskSinks:
    """One task's Kafka transaction and file sinks, committed and aborted together."""

    def __init__(
        self, kafka: TransactionalProducer, files: FileTransaction | None, task: int
    ) -> None:
        self.kafka = kafka
        self.files = files
        self.txn_id = kafka.txn_id
        self._task = task
        self._checkpoint = 0
        self._staged: list[str] = []

    # -- output (the flow runner's OutputWriter) --------------------------
    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[OutputHeader] | None = None,
        timestamp: int | None = None,
        /,
    ) -> None:
        self.kafka.produce(topic, value, key, headers, timestamp=timestamp)

    def produce_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partitions: Sequence[int] | None = None,
        timestamps: Sequence[int | None] | None = None,
        /,
    ) -> None:
        self.kafka.produce_batch(topic, values, keys, partitions, timestamps)

    def write_rows(self, url: str, output: FileOutput, values: Sequence[Any], /) -> Rejected:
        assert self.files is not None, "a file sink without a file transaction"
        return self.files.add(url, values)

    # -- two phases (the participant's TwoPhaseSink) ----------------------
    def handles(self) -> dict[str, str]:
        """For the Ack: the transactional id, and each staged folder of this checkpoint."""
        found = {"kafka": self.txn_id}
        found.update({f"files-{i}": folder for i, folder in enumerate(self._staged)})
        return found

    def begin(self) -> None:
        self.kafka.begin()
        if self.files is not None:
            self.files.begin()

    def prepare(
        self,
        offsets: list[TopicPartition],
        group_metadata: Any,
        timeout_s: float,
        checkpoint_id: int = 0,
    ) -> None:
        self._checkpoint = checkpoint_id
        if self.files is not None:
            partitions = [(tp.topic, tp.partition) for tp in offsets]
            self._staged = self.files.prepare(checkpoint_id, partitions)
        self.kafka.prepare(offsets, group_metadata, timeout_s, checkpoint_id)

    def commit(self, timeout_s: float) -> None:
        self.kafka.commit(timeout_s)
        if self.files is not None:
            faults.crash_here(FaultPoint.FILES_UNPUBLISHED, self._checkpoint, self._task)
            self.files.commit()
        self._staged = []

    def abort(self, timeout_s: float) -> None:
        self.kafka.abort(timeout_s)
        if self.files is not None:
            self.files.abort()
        self._staged = []
