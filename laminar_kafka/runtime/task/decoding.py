"""A source partition's batch decoded: its values, and dead letters for the rest."""

from __future__ import annotations

from typing import Any

from laminar_kafka.api.specs import Flow
from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats.batch import decode_batch
from laminar_kafka.formats.format_check import FormatCheck
from laminar_kafka.operators.base import BatchContext


def decode_source(
    flow: Flow, datas: list[Any], offsets: list[int], ctx: BatchContext, check: FormatCheck
) -> tuple[list[Any], list[int]]:
    """The values that decode, with their offsets; the others are dead letters (or
    stop the task, when a source's first records are all in another encoding: `check`)."""
    fmt, topic = flow.source.value_format, ctx.topic
    values = decode_batch(fmt, datas)
    if values is not None:
        check.decoded(topic, datas)
        return values, offsets
    values, kept = [], []
    key = (topic, ctx.partition)
    for data, offset in zip(datas, offsets, strict=True):
        try:
            values.append(fmt.decode_one(data))
        except RecordDecodeError as exc:
            reason = check.failed(key, offset, data, fmt, str(exc))
            ctx.reject(offset, f"undecodable value: {reason}")
            continue
        kept.append(offset)
        check.decoded(topic, (data,))
    return values, kept
