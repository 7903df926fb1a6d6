"""Reads a fixed set of source partitions, a batch at a time.

Partitions are assigned, never subscribed: the runtime, not a consumer-group
rebalance, decides who owns a partition. The group id only names where the
checkpoint's offset markers are committed (through the sink transaction).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from laminar_kafka.errors import CheckpointError, IncurableError, LaminarError
from laminar_kafka.kafka.clients import KafkaConnection, load_metadata, source_reader_settings
from laminar_kafka.kafka.failures import is_incurable
from laminar_kafka.kafka.log_start import below_log_start
from laminar_kafka.kafka.names import PartitionKey, consumer_group
from laminar_kafka.kafka.reading_leaders import LeaderFollower

# confluent-kafka's stubs declare topic(), partition() and offset() optional; on a
# message without error() they are always set, so data paths treat messages as Any.
KafkaMessage = Any

_error = Message.error


def each(messages: Sequence[KafkaMessage], method: str) -> list[Any]:
    """`m.<method>()` of every message, in order: for confluent-kafka's `Message`s in one
    C-level map of the unbound method (which checks each message's type), about a fifth
    of a Python step per record; for any other class (a test transport's) one call each."""
    if not messages:
        return []
    if type(messages[0]) is Message:
        try:
            return list(map(getattr(Message, method), messages))
        except TypeError:  # another class among them
            pass
    return list(map(operator.methodcaller(method), messages))


class PartitionReader:
    """A read_committed consumer over assigned partitions with pause/seek control."""

    def __init__(
        self,
        kafka: KafkaConnection,
        pipeline: str,
        batch_size: int,
        report_ends: bool = False,
    ) -> None:
        """`report_ends`: note where each partition's log ends (`end_reached`), from
        librdkafka's end-of-partition events (a bounded run's tasks ask)."""
        config = source_reader_settings(kafka, consumer_group(pipeline), batch_size)
        config["enable.partition.eof"] = report_ends
        self._leaders = LeaderFollower()
        config["error_cb"] = self._leaders.on_error
        self._consumer = Consumer(config)
        self._reached: dict[PartitionKey, int] = {}
        self._batch_size = batch_size
        self._known_topics: set[str] = set()

    @property
    def group_metadata(self) -> Any:
        return self._consumer.consumer_group_metadata()

    def committed(
        self, partitions: Iterable[PartitionKey], timeout_s: float
    ) -> list[TopicPartition]:
        """The offsets (and metadata) last committed for these partitions by a transaction."""
        tps = [TopicPartition(t, p) for t, p in partitions]
        return list(self._consumer.committed(tps, timeout=timeout_s))

    def assign(self, start: Mapping[PartitionKey, int | str]) -> None:
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
            self._reached.pop((topic, partition), None)
        new_topics = {tp.topic for tp in tps} - self._known_topics
        load_metadata(self._consumer, sorted(new_topics))
        self._known_topics |= new_topics
        self._consumer.assign(tps)

    def poll(self, timeout_s: float) -> list[KafkaMessage]:
        """Up to one batch of records; raises on a non-transient consumer error."""
        messages: list[KafkaMessage] = self._consumer.consume(self._batch_size, timeout_s)
        self._leaders.follow(self._consumer, self._known_topics)
        if any(map(_error, messages)):  # a KafkaError is truthy
            kept = []
            for m in messages:
                err = m.error()
                if err is None:
                    kept.append(m)
                    continue
                self._leaders.on_error(err)  # a broker connection failure arms it
                if err.code() == KafkaError._PARTITION_EOF:
                    self._reached[(m.topic(), m.partition())] = m.offset()
                elif err.code() == KafkaError._AUTO_OFFSET_RESET:
                    raise self._below_log_start(m.topic(), m.partition(), m.offset())
                elif is_incurable(err):
                    raise IncurableError(f"source consumer failed: {err.str()}")
                elif err.fatal() or err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise LaminarError(f"source consumer failed: {err.str()}")
            return kept
        return messages

    def _below_log_start(self, topic: str, partition: int, offset: int) -> CheckpointError:
        """A fetch below the log start (`auto.offset.reset=error`): name the records lost."""
        try:
            low, _ = self._consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=10
            )
        except KafkaException:
            return below_log_start(topic, partition, offset, None)
        return below_log_start(topic, partition, offset, int(low))

    def reposition(self, positions: Mapping[PartitionKey, int]) -> None:
        """Un-pause every partition and restart reading each at its given offset.

        Drops whatever was fetched past the positions. librdkafka keeps a
        partition's pause flag across a new assign(), so resume comes first.
        """
        self._consumer.resume([TopicPartition(t, p) for t, p in positions])
        self.assign(dict(positions))

    def continue_at(self, positions: Mapping[PartitionKey, int]) -> None:
        """Seek these partitions (all of them fetching already) to their offsets, then resume.

        Cheaper than `reposition`: the other partitions keep what they prefetched.
        """
        for (topic, partition), offset in positions.items():
            self._consumer.seek(TopicPartition(topic, partition, offset))
            self._reached.pop((topic, partition), None)
        self._consumer.resume([TopicPartition(t, p) for t, p in positions])

    def position(self, key: PartitionKey) -> int | None:
        """The consumer's position: past markers and aborted records, unlike the last
        record's offset + 1 (OFFSET_INVALID, before the first fetch, is None)."""
        (found,) = self._consumer.position([TopicPartition(key[0], key[1])])
        return found.offset if found.offset >= 0 else None

    def end_reached(self, key: PartitionKey) -> int | None:
        """The log end the reader reached in `key` since it was last positioned."""
        return self._reached.get(key)

    def pause(self, key: PartitionKey) -> None:
        self._consumer.pause([TopicPartition(key[0], key[1])])

    def close(self) -> None:
        self._consumer.close()
