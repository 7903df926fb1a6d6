"""What the test kit appends for records sent to a source or table topic: their bytes,
record keys and partitions, as a producer of that topic would write them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from laminar_kafka.api.pipeline import Flow, Pipeline, SourceSpec
from laminar_kafka.errors import ConfigError, PipelineError, RecordDecodeError
from laminar_kafka.formats import Format
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.join import TableSpec
from laminar_kafka.operators.keyed import KeyByOp, key_bytes
from laminar_kafka.operators.partitioning import PARTITIONERS, murmur2_partition
from laminar_kafka.testing.memory_log import Raw

Encoded = tuple[bytes | None, bytes | None, int]
"""A record's value bytes (None: a tombstone), key bytes and partition."""


def encode_inputs(
    pipeline: Pipeline, topic: str, count: int, values: list[Any], keys: Sequence[Any] | None
) -> list[Encoded]:
    """Each value (and key) sent to `topic`, encoded with the topic's formats and placed as
    its producer would: every value is encoded before any is appended, so a bad one leaves
    the input as it was.

    A stream record goes where `partition_for` says. A table record needs a key (its
    table's key format encodes it) and goes to the partition murmur2 of it picks, where
    the join looks it up; a value None is a tombstone.
    """
    table = next((t for f in pipeline.flows for t in f.tables if t.topic == topic), None)
    if table is not None:
        return _table_records(table, count, values, keys)
    flows = [f for f in pipeline.flows if f.source.topic == topic]
    if not flows:
        raise ConfigError(f"pipeline {pipeline.name!r} does not read topic {topic!r}")
    found: list[Encoded] = []
    for i, value in enumerate(values):
        data = _encode(flows[0].source.value_format, topic, value, i)
        raw_key = None if keys is None or keys[i] is None else key_bytes(keys[i])
        found.append((data, raw_key, partition_for(flows, count, data, raw_key, keys is not None)))
    return found


def _table_records(
    table: TableSpec, count: int, values: list[Any], keys: Sequence[Any] | None
) -> list[Encoded]:
    if keys is None:
        raise ConfigError(f"send to table {table.topic}: pass keys=, a row's key is its table key")
    found: list[Encoded] = []
    for i, (value, key) in enumerate(zip(values, keys, strict=True)):
        data = None if value is None else _encode(table.value_format, table.topic, value, i)
        raw_key = _encode(table.key_format, table.topic, key, i)
        found.append((data, raw_key, murmur2_partition(raw_key or b"", count)))
    return found


def _encode(fmt: Format, topic: str, value: Any, index: int) -> bytes | None:
    if isinstance(value, Raw):
        return value.data
    try:
        return fmt.encode_one(value)
    except RecordDecodeError as exc:
        raise PipelineError(
            f"input #{index} for {topic} cannot be encoded as {fmt.name}: {exc} "
            "(wrap bytes in Raw(...) to send them as they are)"
        ) from None


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
