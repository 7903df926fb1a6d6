"""What the step-by-step tester appends for records sent to a source or table topic:
their bytes, record keys and partitions, as a producer of that topic would write them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.errors import ConfigError, PipelineError, RecordDecodeError
from laminar_kafka.formats import Format
from laminar_kafka.operators.join import TableSpec
from laminar_kafka.operators.keyed import key_bytes
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.testing.memory_log import Raw, partition_for

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
