"""Each partition's log start and last stable offset: the end a read_committed reader reaches.

The high watermark counts records of transactions still open; a read_committed
reader stops before the first of them (the last stable offset, LSO). A bounded
run ends where its readers can get, so it asks for the LSO: Kafka's ListOffsets
for the latest offset under `isolation.level=read_committed`.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.clients import KafkaConnection, admin_client
from laminar_kafka.kafka.names import PartitionKey


def stable_bounds(
    kafka: KafkaConnection, keys: Sequence[PartitionKey], timeout_s: float = 30.0
) -> dict[PartitionKey, tuple[int, int]]:
    """Partition → (log start, last stable offset)."""
    if not keys:
        return {}
    admin = admin_client(kafka)
    found: dict[PartitionKey, list[int]] = {key: [] for key in keys}
    for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):  # type: ignore[no-untyped-call]
        asked = {TopicPartition(t, p): spec for t, p in keys}
        try:
            futures = admin.list_offsets(
                asked, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout_s
            )
            for tp, future in futures.items():
                found[(tp.topic, tp.partition)].append(int(future.result().offset))
        except (KafkaException, ValueError) as exc:
            raise LaminarError(f"cannot read the end offsets of the sources: {exc}") from None
    return {key: (low, end) for key, (low, end) in found.items()}
