"""The in-memory stand-ins for Kafka that `testing.memory` runs a pipeline against.

Input records are `MemoryMessage`s with the methods of confluent-kafka's
`Message` that the flow runner calls, placed in the partition a keyed producer
would pick (`partition_for`); output goes to a `MemoryOutput`, an
`OutputWriter` that holds records until `commit` (a checkpoint) or drops them on
`abort` (a crash), like a Kafka transaction seen by a read_committed reader.
Records for an internal topic (between two stages) go straight to its log
instead, at the partition the flow runner routed them to.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from laminar_kafka.api.pipeline import Flow, SourceSpec
from laminar_kafka.errors import PipelineError, RecordDecodeError
from laminar_kafka.formats import Format
from laminar_kafka.kafka.dead_letter_format import DeadLetterOrigin
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.keyed import KeyByOp, key_bytes
from laminar_kafka.operators.partitioning import PARTITIONERS
from laminar_kafka.sinks.file_output import FileOutput
from laminar_kafka.sinks.file_rows import EpochRows, Rejected
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
    """Send order of the input record it comes from: orders an internal log's unread records."""
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


class MemoryOutput:
    """An `OutputWriter` with transaction semantics: pending until commit, dropped on abort.

    `source` names the partition being processed, so that committed output can
    be listed in an order that does not depend on how the input was chunked.
    Records of the `internal` topics are appended to their partition's log in
    `logs` at once (stamped `timestamp_ms` and `sequence`): the next stage reads
    them in the same checkpoint, and a crash cuts the logs back (`MemoryTopics.rewind`).
    """

    def __init__(
        self,
        logs: dict[PartitionKey, list[MemoryMessage]] | None = None,
        internal: Collection[str] = (),
    ) -> None:
        self.source: PartitionKey = ("", -1)
        self.timestamp_ms = 0
        self.sequence = 0
        self.pending: list[ProducedRecord] = []
        self.committed: list[ProducedRecord] = []
        self.logs = logs if logs is not None else {}
        self.internal = internal

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[OutputHeader] | None = None,
        timestamp: int | None = None,
        /,
    ) -> None:
        if topic in self.internal:
            raise PipelineError(f"a record for internal topic {topic} without its partition")
        self.pending.append(
            ProducedRecord(topic, key, value, tuple(headers or ()), self.source, None, timestamp)
        )

    def produce_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partitions: Sequence[int] | None = None,
        timestamps: Sequence[int | None] | None = None,
        /,
    ) -> None:
        key_list = list(keys) if keys is not None else [None] * len(values)
        stamps = list(timestamps) if timestamps is not None else [None] * len(values)
        if topic in self.internal:
            if partitions is None:
                raise PipelineError(f"records for internal topic {topic} without partitions")
            for v, k, p, t in zip(values, key_list, partitions, stamps, strict=True):
                log = self.logs.get((topic, p))
                if log is None:
                    raise PipelineError(f"internal topic {topic} has no partition {p}")
                at = self.timestamp_ms if t is None else t
                log.append(MemoryMessage(topic, p, len(log), k, v, at, self.sequence))
            return
        source = self.source
        self.pending.extend(
            ProducedRecord(topic, k, v, (), source, None, t)
            for v, k, t in zip(values, key_list, stamps, strict=True)
        )

    def at(self, key: PartitionKey) -> None:
        """What follows is written by the processing of partition `key`."""
        self.source = key

    def write_rows(self, url: str, output: FileOutput, values: Sequence[Any], /) -> Rejected:
        """Rows of a file sink, checked as the real sink checks them."""
        rejected = EpochRows(output).add(values)
        bad = {i for i, _ in rejected}
        source = self.source
        self.pending.extend(
            ProducedRecord(url, None, None, (), source, v)
            for i, v in enumerate(values)
            if i not in bad
        )
        return rejected

    def commit(self) -> None:
        self.committed.extend(self.pending)
        self.pending.clear()

    def abort(self) -> None:
        self.pending.clear()


def _routing_key(flow: Flow, data: bytes | None) -> tuple[bytes, KeyByOp] | None:
    """The record key a producer partitioning by the flow's first key_by would set.

    Runs the operators before that key_by on a scratch context; None when the
    record does not decode, is filtered out or has no key (any partition will do).
    """
    try:
        values: list[Any] = [flow.source.value_format.decode_one(data)]
    except RecordDecodeError:
        return None
    offsets = [0]
    scratch = BatchContext(flow.source.topic, 0, 1)  # one partition: owns all keys
    for op in flow.operators:
        if isinstance(op, KeyByOp):
            pairs, _ = op.apply(values, offsets, scratch)
            return (key_bytes(pairs[0][0]), op) if pairs else None
        values, offsets = op.apply(values, offsets, scratch)
        if not values:
            return None
    return None


def _declared_key(source: SourceSpec, data: bytes | None) -> bytes | None:
    """The key of a record by the `partitioned_by` its source declares; None if it has none."""
    spec = source.partitioned_by
    try:
        value = source.value_format.decode_one(data)
        key = spec(value) if callable(spec) else value[spec]
    except Exception:  # undecodable, or the user's key function: any partition will do
        return None
    return None if key is None else key_bytes(key)


def partition_for(
    flows: Sequence[Flow], partitions: int, data: bytes | None, key: bytes | None, keyed: bool
) -> int:
    """The partition of one input record of the source topic `flows` read.

    Only flows reading a source topic count (not those reading internal topics).
    With an explicit record key (`keyed`), Kafka's producer partitioner of the
    topic (its declared one, murmur2 by default). Without, a topic declared
    `partitioned_by` puts the record where its key maps to; else the first flow
    that keys the record in its own stage decides; records nothing keys there
    (say, those a key_by repartitions) go to partition 0.
    """
    flows = [f for f in flows if not f.source.internal]
    if partitions == 1:
        return 0
    declared = next((f.source for f in flows if f.source.partitioned_by is not None), None)
    if keyed:
        if key is None:
            return 0
        key_bys = [op for f in flows for op in f.operators if isinstance(op, KeyByOp)]
        partitioner = (
            declared.partitioner if declared else key_bys[0].partitioner if key_bys else "murmur2"
        )
        return PARTITIONERS[partitioner](key, partitions)
    if declared is not None:
        found = _declared_key(declared, data)
        return 0 if found is None else PARTITIONERS[declared.partitioner](found, partitions)
    for flow in flows:
        routed = _routing_key(flow, data)
        if routed is not None:
            return PARTITIONERS[routed[1].partitioner](routed[0], partitions)
    return 0
