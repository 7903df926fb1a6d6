"""Writes a flow's output to its sink: a topic, an internal topic or files.

Values are encoded a batch at a time; a value, key or record the sink cannot
take is a dead letter with the reason and its source offset, never a failed
transaction (a record the broker refuses would fail every replay of its
checkpoint).

A window's result is stamped with the event time it carries, its window's end
(`ResultOffset`), unless its sink sets `timestamp=`; so is a record into an internal
topic, where the next stage reads event time from the Kafka timestamp.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from laminar_kafka.api.specs import EVENT_TIME, Flow
from laminar_kafka.formats.batch import encode_batch
from laminar_kafka.formats.internal import InternalFormat
from laminar_kafka.operators.base import BatchContext, describe_error, result_time
from laminar_kafka.runtime.task.event_clock import event_times_of
from laminar_kafka.runtime.task.internal_messages import as_messages
from laminar_kafka.runtime.task.routing import longest, reject_too_large, route
from laminar_kafka.runtime.task.stamped_output import write_stamped
from laminar_kafka.sinks.output import OutputWriter


def write_sink(
    flow: Flow,
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
    txn: OutputWriter,
    partition_counts: Mapping[str, int],
    limits: Mapping[str, int],
    read: Mapping[int, bytes | None] | None = None,
) -> int:
    """Write `values` to the flow's sink; returns how many were written.

    `partition_counts` holds the internal topics' partitions, `limits` the largest
    record each topic accepts; `read` the bytes each source offset's record was read
    as, written instead of encoding the values again (`Flow.writes_source_bytes`).
    """
    if not values:
        return 0
    sink = flow.sink
    if sink.files is not None:
        rejected = txn.write_rows(sink.url, sink.files, values)
        for i, reason in rejected:
            ctx.reject(offsets[i], f"{reason} (file sink {sink.url})")
        return len(values) - len(rejected)
    limit = limits.get(sink.topic)
    if sink.internal:
        count = partition_counts[sink.topic]
        times = None
        if sink.timestamp == EVENT_TIME:  # the next stage reads event time from it
            routed_offsets: list[int] = []
            routed = route(sink, values, offsets, ctx, count, limit, routed_offsets)
            times = event_times_of(routed_offsets, ctx)
        else:
            routed = route(sink, values, offsets, ctx, count, limit)
        if isinstance(sink.value_format, InternalFormat):  # many records per message
            txn.produce_batch(sink.topic, *as_messages(routed, times, limit))
        else:
            txn.produce_batch(sink.topic, *routed, times)
        return len(routed[0])
    if sink.stamps:
        return write_stamped(sink, values, offsets, ctx, txn, limit)
    datas = (
        [read[o] for o in offsets] if read is not None else encode_batch(sink.value_format, values)
    )
    keys: list[bytes | None] | None = None
    if datas is not None and sink.key is not None:
        try:
            keys = encode_batch(sink.key_format, sink.keys_of(values))
        except Exception:  # the user's key function: each record's own error, below
            keys = None
        if keys is None:
            datas = None
    if datas is None:
        datas, keys, offsets = _encode_one_by_one(flow, values, offsets, ctx, read)
    if limit is not None and datas and longest(datas) + longest(keys) > limit:
        datas, keys, offsets = _drop_oversized(sink.topic, limit, datas, keys, offsets, ctx)
    if flow.runs_on_watermark:  # a window's result carries its end, a timer's its time
        txn.produce_batch(sink.topic, datas, keys, None, [result_time(o) for o in offsets])
    else:
        txn.produce_batch(sink.topic, datas, keys)
    return len(datas)


def _encode_one_by_one(
    flow: Flow,
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
    read: Mapping[int, bytes | None] | None,
) -> tuple[list[bytes | None], list[bytes | None] | None, list[int]]:
    """Each value and key on its own, so that a bad one is a dead letter with its reason
    (a value written as read, `read`, is not encoded again)."""
    sink = flow.sink
    datas: list[bytes | None] = []
    keys: list[bytes | None] = []
    kept: list[int] = []
    for value, offset in zip(values, offsets, strict=True):
        try:
            data = read[offset] if read is not None else sink.value_format.encode_one(value)
            key = None
            if sink.key is not None:
                key = sink.key_format.encode_one(sink.key_of(value))
        except Exception as exc:  # user code, or a value its format cannot write
            ctx.reject(offset, describe_error(f"output for {sink.topic}", exc))
            continue
        datas.append(data)
        keys.append(key)
        kept.append(offset)
    return datas, (keys if sink.key is not None else None), kept


def _drop_oversized(
    topic: str,
    limit: int,
    datas: list[bytes | None],
    keys: list[bytes | None] | None,
    offsets: list[int],
    ctx: BatchContext,
) -> tuple[list[bytes | None], list[bytes | None] | None, list[int]]:
    """Keep the records `topic` accepts, with their offsets; the others are dead letters,
    never a poison pill.

    A record the broker refuses would fail the checkpoint's transaction, and the
    replay after the abort would fail it again, forever.
    """

    def reason(size: int) -> str:
        return (
            f"output of {size} bytes is larger than {topic} accepts ({limit} bytes: "
            "the topic's max.message.bytes or the producer's message.max.bytes)"
        )

    keep = reject_too_large(limit, datas, keys, offsets, ctx, reason)
    return (
        [datas[i] for i in keep],
        [keys[i] for i in keep] if keys is not None else None,
        [offsets[i] for i in keep],
    )
