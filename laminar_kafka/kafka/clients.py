"""The settings of every kind of Kafka client the framework uses, and the clients.

The user's client settings (security, timeouts) are applied over the defaults of
each kind; settings the protocol depends on (a transactional id, the isolation
level of a reader) are applied last, so no user setting can break them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from laminar_kafka.kafka.java_properties import librdkafka_settings
from laminar_kafka.kafka.names import PROBE_GROUP

# Warnings such as "concurrent transactions" while a new task fences an old one
# are expected during recovery; errors still surface.
_QUIET = {"log_level": 3}

# librdkafka's reconnect backoff grows to 10 s: after a broker outage a client
# could wait that long to see the broker back, and a checkpoint with it.
_QUICK_RECONNECT = {"reconnect.backoff.max.ms": 1000}


@dataclass(frozen=True)
class KafkaConnection:
    """Where the cluster is and how to talk to it (security and other client settings).

    `client_config` takes librdkafka's property names; the common Java ones are
    translated or refused (`kafka/java_properties.py`).
    """

    bootstrap: str
    client_config: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A plain dict: read-only views cannot be pickled to the Spark tasks.
        object.__setattr__(self, "client_config", librdkafka_settings(self.client_config))

    def settings(
        self, defaults: Mapping[str, Any], fixed: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Defaults, then the user's settings, then what must not be overridden."""
        return {
            "bootstrap.servers": self.bootstrap,
            **_QUIET,
            **_QUICK_RECONNECT,
            **defaults,
            **self.client_config,
            **(fixed or {}),
        }


def idempotent_producer(kafka: KafkaConnection) -> Producer:
    """For control records and barriers: every record written once, in order, at once."""
    return Producer(kafka.settings({"linger.ms": 0}, {"enable.idempotence": True, "acks": "all"}))


def unbatched_producer(kafka: KafkaConnection, delivery_timeout_ms: int) -> Producer:
    """For a few small records, each useless once `delivery_timeout_ms` old: a task's
    heartbeats, a lease's release record.

    Each record is sent at once (no batching) and written by all in-sync replicas;
    no idempotence, so no producer id to fence. A record that cannot be delivered
    in time is dropped with an error report, not queued.
    """
    return Producer(
        kafka.settings({"linger.ms": 0}, {"acks": "all", "message.timeout.ms": delivery_timeout_ms})
    )


def transactional_producer_settings(
    kafka: KafkaConnection, txn_id: str, transaction_timeout_ms: int, batch_bytes: int | None = None
) -> dict[str, Any]:
    """A task's producer: one transaction per checkpoint, batched and compressed.

    `batch_bytes` caps a produce batch: the broker refuses a whole batch larger
    than a topic's `max.message.bytes`, however small its records.
    """
    return kafka.settings(
        {
            "linger.ms": 5,
            "batch.size": min(batch_bytes or 1_000_000, 1_000_000),
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": 500000,
            "compression.type": "lz4",
            "transaction.timeout.ms": transaction_timeout_ms,
            # A keyed sink record lands where the Java clients, Kafka Streams and a
            # join's table lookup expect its key (librdkafka's default is CRC32).
            "partitioner": "murmur2_random",
            # librdkafka 2.16 decommissions the known brokers when all are down
            # (re-bootstrap) but keeps the group coordinator it had cached: the
            # next send_offsets_to_transaction then waits forever, its timeout
            # ignored (librdkafka #5511, #5456). Without re-bootstrap the known
            # broker reconnects and serves the TxnOffsetCommit.
            "metadata.recovery.strategy": "none",
            # Once the consumer group's coordinator has left the cluster's metadata,
            # a send_offsets_to_transaction waiting for it looks the coordinator up
            # again only when another of the producer's connections goes up or
            # down (librdkafka #5511); it would wait for good. While a task waits
            # there it sends nothing, so its connections fall idle: closing them
            # after 1 s is that change, and the call finds the new coordinator
            # 1-2 s after the old one was fenced. The price: a connection that is
            # idle for a second is opened again when it is next needed.
            "connections.max.idle.ms": 1000,
            # The broker answers a TxnOffsetCommit sent while the transaction's
            # AddOffsetsToTxn is still being written with CONCURRENT_TRANSACTIONS,
            # and librdkafka retries after `retry.backoff.ms` (100): measured on
            # three local nodes, send_offsets_to_transaction took 109 ms (median of
            # 15), 30 ms with 20. The Java producer retries that case after 20 ms
            # too (KAFKA-5477). Later retries still back off to `retry.backoff.max.ms`.
            "retry.backoff.ms": 20,
        },
        {
            "transactional.id": txn_id,
            "enable.idempotence": True,
            "acks": "all",
            # Delivery reports for failed records only: a report per delivered
            # record costs about 1 us of Python each.
            "delivery.report.only.error": True,
        },
    )


