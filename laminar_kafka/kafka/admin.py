"""Topic helpers: create what is missing, count partitions, find end offsets."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, not in __all__
    ConfigResource,
    ResourceType,
)
from confluent_kafka.cimpl import NewTopic

from laminar_kafka.errors import ConfigError, LaminarError
from laminar_kafka.kafka.clients import KafkaConnection, admin_client, probe_consumer
from laminar_kafka.kafka.group_view import GroupAskFailed, delete_group
from laminar_kafka.kafka.names import PartitionKey, consumer_group

log = logging.getLogger(__name__)


def partition_counts(kafka: KafkaConnection, timeout_s: float = 30.0) -> dict[str, int]:
    """topic → number of partitions, for every topic of the cluster."""
    topics = admin_client(kafka).list_topics(timeout=timeout_s).topics
    return {name: len(meta.partitions) for name, meta in topics.items()}


def source_partition_counts(
    kafka: KafkaConnection, topics: tuple[str, ...], timeout_s: float = 30.0
) -> dict[str, int]:
    """Partition counts of the source topics; a missing one is a configuration error."""
    counts = partition_counts(kafka, timeout_s)
    missing = [t for t in topics if t not in counts]
    if missing:
        raise ConfigError(
            f"source topic {missing[0]!r} does not exist on {kafka.bootstrap}: create it "
            "first (a run creates its sinks and internal topics, never a source, whose "
            "partitions set the parallelism and where each key is)"
        )
    return {t: counts[t] for t in topics}


def ensure_topics(
    kafka: KafkaConnection,
    topics: Mapping[str, int],
    timeout_s: float = 30.0,
    config: Mapping[str, str] | None = None,
) -> None:
    """Create the topics that do not exist yet (name → partitions)."""
    admin = admin_client(kafka)
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


def watermark_offsets(
    consumer: Consumer, topic: str, partition: int, timeout_s: float = 30.0
) -> tuple[int, int]:
    """(low, high) offsets of a partition, waiting for a just-created topic to be known
    and its leader to answer, up to `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = max(0.01, min(10.0, deadline - time.monotonic()))
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), left)
            return int(low), int(high)
        except KafkaException as exc:
            # A topic created a moment ago may not be in this client's metadata yet, or
            # its leader not leading yet (NOT_LEADER_FOR_PARTITION).
            if time.monotonic() > deadline:
                raise LaminarError(
                    f"cannot read the offsets of {topic}[{partition}]: {exc}"
                ) from None
            time.sleep(0.2)


def end_offset(kafka: KafkaConnection, topic: str, timeout_s: float = 30.0) -> int:
    """The offset the next record written to partition 0 of `topic` will get."""
    consumer = probe_consumer(kafka)
    try:
        return watermark_offsets(consumer, topic, 0, timeout_s)[1]
    finally:
        consumer.close()


def delete_committed_offsets(
    kafka: KafkaConnection, pipeline: str, partitions: list[PartitionKey], timeout_s: float = 30.0
) -> None:
    """Forget the pipeline's committed offsets (its checkpoints' markers): a reset.

    The tasks read by assignment, so the group has no members and can be deleted.
    """
    group = consumer_group(pipeline)
    try:
        delete_group(kafka, group, timeout_s)
    except GroupAskFailed as exc:
        if exc.code == "GROUP_ID_NOT_FOUND":
            return
        raise LaminarError(
            f"cannot delete the committed offsets of group {group!r} "
            f"({len(partitions)} partitions): {exc}"
        ) from None


_RECORD_OVERHEAD = 512
"""Room for a record batch's header and the record's framing, in bytes."""


def record_limits(
    kafka: KafkaConnection, topics: Sequence[str], timeout_s: float = 30.0
) -> dict[str, int]:
    """topic → the largest key + value a record written to it can carry.

    The smaller of the topic's `max.message.bytes` and the producer's
    `message.max.bytes`, less room for framing. A topic whose settings cannot be
    read (ACLs) gets the producer's limit.
    """
    producer_max = int(kafka.client_config.get("message.max.bytes", 1_000_000))
    admin = admin_client(kafka)
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    limits = {}
    for resource, future in admin.describe_configs(resources, request_timeout=timeout_s).items():
        topic_max = producer_max
        try:
            entry = future.result(timeout_s).get("max.message.bytes")
            if entry is not None and entry.value is not None:
                topic_max = int(entry.value)
        except (KafkaException, ValueError) as exc:
            log.warning("cannot read max.message.bytes of %s: %s", resource.name, exc)
        limits[resource.name] = min(topic_max, producer_max) - _RECORD_OVERHEAD
    return limits


def topic_settings(
    kafka: KafkaConnection, topics: Sequence[str], names: Sequence[str], timeout_s: float = 30.0
) -> dict[str, dict[str, str]]:
    """topic → the values of the settings `names` it has (explicit or inherited).

    A topic whose settings cannot be read (ACLs) is logged and left out.
    """
    if not topics:
        return {}
    admin = admin_client(kafka)  # held: a collected client never completes its futures
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    found: dict[str, dict[str, str]] = {}
    for resource, future in admin.describe_configs(resources, request_timeout=timeout_s).items():
        try:
            entries = future.result(timeout_s)
        except KafkaException as exc:
            log.warning("cannot read the settings of topic %s: %s", resource.name, exc)
            continue
        found[resource.name] = {
            n: entries[n].value for n in names if n in entries and entries[n].value is not None
        }
    return found


def delete_records_below(
    kafka: KafkaConnection, offsets: Mapping[PartitionKey, int], timeout_s: float = 30.0
) -> None:
    """Delete the records below each offset (-1: all of them), as `DeleteRecords` does."""
    if not offsets:
        return
    request = [TopicPartition(t, p, off) for (t, p), off in offsets.items()]
    # Held until the futures resolve: a collected client never completes them.
    admin = admin_client(kafka)
    futures = admin.delete_records(request, request_timeout=timeout_s, operation_timeout=timeout_s)
    for tp, future in futures.items():
        try:
            future.result(timeout_s)
        except Exception as exc:
            why = str(exc) or type(exc).__name__
            raise LaminarError(
                f"cannot delete records of {tp.topic}[{tp.partition}]: {why}"
            ) from None
