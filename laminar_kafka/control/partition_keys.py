"""The 'topic:partition' keys of control records (Ack positions, skipped partitions, ...)."""

from __future__ import annotations

import re

from laminar_kafka.control.checks import INT_MAX, is_int
from laminar_kafka.errors import ControlRecordError

__all__ = ["parse_partition_key", "partition_key"]

# Kafka's own rule for topic names. ':' is not among the allowed characters,
# so the key 'topic:partition' is unambiguous.
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
# Only the canonical decimal form of the partition, so keys round-trip exactly.
_PARTITION_KEY = re.compile(r"([a-zA-Z0-9._-]{1,249}):(0|[1-9][0-9]{0,9})")


def partition_key(topic: str, partition: int) -> str:
    """Return the map key 'topic:partition' used by Ack.positions and Ack.snapshot_handles.

    Kafka topic names cannot contain ':', so the key is unambiguous.
    """
    if not isinstance(topic, str) or not _TOPIC.fullmatch(topic):
        raise ControlRecordError(f"invalid Kafka topic name {topic!r}")
    if not is_int(partition) or not 0 <= partition <= INT_MAX:
        raise ControlRecordError(f"invalid partition {partition!r} of topic {topic!r}")
    return f"{topic}:{partition}"


def parse_partition_key(key: str) -> tuple[str, int]:
    """Split a 'topic:partition' key made by `partition_key` back into (topic, partition)."""
    match = _PARTITION_KEY.fullmatch(key) if isinstance(key, str) else None
    if match is None or int(match[2]) > INT_MAX:
        raise ControlRecordError(f"malformed partition key {key!r}: expected 'topic:partition'")
    return match[1], int(match[2])
