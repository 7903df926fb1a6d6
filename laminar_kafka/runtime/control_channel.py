"""The control topic: Announcements from the coordinator, Acks from tasks.

One single-partition topic per pipeline carries both, in order. Each side reads
only the kind it needs (told apart by the control header before any decoding)
and skips records of other pipelines. Undecodable control records are logged
and skipped: a forged or corrupt record must not stop the pipeline.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from laminar_kafka.control.codec import decode, encode
from laminar_kafka.control.headers import CONTROL_HEADER, control_headers
from laminar_kafka.control.records import Ack, Announcement, ControlRecord
from laminar_kafka.errors import ControlRecordError, LaminarError
from laminar_kafka.sources.kafka_reader import watermark_offsets

log = logging.getLogger(__name__)


def ensure_topics(
    bootstrap: str,
    client_config: Mapping[str, str],
    topics: Mapping[str, int],
    timeout_s: float = 30.0,
    config: Mapping[str, str] | None = None,
) -> None:
    """Create the topics that do not exist yet (name → partitions)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3, **client_config})
    existing = admin.list_topics(timeout=timeout_s).topics
    missing = [
        NewTopic(name, num_partitions=n, replication_factor=-1, config=dict(config or {}))
        for name, n in topics.items()
        if name not in existing
    ]
    if not missing:
        return
    for name, future in admin.create_topics(missing, operation_timeout=timeout_s).items():
        try:
            future.result(timeout_s)
        except Exception as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise LaminarError(f"cannot create topic {name!r}: {exc}") from None


def end_offset(
    bootstrap: str, client_config: Mapping[str, str], topic: str, timeout_s: float = 30.0
) -> int:
    """The offset the next record written to partition 0 of `topic` will get."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "laminar-probe", **client_config}
    )
    try:
        return watermark_offsets(consumer, topic, 0, timeout_s)[1]
    finally:
        consumer.close()


class ControlChannel:
    """Writes control records of one kind and reads those of another."""

    def __init__(
        self,
        bootstrap: str,
        client_config: Mapping[str, str],
        topic: str,
        pipeline: str,
        start_offset: int,
        reads: type[Ack] | type[Announcement],
    ) -> None:
        self.topic = topic
        self.pipeline = pipeline
        self._wanted = reads.kind.encode()
        self._reads = reads
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 0,
                "log_level": 3,
                **client_config,
            }
        )
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"laminar-{pipeline}-control",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "fetch.wait.max.ms": 10,
                "log_level": 3,
                **client_config,
            }
        )
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
            partition=0,
            headers=control_headers(record),
            on_delivery=delivered,
        )
        if self._producer.flush(timeout_s) or failure:
            reason = failure[0].str() if failure else "timed out"
            raise LaminarError(f"cannot write {record.kind} to {self.topic}: {reason}")

    def receive(self, timeout_s: float) -> list[Any]:
        """Records of the wanted kind for this pipeline that arrived within `timeout_s`."""
        out: list[Any] = []
        for msg in self._arrived(timeout_s):
            error = msg.error()
            if error is not None:
                if error.fatal():
                    raise LaminarError(f"control topic consumer failed: {error.str()}")
                continue
            headers: Any = msg.headers() or ()
            kind = next((v for k, v in headers if k == CONTROL_HEADER), None)
            if kind != self._wanted:
                continue
            try:
                record = decode(msg.value())
            except ControlRecordError as exc:
                log.warning("skipping control record at offset %d: %s", msg.offset(), exc)
                continue
            if isinstance(record, self._reads) and record.pipeline == self.pipeline:
                out.append(record)
        return out

    def _arrived(self, timeout_s: float) -> list[Any]:
        # consume(n, timeout) waits for n records or the whole timeout; a decision
        # must be seen the moment it lands, so wait with poll() for the first one.
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
