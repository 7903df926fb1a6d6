"""Numbered order events for exactly-once tests: produce them, read results back.

Every event has a unique `id`; a stateless pipeline is exactly-once when the ids
in its output equal the input ids as multisets, a keyed running total when the
last total per customer equals the sum of its inputs.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from laminar_kafka.control.headers import is_control
from laminar_kafka.errors import LaminarError
from laminar_kafka.formats.avro import AvroFormat
from laminar_kafka.operators.partitioning import LIBRDKAFKA_PARTITIONER


def order(i: int, customers: int = 10) -> dict[str, Any]:
    """Order number `i`: customer `c<i mod customers>`, amount 1 + i mod 97 (never 0)."""
    return {
        "id": i,
        "customer": f"c{i % customers}",
        "amount": 1 + i % 97,
        "ts_ms": 1_700_000_000_000 + i,
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


def expected_totals(ids: Iterable[int], customers: int = 10) -> dict[str, tuple[int, int]]:
    """customer → (number of orders, sum of amounts) for the given order ids."""
    totals: dict[str, tuple[int, int]] = {}
    for i in ids:
        o = order(i, customers)
        n, s = totals.get(o["customer"], (0, 0))
        totals[o["customer"]] = (n + 1, s + o["amount"])
    return totals


def committed_end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """partition → last stable offset for read_committed readers (end of committed data)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "laminar-verify",
            "isolation.level": "read_committed",
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in meta.partitions
        }
    finally:
        consumer.close()


def read_committed(
    bootstrap: str,
    topic: str,
    decode: Callable[[bytes | None], Any],
    timeout_s: float = 60.0,
) -> list[Any]:
    """Every committed, non-control record of `topic` now, decoded, in partition order."""
    ends = committed_end_offsets(bootstrap, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "laminar-verify",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    out: list[Any] = []
    positions = dict.fromkeys(ends, 0)
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
                if not is_control(m.headers()):
                    out.append(decode(m.value()))
            # Markers of aborted/committed transactions occupy offsets but are
            # never delivered: the position is the consumer's, not the last record's.
            for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
                if tp.offset >= 0 and tp.partition is not None:
                    positions[tp.partition] = max(positions[tp.partition], tp.offset)
    finally:
        consumer.close()
    return out


@dataclass(frozen=True)
class ExactlyOnceReport:
    records: int
    duplicates: int
    losses: int

    @property
    def exact(self) -> bool:
        return self.duplicates == 0 and self.losses == 0


def compare_ids(expected: Iterable[int], seen: Iterable[int]) -> ExactlyOnceReport:
    """Multiset comparison of input ids with the ids found in the output."""
    want, got = Counter(expected), Counter(seen)
    duplicates = sum((got - want).values())
    losses = sum((want - got).values())
    return ExactlyOnceReport(sum(want.values()), duplicates, losses)


def compare_totals(
    expected: dict[str, tuple[int, int]], outputs: Iterable[dict[str, Any]]
) -> ExactlyOnceReport:
    """Keyed running totals: each customer's emitted counts must be exactly 1..n, once each.

    A duplicated input shows as a count seen twice (or a final count above n),
    a lost one as a gap; the last total must also equal the expected sum.
    """
    counts: dict[str, Counter[int]] = {}
    final: dict[str, dict[str, Any]] = {}
    for out in outputs:
        c = out["customer"]
        counts.setdefault(c, Counter())[out["orders"]] += 1
        if out["orders"] >= final.get(c, {"orders": -1})["orders"]:
            final[c] = out
    duplicates = losses = 0
    for customer, (n, amount) in expected.items():
        seen = counts.get(customer, Counter())
        duplicates += sum(v - 1 for v in seen.values() if v > 1) + sum(
            v for k, v in seen.items() if k > n
        )
        losses += sum(1 for k in range(1, n + 1) if k not in seen)
        last = final.get(customer)
        if last is not None and last["orders"] == n and last["amount"] != amount:
            duplicates += 1  # same count, wrong sum: an input replaced by another
    return ExactlyOnceReport(sum(n for n, _ in expected.values()), duplicates, losses)
