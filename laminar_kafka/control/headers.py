"""The Kafka header that marks a record as a control record.

Barriers share source partitions with user data, so every consumer checks
each record's headers: `is_control` is on that per-record path and stays a
few comparisons long. The header's value names the record type (b"barrier",
b"watermark", b"announcement", b"ack", b"heartbeat") for consumers that route
without decoding.

Control records also carry a reserved key, `CONTROL_KEY`, because a compacted
topic refuses records without a key. The key only makes them acceptable there:
the header alone marks a control record, so a data record that happens to use
the same key stays data.

A barrier that an upstream task writes into an internal topic also carries
`WRITER_HEADER`, b"task=<writer> generation=<generation>", so that the writer
shows in tools that print headers; consumers decode the barrier for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from laminar_kafka.control.records import Barrier, ControlRecord

__all__ = [
    "CONTROL_HEADER",
    "CONTROL_KEY",
    "WRITER_HEADER",
    "KafkaHeaders",
    "barrier_headers",
    "control_headers",
    "is_control",
]

CONTROL_HEADER = "laminar.control"
WRITER_HEADER = "laminar.writer"
CONTROL_KEY = b"__laminar.control__"

KafkaHeaders = list[tuple[str, str | bytes | None]]
"""Headers as confluent-kafka's `Producer.produce(headers=...)` is typed to take them."""


def control_headers(record: ControlRecord) -> KafkaHeaders:
    """Return the headers to produce `record` with: [(CONTROL_HEADER, b"<type>")]."""
    return [(CONTROL_HEADER, record.kind.encode("ascii"))]


def barrier_headers(barrier: Barrier) -> KafkaHeaders:
    """Return the headers to produce `barrier` with.

    The control header, then, when an upstream task wrote the barrier into an
    internal topic (`barrier.writer` is set), the writer header.
    """
    headers = control_headers(barrier)
    if barrier.writer is not None:
        value = f"task={barrier.writer} generation={barrier.generation}"
        headers.append((WRITER_HEADER, value.encode("ascii")))
    return headers


def is_control(
    headers: Sequence[tuple[str, str | bytes | None]] | Mapping[str, str | bytes | None] | None,
) -> bool:
    """Tell whether a consumed record carries the control header.

    Takes what confluent-kafka's `Message.headers()` returns: None when the
    record has no headers (the common case for data), else (key, value) pairs.
    """
    if not headers:
        return False
    if type(headers) is not list and isinstance(headers, Mapping):
        return CONTROL_HEADER in headers
    # A plain loop: any() over a generator takes about 2.5 times as long here.
    for key, _ in headers:  # noqa: SIM110
        if key == CONTROL_HEADER:
            return True
    return False
