"""What the flow runner writes its output and dead letters into.

A structural type, so that the task's `KafkaTransaction` and the in-memory
writer of `laminar_kafka.testing` both fit without a common base class: the
flow runner only ever produces records, it never commits or aborts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from laminar_kafka.sinks.file_output import FileOutput
from laminar_kafka.sinks.file_rows import Rejected

OutputHeader = tuple[str, str | bytes | None]


class OutputWriter(Protocol):
    """Accepts records for sink topics; when they become visible is the writer's business."""

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        headers: Sequence[OutputHeader] | None,
        timestamp: int | None = None,
        /,
    ) -> None:
        """One record (a dead letter, or a record with headers or a timestamp of its own;
        without a timestamp the producer stamps it)."""
        ...

    def produce_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partitions: Sequence[int] | None = None,
        timestamps: Sequence[int | None] | None = None,
        /,
    ) -> None:
        """Many records of one topic; `keys[i]` is the key of `values[i]`, if keys are
        given, `partitions[i]` its partition, if given (else the producer's choice), and
        `timestamps[i]` its timestamp in ms, if given (else the producer's clock)."""
        ...

    def write_rows(self, url: str, output: FileOutput, values: Sequence[Any], /) -> Rejected:
        """Rows for the file sink at `url`; those it cannot write come back with the reason."""
        ...