def source_reader_settings(kafka: KafkaConnection, group: str, batch_size: int) -> dict[str, Any]:
    """A task's reader: assigned partitions, read_committed, nothing committed but markers.

    An offset below the log start is an error, never a silent jump to the log start
    (which would skip the deleted records): see `kafka/log_start.py`.
    """
    return kafka.settings(
        {
            "fetch.wait.max.ms": 50,
            "queued.min.messages": max(batch_size * 4, 10000),
            # Once a partition's prefetch queue is full, librdkafka waits this long
            # before fetching it again (default 1 s). With a small queue the default
            # starves the task: reading capped at about 35k records/s per task.
            "fetch.queue.backoff.ms": 10,
        },
        {
            "group.id": group,
            "isolation.level": "read_committed",
            "auto.offset.reset": "error",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
        },
    )


def load_metadata(consumer: Consumer, topics: Iterable[str], timeout_s: float = 10.0) -> None:
    """Fetch the leaders of `topics` into the consumer's metadata cache before an assign.

    A consumer that has only spoken to the group coordinator learns an assigned
    topic's leaders on its next metadata refresh, up to a second later, and
    fetches nothing meanwhile. A failure here only costs that second.
    """
    for topic in topics:
        try:
            consumer.list_topics(topic, timeout=timeout_s)
        except KafkaException:
            return


def control_reader(
    kafka: KafkaConnection, group: str, error_cb: Callable[[KafkaError], None] | None = None
) -> Consumer:
    """Reads the control topic from an assigned offset; commits nothing. `error_cb`
    hears the client's errors (`kafka/reading_leaders.py`)."""
    fixed: dict[str, Any] = {"group.id": group, "enable.auto.commit": False}
    fixed["enable.partition.eof"] = False
    if error_cb is not None:
        fixed["error_cb"] = error_cb
    return Consumer(kafka.settings({"fetch.wait.max.ms": 10}, fixed))


def committed_offsets_reader(kafka: KafkaConnection, group: str) -> Consumer:
    """Reads a group's committed offsets without joining it.

    Not read_committed (librdkafka's default): that waits for the offsets of open
    transactions, such as those a killed application left until they are fenced.
    Only what is committed now counts.
    """
    return Consumer(
        kafka.settings(
            {},
            {"group.id": group, "enable.auto.commit": False, "isolation.level": "read_uncommitted"},
        )
    )


def tail_reader(kafka: KafkaConnection) -> Consumer:
    """Reads committed records of assigned partitions for a person to see; joins no
    group and commits nothing (the group id is the probes', never a pipeline's).

    Its end offsets are the last stable ones (read_committed), where it reports
    the partition's end.
    """
    return Consumer(
        kafka.settings(
            {"fetch.wait.max.ms": 50},
            {
                "group.id": PROBE_GROUP,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            },
        )
    )


def probe_consumer(kafka: KafkaConnection) -> Consumer:
    """A consumer that only asks for offsets and metadata."""
    return Consumer(kafka.settings({}, {"group.id": PROBE_GROUP, "enable.auto.commit": False}))


def admin_client(kafka: KafkaConnection) -> AdminClient:
    return AdminClient(kafka.settings({}))
