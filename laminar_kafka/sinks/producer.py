"""What a task needs of its transactional producer, whatever carries it.

`KafkaTransaction` is the one a Spark worker uses; a transport that keeps its
logs in memory provides another. `TaskSinks` and the task loop see only this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from confluent_kafka import TopicPartition

from laminar_kafka.sinks.output import OutputHeader


class TransactionalProducer(Protocol):
    """One transactional id's producer: fence, then begin, produce, prepare, commit or abort.

    While a transaction is prepared (awaiting its decision) what is produced is
    staged for the next one (`staged` counts it); an abort drops it.
    """

    txn_id: str
    offsets_since: float | None
    """When (`waits.monotonic`) the call that hands the offsets of the prepared checkpoint to
    the consumer group's coordinator began, while it runs; None otherwise. The task's
    heartbeat reports it: librdkafka can hold that call forever (see `KafkaTransaction`)."""

    def init(self, timeout_s: float = 60.0) -> None:
        """Fence older producers of this id and abort what they left open."""
        ...

    def begin(self) -> None: ...

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[OutputHeader] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> None: ...

    def produce_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partitions: Sequence[int] | None = None,
        timestamps: Sequence[int | None] | None = None,
    ) -> None: ...

    @property
    def staged(self) -> int:
        """Records waiting for the next transaction."""
        ...

    def serve(self, timeout_s: float = 0.0) -> None:
        """Serve delivery reports (never blocks by default)."""
        ...

    def prepare(
        self,
        offsets: Sequence[TopicPartition],
        group_metadata: Any,
        timeout_s: float,
        checkpoint_id: int = 0,
    ) -> None:
        """Add the offsets (with their markers) to the transaction and make it durable."""
        ...

    def commit(self, timeout_s: float) -> None: ...

    def abort(self, timeout_s: float) -> None: ...

    def close(self) -> None: ...
