"""Writes a sink's records one by one when the sink sets headers or timestamps.

A sink with `headers=` or `timestamp=` needs a value, a key, headers and a
timestamp per record, each from user code that may raise or return the wrong
type. Any of those failing makes that record a dead letter with the reason and
its source offset; the others are written. Sinks without them keep the batch
path of `processing.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from laminar_kafka.api.specs import SOURCE_TIME, SinkSpec
from laminar_kafka.operators.base import BatchContext, describe_error, result_time
from laminar_kafka.operators.event_time import kafka_times
from laminar_kafka.sinks.output import OutputHeader, OutputWriter


def write_stamped(
    sink: SinkSpec,
    values: Sequence[Any],
    offsets: Sequence[int],
    ctx: BatchContext,
    txn: OutputWriter,
    limit: int | None,
) -> int:
    """Write `values` to `sink`'s topic with their keys, headers and timestamps.

    Returns how many were written; the rest are dead letters in `ctx`.
    `limit` is the largest record the topic accepts (key + value), if known.
    """
    source_times = kafka_times(ctx.messages) if sink.timestamp == SOURCE_TIME else {}
    written = 0
    for value, offset in zip(values, offsets, strict=True):
        try:
            data = sink.value_format.encode_one(value)
            key = sink.key_format.encode_one(sink.key_of(value)) if sink.key is not None else None
            headers = header_list(sink.headers(value)) if sink.headers is not None else None
            stamp = _timestamp(sink, value, offset, source_times.get(offset))
        except Exception as exc:  # user code, or a value its format cannot write
            ctx.reject(offset, describe_error(f"output for {sink.topic}", exc))
            continue
        size = len(data or b"") + len(key or b"")
        if limit is not None and size > limit:
            ctx.reject(
                offset,
                f"output of {size} bytes is larger than {sink.topic} accepts ({limit} bytes)",
            )
            continue
        txn.produce(sink.topic, data, key, headers, stamp)
        written += 1
    return written


def header_list(found: Any) -> list[OutputHeader]:
    """Headers as Kafka takes them, from a mapping or (name, value) pairs.

    Names are strings; values strings, bytes or None; None instead of headers
    means none. Anything else raises TypeError naming what was found, which the
    caller turns into a dead letter.
    """
    if found is None:
        return []
    pairs: Iterable[Any] = found.items() if isinstance(found, Mapping) else found
    if isinstance(found, str | bytes) or not isinstance(pairs, Iterable):
        raise TypeError(f"headers must be a mapping or (name, value) pairs, not {found!r}")
    out: list[OutputHeader] = []
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"a header must be a (name, value) pair, not {pair!r}")
        name, value = pair
        if not isinstance(name, str):
            raise TypeError(f"a header name must be a str, not {name!r}")
        if value is not None and not isinstance(value, str | bytes):
            raise TypeError(f"header {name!r} must be str, bytes or None, not {value!r}")
        out.append((name, value))
    return out


def _timestamp(sink: SinkSpec, value: Any, offset: int, source_time: int | None) -> int | None:
    """The sink's choice; without one, what the output carries (a window result its end)."""
    spec = sink.timestamp
    if spec is None:
        return result_time(offset)
    if spec == SOURCE_TIME:
        return source_time
    stamp = spec(value) if callable(spec) else value[spec]
    if type(stamp) is not int or stamp < 0:
        raise TypeError(
            f"a timestamp must be an int of milliseconds since the epoch, not {stamp!r}"
        )
    return stamp
