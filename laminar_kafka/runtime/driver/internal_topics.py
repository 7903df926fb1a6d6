"""The internal topics between stages: created, checked and purged by the runner.

An internal topic keeps its partition count for life: the next stage's keyed
state lives per partition of it, so a different count would misplace every key.
Rescaling changes how many tasks share its partitions, never the count. Records
below the next stage's committed offset are never read again (a restart
resumes at a committed offset or above) and are deleted after each complete
checkpoint, so internal topics hold about one checkpoint interval of records.
Nothing else may delete them: the records above that offset are owed to the next
stage however long it cannot commit (an outage, a sink it may not write), so
internal topics have no retention (as Kafka Streams' repartition topics).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from laminar_kafka import faults
from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.admin import (
    delete_records_below,
    ensure_topics,
    partition_counts,
    topic_settings,
)
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import StagePlan

log = logging.getLogger(__name__)


NO_RETENTION = {"retention.ms": "-1", "retention.bytes": "-1"}
"""The settings of an internal topic: it deletes no record by time or size."""


def prepare_internal_topics(
    kafka: KafkaConnection,
    plan: StagePlan,
    parallelism: int,
    allow_retention: bool = False,
    tables: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Create the missing internal topics; internal topic → its partition count.

    A new topic gets the partitions its key_by asks for, else `parallelism`, and
    no retention; an existing one keeps its count, unless key_by asked for another
    (an error), and is refused if it has a retention, unless `allow_retention`.
    """
    existing = partition_counts(kafka)
    tables = tables or {}
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
        wanted = topic.wanted(tables)
        if have is not None and topic.like is not None and have != wanted:
            raise ConfigError(
                f"internal topic {name!r} has {have} partitions, but the table {topic.like!r} "
                f"it is joined with has {wanted}: delete the internal topic and start over "
                "with --reset, or give the table as many partitions"
            )
        counts[name] = have if have is not None else wanted or parallelism
    ensure_topics(
        kafka, {n: c for n, c in counts.items() if n not in existing}, config=NO_RETENTION
    )
    check_no_retention(kafka, [n for n in counts if n in existing], allow_retention)
    return counts


def check_no_retention(kafka: KafkaConnection, topics: list[str], allow: bool) -> None:
    """Refuse internal topics that delete records by time or size (unless `allow`: a warning).

    A topic whose settings cannot be read (no DescribeConfigs permission) is
    logged and let through.
    """
    for topic, values in topic_settings(kafka, topics, list(NO_RETENTION)).items():
        finite = ", ".join(f"{k}={v}" for k, v in sorted(values.items()) if v != "-1")
        if not finite:
            continue
        why = (
            f"internal topic {topic!r} deletes records by time or size ({finite}): records "
            "the next stage has not read yet, while it cannot commit (an outage, a sink it may "
            "not write), would be deleted and its input lost"
        )
        if allow:
            log.warning("%s (allowed by --allow-internal-retention)", why)
            continue
        raise ConfigError(
            f"{why}. The runner deletes what was read after each checkpoint, so set "
            f"retention.ms=-1 and retention.bytes=-1 on it (kafka-configs.sh --alter "
            f"--entity-type topics --entity-name {topic} --add-config "
            "retention.ms=-1,retention.bytes=-1), or run with --allow-internal-retention"
        )


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
