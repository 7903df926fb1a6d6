"""Topic creation and sizing for benchmarks.

Every benchmark writes into fresh, uniquely named topics so that runs never
read each other's records. `TopicMaker` is the one shape of "give me a new
topic": the default makes one with the admin client, a test passes its
`topic_factory.create` instead so that its fixture cleans up.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Final

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from laminar_kafka.errors import BrokerError

__all__ = [
    "KEEP_RECORDS",
    "TopicMaker",
    "create_topic",
    "delete_topics",
    "end_offsets",
    "new_topic_maker",
    "topic_size",
]

TopicMaker = Callable[[str, int], str]
"""`make(prefix, partitions) -> topic name` of a new, empty topic."""

KEEP_RECORDS: Final = {"retention.ms": "-1"}
"""Topic config of every benchmark topic: no record falls to time-based retention. The
windowed workload's event times are in 2024, and Quix stamps each window's result
with its start: at the default retention (7 days) the broker deletes such records
as soon as it checks."""

_TIMEOUT_S: Final = 30.0


def create_topic(bootstrap: str, prefix: str, partitions: int) -> str:
    """Create a new topic `<prefix>-<random>` with `partitions` partitions (and
    `KEEP_RECORDS`); return its name."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=KEEP_RECORDS)],
        request_timeout=_TIMEOUT_S,
    )
    try:
        futures[name].result(timeout=_TIMEOUT_S)
    except KafkaException as exc:
        raise BrokerError(f"cannot create topic {name} at {bootstrap}: {exc}") from exc
    _await_leaders(admin, name, partitions)
    return name


def _await_leaders(admin: AdminClient, name: str, partitions: int) -> None:
    """Wait until the metadata shows every partition of a new topic with a leader.

    The creation is acknowledged by the controller before every broker's metadata
    has the topic: a reader started at once could find it unknown.
    """
    deadline = time.monotonic() + _TIMEOUT_S
    while True:
        meta = admin.list_topics(name, timeout=_TIMEOUT_S).topics.get(name)
        found = {} if meta is None or meta.error is not None else meta.partitions
        if len(found) == partitions and all(p.leader >= 0 for p in found.values()):
            return
        if time.monotonic() > deadline:
            raise BrokerError(f"topic {name}: no leader for every partition after {_TIMEOUT_S} s")
        time.sleep(0.05)  # metadata has no notification: ask again shortly


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    """Delete `topics` (best effort: a topic already gone is fine)."""
    if not topics:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.delete_topics(topics, request_timeout=_TIMEOUT_S)
    for name, future in futures.items():
        try:
            future.result(timeout=_TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise BrokerError(f"cannot delete topic {name}: {exc}") from exc


def new_topic_maker(bootstrap: str) -> TopicMaker:
    """A `TopicMaker` that creates topics on `bootstrap` with `create_topic`."""

    def make(prefix: str, partitions: int) -> str:
        return create_topic(bootstrap, prefix, partitions)

    return make


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """High watermark of every partition of `topic` (includes transaction markers)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "laminar-bench-sizer"})
    try:
        meta = consumer.list_topics(topic, timeout=_TIMEOUT_S).topics[topic]
        if meta.error is not None:
            raise BrokerError(f"topic {topic} is not readable: {meta.error}")
        ends: dict[int, int] = {}
        for partition in sorted(meta.partitions):
            _low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=_TIMEOUT_S, cached=False
            )
            ends[partition] = high
        return ends
    finally:
        consumer.close()


def topic_size(bootstrap: str, topic: str) -> int:
    """Records in a topic written without transactions: the sum of its end offsets."""
    return sum(end_offsets(bootstrap, topic).values())
