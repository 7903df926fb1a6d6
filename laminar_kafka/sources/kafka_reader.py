"""Reads a fixed set of source partitions, a batch at a time.

Partitions are assigned, never subscribed: the runtime, not a consumer-group
rebalance, decides who owns a partition. The group id only names where the
checkpoint's offset markers are committed (through the sink transaction).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from laminar_kafka.errors import LaminarError

TopicPartitionKey = tuple[str, int]
# confluent-kafka's stubs declare topic(), partition() and offset() optional; on a
# message without error() they are always set, so data paths treat messages as Any.
KafkaMessage = Any


def watermark_offsets(
    consumer: Consumer, topic: str, partition: int, timeout_s: float = 30.0
) -> tuple[int, int]:
    """(low, high) offsets of a partition, waiting for a just-created topic to be known."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            return int(low), int(high)
        except KafkaException as exc:
            # A topic created a moment ago may not be in this client's metadata yet.
            if time.monotonic() > deadline:
                raise LaminarError(
                    f"cannot read the offsets of {topic}[{partition}]: {exc}"
                ) from None
            time.sleep(0.2)


def consumer_group(pipeline: str) -> str:
    return f"laminar-{pipeline}"


class PartitionReader:
    """A read_committed consumer over assigned partitions with pause/seek control."""

    def __init__(
        self,
        bootstrap: str,
        pipeline: str,
        client_config: Mapping[str, str],
        batch_size: int,
    ) -> None:
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": consumer_group(pipeline),
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 50,
            "queued.min.messages": max(batch_size * 4, 10000),
            # Once a partition's prefetch queue is full, librdkafka waits this long
            # before fetching it again (default 1 s). With a small queue the default
            # starves the task: reading capped at about 35k records/s per task.
            "fetch.queue.backoff.ms": 10,
            # Warnings such as "concurrent transactions" while a new task fences an old
            # one are expected during recovery; errors still surface.
            "log_level": 3,
        }
        config.update(client_config)
        self._consumer = Consumer(config)
        self._batch_size = batch_size

    @property
    def group_metadata(self) -> Any:
        return self._consumer.consumer_group_metadata()

    def committed(
        self, partitions: Iterable[TopicPartitionKey], timeout_s: float
    ) -> list[TopicPartition]:
        """The offsets (and metadata) last committed for these partitions by a transaction."""
        tps = [TopicPartition(t, p) for t, p in partitions]
        return list(self._consumer.committed(tps, timeout=timeout_s))

    def assign(self, start: Mapping[TopicPartitionKey, int | str]) -> None:
        """Assign partitions at an offset, or at 'earliest' / 'latest'."""
        tps = []
        for (topic, partition), where in start.items():
            if where == "earliest":
                offset = OFFSET_BEGINNING
            elif where == "latest":
                offset = OFFSET_END
            else:
                offset = int(where)
            tps.append(TopicPartition(topic, partition, offset))
        self._consumer.assign(tps)

    def poll(self, timeout_s: float) -> list[KafkaMessage]:
        """Up to one batch of records; raises on a non-transient consumer error."""
        messages: list[KafkaMessage] = self._consumer.consume(self._batch_size, timeout_s)
        if any(m.error() is not None for m in messages):
            kept = []
            for m in messages:
                err = m.error()
                if err is None:
                    kept.append(m)
                elif err.fatal() or err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise LaminarError(f"source consumer failed: {err.str()}")
            return kept
        return messages

    def reposition(self, positions: Mapping[TopicPartitionKey, int]) -> None:
        """Un-pause every partition and restart reading each at its given offset.

        Drops whatever was fetched past the positions. librdkafka keeps a
        partition's pause flag across a new assign(), so resume comes first.
        """
        self._consumer.resume([TopicPartition(t, p) for t, p in positions])
        self.assign(dict(positions))

    def continue_at(self, positions: Mapping[TopicPartitionKey, int]) -> None:
        """Seek these partitions (all of them fetching already) to their offsets, then resume.

        Cheaper than `reposition`: the other partitions keep what they prefetched.
        """
        for (topic, partition), offset in positions.items():
            self._consumer.seek(TopicPartition(topic, partition, offset))
        self._consumer.resume([TopicPartition(t, p) for t, p in positions])

    def pause(self, key: TopicPartitionKey) -> None:
        self._consumer.pause([TopicPartition(key[0], key[1])])

    def close(self) -> None:
        self._consumer.close()
