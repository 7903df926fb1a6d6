"""The in-memory stand-ins for Kafka that `testing.memory` runs a pipeline against.

Input records are `MemoryMessage`s with the methods of confluent-kafka's
`Message` that the flow runner calls, placed in the partition a keyed producer
would pick (`partition_for`); output goes to a `MemoryOutput`, an
`OutputWriter` that holds records until `commit` (a checkpoint) or drops them on
`abort` (a crash), like a Kafka transaction seen by a read_committed reader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from laminar_kafka.api.pipeline import Flow, Pipeline
from laminar_kafka.errors import ConfigError, PipelineError, RecordDecodeError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.keyed import KeyByOp, key_bytes
from laminar_kafka.operators.partitioning import PARTITIONERS
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
        return None  # data records only: the tester never writes barriers


@dataclass(frozen=True)
class ProducedRecord:
    """An output record and the source partition whose processing wrote it."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[OutputHeader, ...]
    source: PartitionKey


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
        fields: dict[str, str] = {}
        for name, raw in record.headers:
            text = raw.decode() if isinstance(raw, bytes) else raw
            fields[name] = text or ""
        try:
            return cls(
                reason=fields["laminar.error"],
                source_topic=fields["laminar.source.topic"],
                partition=int(fields["laminar.source.partition"]),
                offset=int(fields["laminar.source.offset"]),
                value=record.value,
            )
        except (KeyError, ValueError) as exc:
            raise PipelineError(
                f"a record of dead-letter topic {record.topic} lacks its laminar headers: {exc}"
            ) from None


class MemoryOutput:
    """An `OutputWriter` with transaction semantics: pending until commit, dropped on abort.

    `source` names the partition being processed, so that committed output can
    be listed in an order that does not depend on how the input was chunked.
    """

    def __init__(self) -> None:
        self.source: PartitionKey = ("", -1)
        self.pending: list[ProducedRecord] = []
        self.committed: list[ProducedRecord] = []

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[OutputHeader] | None = None,
        /,
    ) -> None:
        self.pending.append(ProducedRecord(topic, key, value, tuple(headers or ()), self.source))

    def produce_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        /,
    ) -> None:
        source = self.source
        if keys is None:
            self.pending.extend(ProducedRecord(topic, None, v, (), source) for v in values)
        else:
            self.pending.extend(
                ProducedRecord(topic, k, v, (), source) for v, k in zip(values, keys, strict=True)
            )

    def commit(self) -> None:
        self.committed.extend(self.pending)
        self.pending.clear()

    def abort(self) -> None:
        self.pending.clear()


def partition_counts(pipeline: Pipeline, partitions: int | Mapping[str, int]) -> dict[str, int]:
    """Partitions per source topic: one count for all, or per topic (1 if not given)."""
    if isinstance(partitions, int):
        counts = dict.fromkeys(pipeline.source_topics, partitions)
    else:
        counts = {t: partitions.get(t, 1) for t in pipeline.source_topics}
        unknown = sorted(set(partitions) - set(counts))
        if unknown:
            raise ConfigError(f"partitions given for topics the pipeline does not read: {unknown}")
    for topic, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"topic {topic} needs at least 1 partition, not {n!r}")
    return counts


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


def partition_for(
    flows: Sequence[Flow], partitions: int, data: bytes | None, key: bytes | None, keyed: bool
) -> int:
    """The partition of one input record of the topic `flows` read.

    With an explicit record key (`keyed`), Kafka's producer partitioner of the
    topic's key_by (murmur2 by default); without, the first flow that keys the
    record decides; records nothing keys go to partition 0.
    """
    if partitions == 1:
        return 0
    if keyed:
        key_bys = [op for f in flows for op in f.operators if isinstance(op, KeyByOp)]
        partitioner = key_bys[0].partitioner if key_bys else "murmur2"
        return 0 if key is None else PARTITIONERS[partitioner](key, partitions)
    for flow in flows:
        routed = _routing_key(flow, data)
        if routed is not None:
            return PARTITIONERS[routed[1].partitioner](routed[0], partitions)
    return 0
