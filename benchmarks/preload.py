"""Fill a fresh topic with N benchmark records, fast.

One idempotent producer (acks=all) with large batches and a short linger. Keys
go to partitions by Kafka's murmur2 partitioner (the Java client's default, not
librdkafka's CRC32 one): laminar-kafka's `key_by` needs its source partitioned
that way; the other systems do not care. The producer is not transactional, so
the topic's end offsets add up to exactly the records written; `produce_values`
checks that sum after the flush, so a lost or duplicated record fails the load
instead of skewing a benchmark.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import KafkaError, Message, Producer

from benchmarks.event_input import EventInput
from benchmarks.progress import Progress
from benchmarks.records import DEFAULT_NUM_KEYS, encode_record, make_record
from benchmarks.topics import TopicMaker, new_topic_maker, topic_size
from laminar_kafka.errors import BrokerError
from laminar_kafka.operators.partitioning import LIBRDKAFKA_PARTITIONER

__all__ = [
    "PRODUCER_CONFIG",
    "PacedInput",
    "ProduceResult",
    "encoded_inputs",
    "preload",
    "produce_values",
]

PRODUCER_CONFIG: Final[dict[str, Any]] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "batch.num.messages": 20_000,
    "queue.buffering.max.messages": 1_000_000,
    "compression.type": "none",
    "partitioner": LIBRDKAFKA_PARTITIONER["murmur2"],
}

_FLUSH_TIMEOUT_S: Final = 120.0


@dataclass(frozen=True)
class ProduceResult:
    """How many records a produce phase delivered, and how long it took."""

    topic: str
    records: int
    seconds: float


def encoded_inputs(records: int, num_keys: int = DEFAULT_NUM_KEYS) -> Iterator[tuple[bytes, bytes]]:
    """`(key, value)` of input records 0..records-1, encoded."""
    for record_id in range(records):
        record = make_record(record_id, num_keys)
        yield record["key"].encode(), encode_record(record)


def produce_values(
    bootstrap: str,
    topic: str,
    items: Iterable[tuple[bytes, bytes] | tuple[bytes, bytes, int]],
    expected: int,
    *,
    progress: bool = True,
) -> ProduceResult:
    """Produce `items` to an empty `topic`, flush, and check the topic holds `expected`.

    An item is `(key, value)`, stamped by the producer, or `(key, value, timestamp)`
    with its own timestamp (ms). Timed from the first `produce()` to the end of the flush.
    """
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(err)

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    meter = Progress(f"produce {topic}", expected, enabled=progress)
    sent = 0
    start = time.monotonic()
    for key, value, *stamp in items:
        while True:
            try:
                # timestamp 0: the producer's clock
                producer.produce(
                    topic, value, key, on_delivery=on_delivery, timestamp=stamp[0] if stamp else 0
                )
                break
            except BufferError:
                producer.poll(0.05)
        sent += 1
        if sent % 10_000 == 0:
            producer.poll(0)
            meter.update(sent)
    left = producer.flush(_FLUSH_TIMEOUT_S)
    seconds = time.monotonic() - start
    meter.finish(sent)
    if left:
        raise BrokerError(f"{left} records to {topic} still undelivered after the flush")
    if errors:
        raise BrokerError(f"{len(errors)} records to {topic} failed, first: {errors[0]}")
    stored = topic_size(bootstrap, topic)
    if sent != expected or stored != expected:
        raise BrokerError(f"{topic}: expected {expected} records, sent {sent}, stored {stored}")
    return ProduceResult(topic=topic, records=sent, seconds=seconds)


def preload(
    bootstrap: str,
    records: int,
    partitions: int,
    *,
    topic: str | None = None,
    make_topic: TopicMaker | None = None,
    num_keys: int = DEFAULT_NUM_KEYS,
    progress: bool = True,
    events: bool = False,
) -> str:
    """Produce input records 0..records-1 over `partitions` partitions; return the topic.

    Uses `topic` when given (it must exist and be empty), else a new topic from
    `make_topic` (default: created on `bootstrap`). With `events`, the records of
    the windowed workload (`event_input.EventInput`, stamped with event times).
    """
    if topic is None:
        prefix = "bench-in-events" if events else "bench-in"
        topic = (make_topic or new_topic_maker(bootstrap))(prefix, partitions)
    items = EventInput(records, num_keys).encoded() if events else encoded_inputs(records, num_keys)
    produce_values(bootstrap, topic, items, records, progress=progress)
    return topic


class PacedInput:
    """Produces input records 0..records-1 at `rate` records/s on a thread, from `start()`.

    Every 0.1 s it sends the records due by then (keyed, murmur2, as `preload`), so
    that a wide topic sees every partition move between two checkpoints.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        records: int,
        rate: float,
        num_keys: int = DEFAULT_NUM_KEYS,
    ) -> None:
        self._args = (bootstrap, topic, records, rate, num_keys)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="paced-input", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout_s: float) -> None:
        """Wait for the last record to be delivered; raise what the thread raised."""
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise BrokerError(f"paced input still producing after {timeout_s:.0f} s")
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        bootstrap, topic, records, rate, num_keys = self._args
        try:
            producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
            items = encoded_inputs(records, num_keys)
            began, sent = time.monotonic(), 0
            while sent < records:
                due = min(records, int((time.monotonic() - began + 0.1) * rate))
                for key, value in itertools.islice(items, due - sent):
                    producer.produce(topic, value, key)
                sent = max(sent, due)
                producer.poll(0)
                time.sleep(0.1)  # pacing: the next tenth of a second's records
            if producer.flush(_FLUSH_TIMEOUT_S):
                raise BrokerError(f"paced input to {topic} still undelivered after the flush")
        except BaseException as exc:
            self.error = exc
