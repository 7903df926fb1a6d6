"""The control topic: Announcements from the coordinator, Acks and Heartbeats from tasks.

One single-partition topic per pipeline carries them all, in order. Each side
reads only the kinds it needs (told apart by the control header before any
decoding, so a task skips the many Heartbeats for the cost of a header
comparison) and skips records of other pipelines. Undecodable control records
are logged and skipped: a forged or corrupt record must not stop the pipeline.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from laminar_kafka import waits
from laminar_kafka.control.codec import decode, encode
from laminar_kafka.control.headers import CONTROL_HEADER, CONTROL_KEY, control_headers
from laminar_kafka.control.heartbeat import Heartbeat
from laminar_kafka.control.records import ControlRecord
from laminar_kafka.errors import ControlRecordError, LaminarError
from laminar_kafka.kafka.clients import (
    KafkaConnection,
    control_reader,
    idempotent_producer,
    load_metadata,
)
from laminar_kafka.kafka.flushing import flush_following_leaders
from laminar_kafka.kafka.names import control_group
from laminar_kafka.kafka.reading_leaders import LeaderFollower

log = logging.getLogger(__name__)


class WantedRecords:
    """Picks a pipeline's records of some kinds out of what a control log reader returned."""

    def __init__(self, pipeline: str, reads: tuple[type[ControlRecord], ...]) -> None:
        self.pipeline = pipeline
        self._kinds = frozenset(kind.kind.encode() for kind in reads)
        self._reads = reads

    def select(self, messages: Iterable[Any]) -> list[Any]:
        """The decoded records wanted, in order; a fatal reader error raises."""
        out: list[Any] = []
        for msg in messages:
            error = msg.error()
            if error is not None:
                if error.fatal():
                    raise LaminarError(f"control topic consumer failed: {error.str()}")
                continue
            headers: Any = msg.headers() or ()
            kind = next((v for k, v in headers if k == CONTROL_HEADER), None)
            if kind not in self._kinds:
                continue
            try:
                record = decode(msg.value())
            except ControlRecordError as exc:
                log.warning("skipping control record at offset %d: %s", msg.offset(), exc)
                continue
            if isinstance(record, self._reads) and record.pipeline == self.pipeline:
                out.append(record)
        return out


class ControlChannel:
    """Writes control records and reads those of the kinds in `reads`."""

    arrival_s = 0.2
    """How long a record another process has written may take to reach `receive`."""

    def __init__(
        self,
        kafka: KafkaConnection,
        topic: str,
        pipeline: str,
        start_offset: int,
        *reads: type[ControlRecord],
    ) -> None:
        self.topic = topic
        self.pipeline = pipeline
        self.wanted = WantedRecords(pipeline, reads)
        self._producer = idempotent_producer(kafka)
        self._leaders = LeaderFollower()
        self._consumer = control_reader(kafka, control_group(pipeline), self._leaders.on_error)
        self._start_offset = start_offset
        self._probe: list[bool] | None = None  # the last probe's outcome, once known
        load_metadata(self._consumer, [topic])
        self._consumer.assign([TopicPartition(topic, 0, start_offset)])

    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None:
        """Write a record and wait until the broker has it."""
        failure: list[KafkaError] = []

        def delivered(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                failure.append(err)

        self._producer.produce(
            self.topic,
            encode(record),
            CONTROL_KEY,
            partition=0,
            headers=control_headers(record),
            on_delivery=delivered,
        )
        if flush_following_leaders(self._producer, [self.topic], timeout_s) or failure:
            reason = failure[0].str() if failure else "timed out"
            raise LaminarError(f"cannot write {record.kind} to {self.topic}: {reason}")

    def receive(self, timeout_s: float) -> list[Any]:
        """Records of the wanted kind for this pipeline that arrived within `timeout_s`."""
        return self.wanted.select(self._arrived(timeout_s))

    def reachable(self, timeout_s: float) -> bool:
        """Whether the control topic takes a write within `timeout_s`: a probe, written
        by every in-sync replica (a Heartbeat of generation 0, which no task has and
        every tracker ignores), or the probe a timed-out call left, still waiting.

        A read would answer sooner, and wrongly: when a follower of the topic's
        partition dies, its leader serves reads, but the high watermark (the end a
        reader sees) stands still until the cluster fences the follower, so no task's
        beat can reach the driver meanwhile (seconds; 9 s and more with Kafka's
        default session). The driver must count itself cut off then, not the tasks
        silent.
        """
        if self._probe is None or self._probe:  # no probe waits: write one
            outcome: list[bool] = []
            probe = Heartbeat(self.pipeline, 0, 0)
            try:
                self._producer.produce(
                    self.topic,
                    encode(probe),
                    CONTROL_KEY,
                    0,
                    headers=control_headers(probe),
                    on_delivery=lambda err, _msg: outcome.append(err is None),
                )
            except (BufferError, KafkaException):
                return False
            self._probe = outcome
        flush_following_leaders(self._producer, [self.topic], timeout_s)
        return self._probe == [True]

    def catch_up(self, timeout_s: float = 30.0) -> list[Any]:
        """Every wanted record up to the topic's current end (not only what has arrived)."""
        end = self._consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout_s)[1]
        out: list[Any] = []
        deadline = waits.monotonic() + timeout_s
        while True:
            out.extend(self.receive(0.05))
            position = self._consumer.position([TopicPartition(self.topic, 0)])[0].offset
            # Before the first record is consumed the position is unknown (negative).
            if max(position, self._start_offset) >= end:
                return out
            if waits.monotonic() > deadline:
                raise LaminarError(f"cannot read {self.topic} up to offset {end}")

    def _arrived(self, timeout_s: float) -> list[Any]:
        # consume(n, timeout) waits for n records or the whole timeout; a decision
        # must be seen the moment it lands, so wait with poll() for the first one.
        self._leaders.follow(self._consumer, (self.topic,))
        messages: list[Any] = self._consumer.consume(500, 0)
        if messages or timeout_s <= 0:
            return messages
        first = self._consumer.poll(timeout_s)
        if first is None:
            return []
        return [first, *self._consumer.consume(500, 0)]

    def close(self) -> None:
        self._producer.flush(5)
        self._consumer.close()
