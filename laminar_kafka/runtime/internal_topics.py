"""The internal topics between stages: created, checked and purged by the runner.

An internal topic keeps its partition count for life: the next stage's keyed
state lives per partition of it, so a different count would misplace every key.
Rescaling changes how many tasks share its partitions, never the count. Records
below the next stage's committed offset are never read again (a restart
resumes at a committed offset or above) and are deleted after each complete
checkpoint, so internal topics hold about one checkpoint interval of records.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from laminar_kafka import faults
from laminar_kafka.errors import CheckpointError, ConfigError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.admin import (
    delete_records_below,
    ensure_topics,
    partition_counts,
    watermark_offsets,
)
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import StagePlan

log = logging.getLogger(__name__)


def prepare_internal_topics(
    kafka: KafkaConnection, plan: StagePlan, parallelism: int
) -> dict[str, int]:
    """Create the missing internal topics; internal topic → its partition count.

    A new topic gets the partitions its key_by asks for, else `parallelism`; an
    existing one keeps its count, unless key_by asked for another (an error).
    """
    existing = partition_counts(kafka)
    counts: dict[str, int] = {}
    for name, topic in plan.internal.items():
        have = existing.get(name)
        if have is not None and topic.partitions is not None and have != topic.partitions:
            raise ConfigError(
                f"internal topic {name!r} has {have} partitions, but key_by asks for "
                f"{topic.partitions}: the next stage's state is kept per partition, so the "
                "count cannot change; keep partitions=" + str(have) + ", or start over "
                "with --reset after deleting the topic"
            )
        counts[name] = have if have is not None else topic.partitions or parallelism
    ensure_topics(kafka, {n: c for n, c in counts.items() if n not in existing})
    return counts


def check_internal_intact(
    kafka: KafkaConnection, committed: Mapping[PartitionKey, int | None]
) -> None:
    """Refuse to start when an internal partition ends below its committed offset.

    Then the topic was deleted (and created again) or truncated: records that one
    stage committed and the next had not read yet are gone.
    """
    probe = probe_consumer(kafka)
    try:
        for (topic, partition), offset in committed.items():
            if offset is None:
                continue
            _, high = watermark_offsets(probe, topic, partition, 30.0)
            if high < offset:
                raise CheckpointError(
                    f"internal topic {topic}[{partition}] ends at offset {high}, below the "
                    f"committed offset {offset}: it was deleted or truncated while the "
                    "pipeline ran, and the records between the stages are lost. Start "
                    "over with --reset"
                )
    finally:
        probe.close()


def purge_internal(
    kafka: KafkaConnection, committed: Mapping[PartitionKey, int | None], checkpoint_id: int
) -> int:
    """Delete what the next stage committed past; returns how many partitions were purged."""
    below = {k: off for k, off in committed.items() if off}
    for i, key in enumerate(sorted(below)):
        delete_records_below(kafka, {key: below[key]})
        if i == 0:
            faults.crash_here(FaultPoint.DURING_PURGE, checkpoint_id)
    return len(below)


def clear_internal(kafka: KafkaConnection, counts: Mapping[str, int]) -> None:
    """Delete every record of the internal topics (a reset: nothing in them is owed)."""
    delete_records_below(kafka, {(t, p): -1 for t, n in counts.items() for p in range(n)})
