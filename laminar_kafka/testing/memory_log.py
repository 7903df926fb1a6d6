"""The records of the in-memory transport and of the test kit's output.

A record in a `MemoryBroker` is a `MemoryMessage`, with the methods of
confluent-kafka's `Message` that the tasks call. The test kit lists a topic's
committed records as `ProducedRecord`s, and decodes them for the user as
`OutputRecord`s or `DeadLetterRecord`s; `Raw` is an input sent as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from laminar_kafka.errors import PipelineError, RecordDecodeError
from laminar_kafka.formats import Format
from laminar_kafka.kafka.dead_letter_format import DeadLetterOrigin
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.sinks.output import OutputHeader

TIMESTAMP_CREATE_TIME = 1
"""confluent-kafka's timestamp type of a producer-set timestamp."""


@dataclass(frozen=True)
class Raw:
    """An input record given as bytes, written as it is (say, one the source cannot decode)."""

    data: bytes | None


@dataclass(frozen=True)
class MemoryMessage:
    """A source record, read through the same methods as a confluent-kafka `Message`."""

    source_topic: str
    source_partition: int
    position: int
    record_key: bytes | None
    record_value: bytes | None
    timestamp_ms: int
    sequence: int = 0
    """An ordinal its writer may set (the in-memory broker leaves it 0)."""
    record_headers: tuple[OutputHeader, ...] = ()

    def topic(self) -> str:
        return self.source_topic

    def partition(self) -> int:
        return self.source_partition

    def offset(self) -> int:
        return self.position

    def key(self) -> bytes | None:
        return self.record_key

    def value(self) -> bytes | None:
        return self.record_value

    def timestamp(self) -> tuple[int, int]:
        return TIMESTAMP_CREATE_TIME, self.timestamp_ms

    def headers(self) -> list[OutputHeader] | None:
        return list(self.record_headers) or None

    def error(self) -> None:
        """A record read is never an error (a reader raises instead)."""
        return None


@dataclass(frozen=True)
class ProducedRecord:
    """An output record and the source partition whose processing wrote it."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[OutputHeader, ...]
    source: PartitionKey
    row: Any = None
    """A file sink's row as written (`topic` is then the sink's directory)."""
    timestamp_ms: int | None = None
    """The timestamp the pipeline set, None when it left it to the producer."""


@dataclass(frozen=True)
class OutputRecord:
    """A committed record of a sink topic, decoded: what a consumer of the topic reads."""

    value: Any
    key: Any
    headers: tuple[OutputHeader, ...]
    timestamp: int | None
    """As the pipeline set it; None where the producer's clock stamps it."""

    @classmethod
    def decoded(cls, record: ProducedRecord, values: Format, keys: Format | None) -> OutputRecord:
        """Decode `record`'s value, and its key when `keys` is given (else its bytes)."""
        key = record.key if keys is None else keys.decode_one(record.key)
        return cls(values.decode_one(record.value), key, record.headers, record.timestamp_ms)


@dataclass(frozen=True)
class DeadLetterRecord:
    """A record the pipeline sent to its dead-letter topic, read back from the headers."""

    reason: str
    source_topic: str
    partition: int
    offset: int
    value: bytes | None

    @classmethod
    def from_record(cls, record: ProducedRecord) -> DeadLetterRecord:
        """Parse the `laminar.*` headers the flow runner writes on every dead letter."""
        try:
            origin = DeadLetterOrigin.from_headers(record.headers)
        except RecordDecodeError as exc:
            raise PipelineError(
                f"a record of dead-letter topic {record.topic} lacks its laminar headers: {exc}"
            ) from None
        return cls(origin.reason, origin.topic, origin.partition, origin.offset, record.value)
