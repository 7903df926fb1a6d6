"""Numbered order events for exactly-once tests: produce them, read results back.

Every event has a unique `id`; a stateless pipeline is exactly-once when the ids
in its output equal the input ids as multisets, a keyed running total when its
k-th update per customer reflects that customer's first k orders
(`laminar_kafka.testing.order_checks`). `read_committed` reads a sink as a
read_committed consumer does, and fails on a control record: a barrier that
leaked into a sink is a bug, not something to skip.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from laminar_kafka.control.headers import is_control
from laminar_kafka.errors import LaminarError
from laminar_kafka.formats.avro import AvroFormat
from laminar_kafka.kafka.admin import watermark_offsets
from laminar_kafka.operators.partitioning import LIBRDKAFKA_PARTITIONER
from laminar_kafka.testing.order_checks import (
    CustomerOrders,
    ExactlyOnceReport,
    compare_ids,
    compare_totals,
)

__all__ = [
    "CommittedRecord",
    "CustomerOrders",
    "ExactlyOnceReport",
    "committed_end_offsets",
    "compare_ids",
    "compare_totals",
    "expected_totals",
    "order",
    "produce_orders",
    "read_committed",
    "read_committed_records",
]


PRODUCTS = 13
"""How many products `order` spreads its orders over."""


def order(i: int, customers: int = 10) -> dict[str, Any]:
    """Order `i`: customer `c<i mod customers>`, amount 1 + i mod 97, product `p<i mod 13>`.

    The amount is never 0; 13 products against 10 customers: each product's
    orders come from every customer, so from every partition of a keyed topic.
    """
    return {
        "id": i,
        "customer": f"c{i % customers}",
        "amount": 1 + i % 97,
        "ts_ms": 1_700_000_000_000 + i,
        "product": f"p{i % PRODUCTS}",
    }


def produce_orders(
    bootstrap: str,
    topic: str,
    ids: Iterable[int],
    customers: int = 10,
    value_format: AvroFormat | None = None,
) -> int:
    """Produce orders keyed by customer with Kafka's murmur2 partitioner; returns the count."""
    fmt = value_format or AvroFormat.from_schema("order")
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "partitioner": LIBRDKAFKA_PARTITIONER["murmur2"],
        }
    )
    failures: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    count = 0
    for i in ids:
        o = order(i, customers)
        while True:
            try:
                producer.produce(
                    topic, fmt.encode_one(o), o["customer"].encode(), on_delivery=delivered
                )
                break
            except BufferError:
                producer.poll(0.1)
        count += 1
    if producer.flush(60) or failures:
        raise LaminarError(f"producing orders failed: {failures[:1] or 'flush timed out'}")
    return count


def expected_totals(ids: Iterable[int], customers: int = 10) -> dict[str, CustomerOrders]:
    """customer → its orders among `ids`, in the order given (the order they were produced)."""
    ids_of: dict[str, list[int]] = {}
    amounts_of: dict[str, list[int]] = {}
    for i in ids:
        o = order(i, customers)
        ids_of.setdefault(o["customer"], []).append(i)
        amounts_of.setdefault(o["customer"], []).append(o["amount"])
    return {c: CustomerOrders(tuple(ids_of[c]), tuple(amounts_of[c])) for c in ids_of}


def committed_end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """partition → last stable offset for read_committed readers (end of committed data)."""
    return {p: end for p, (_, end) in _committed_ranges(bootstrap, topic).items()}


def _committed_ranges(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """partition → (log start, last stable offset): where committed data begins and ends."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "laminar-verify",
            "isolation.level": "read_committed",
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        # watermark_offsets retries what a topic created a moment ago answers at
        # first (unknown partition, not leader yet).
        return {p: watermark_offsets(consumer, topic, p) for p in meta.partitions}
    finally:
        consumer.close()


@dataclass(frozen=True)
class CommittedRecord:
    """A record a read_committed consumer found: where it sits, its key, value and headers."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int | None = None
    """The record's Kafka timestamp in ms (None when it has none)."""

    def header(self, name: str) -> str | None:
        """The value of the first header called `name`, as text; None when absent."""
        for key, raw in self.headers:
            if key == name:
                return None if raw is None else raw.decode(errors="replace")
        return None


def _header_pairs(
    headers: Mapping[str, str | bytes | None] | Sequence[tuple[str, str | bytes | None]] | None,
) -> tuple[tuple[str, bytes | None], ...]:
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    return tuple((k, v.encode() if isinstance(v, str) else v) for k, v in pairs)


def read_committed_records(
    bootstrap: str, topic: str, timeout_s: float = 60.0, skip_control: bool = False
) -> list[CommittedRecord]:
    """Every committed record of `topic` now, from its log start, in partition order.

    Raises LaminarError on a control record (a barrier, an ack...): no sink or
    dead-letter topic may ever hold one, so finding one is a bug to report. An
    internal topic holds barriers by design: read it with `skip_control`.
    """
    ranges = _committed_ranges(bootstrap, topic)
    ends = {p: end for p, (_, end) in ranges.items()}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "laminar-verify",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            # Records deleted meanwhile (an internal topic's purge) move the log start
            # past the first fetch: continue from the new start.
            "auto.offset.reset": "earliest",
        }
    )
    # From the log start, not offset 0: below it (a purged internal topic) the fetch is
    # out of range, which librdkafka reports with a warning before it resets.
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
    out: list[CommittedRecord] = []
    positions = {p: start for p, (start, _) in ranges.items()}
    deadline = time.monotonic() + timeout_s
    try:
        while any(positions[p] < ends[p] for p in ends):
            if time.monotonic() > deadline:
                raise LaminarError(f"reading {topic} did not reach its end within {timeout_s}s")
            for m in consumer.consume(1000, 0.5):
                partition, offset = m.partition(), m.offset()
                if m.error() is not None or partition is None or offset is None:
                    continue
                positions[partition] = offset + 1
                headers = m.headers()
                if is_control(headers) and skip_control:
                    continue
                if is_control(headers):
                    raise LaminarError(
                        f"a control record leaked into {topic} (partition {partition}, "
                        f"offset {offset}, headers {headers}): a sink must never hold one"
                    )
                out.append(
                    CommittedRecord(
                        partition,
                        offset,
                        m.key(),
                        m.value(),
                        _header_pairs(headers),
                        m.timestamp()[1] if m.timestamp()[0] else None,
                    )
                )
            # Markers of aborted/committed transactions occupy offsets but are
            # never delivered: the position is the consumer's, not the last record's.
            for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
                if tp.offset >= 0 and tp.partition is not None:
                    positions[tp.partition] = max(positions[tp.partition], tp.offset)
    finally:
        consumer.close()
    out.sort(key=lambda r: (r.partition, r.offset))
    return out


def read_committed(
    bootstrap: str,
    topic: str,
    decode: Callable[[bytes | None], Any],
    timeout_s: float = 60.0,
) -> list[Any]:
    """Every committed record of `topic` now, decoded, in partition order (control: an error)."""
    return [decode(r.value) for r in read_committed_records(bootstrap, topic, timeout_s)]
