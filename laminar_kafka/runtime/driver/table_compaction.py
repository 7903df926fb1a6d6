"""A versioned table's topic must keep the versions an as-of join has not read yet.

Kafka compacts by record timestamps: once a record's segment is older than the
topic's `min.compaction.lag.ms` and a newer record of its key exists, the record
may be removed. A pipeline that reads the table again from a checkpoint (after a
restart) or lags behind it would then never see a version it needs, and join
records with an older value, silently. So a versioned table on a compacted topic
needs `min.compaction.lag.ms` of at least its `versions_kept`, as Kafka Streams
asks of a versioned table's source topic; a start is refused otherwise, unless
`--allow-table-compaction` (then a warning).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from laminar_kafka.api.specs import Flow
from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.admin import topic_settings
from laminar_kafka.kafka.clients import KafkaConnection

log = logging.getLogger(__name__)

SETTINGS = ("cleanup.policy", "min.compaction.lag.ms")


def versioned_tables(flows: Iterable[Flow]) -> dict[str, int]:
    """Topic → the longest `versions_kept` (ms) of the versioned tables it is read as."""
    found: dict[str, int] = {}
    for flow in flows:
        for table in flow.tables:
            if table.versions_kept_ms is not None:
                found[table.topic] = max(found.get(table.topic, 0), table.versions_kept_ms)
    return found


def compaction_problem(topic: str, kept_ms: int, settings: Mapping[str, str]) -> str | None:
    """Why `topic`'s settings may lose versions a table keeping `kept_ms` needs, or None."""
    if "compact" not in settings.get("cleanup.policy", "delete"):
        return None
    lag = int(settings.get("min.compaction.lag.ms", "0"))
    if lag >= kept_ms:
        return None
    return (
        f"versioned table {topic!r} is compacted after {lag} ms (min.compaction.lag.ms), less "
        f"than the {kept_ms} ms of versions it keeps: versions not read yet (after a restart, "
        "or while the pipeline lags) may be compacted away, and records joined with an older "
        f"value. Set it (kafka-configs.sh --alter --entity-type topics --entity-name {topic} "
        f"--add-config min.compaction.lag.ms={kept_ms}), or run with --allow-table-compaction"
    )


def check_table_compaction(kafka: KafkaConnection, flows: Iterable[Flow], allow: bool) -> None:
    """Refuse (or with `allow`, warn about) versioned tables that compaction may thin.

    A topic whose settings cannot be read (no DescribeConfigs permission) is
    logged and let through.
    """
    tables = versioned_tables(flows)
    for topic, settings in topic_settings(kafka, sorted(tables), list(SETTINGS)).items():
        problem = compaction_problem(topic, tables[topic], settings)
        if problem is None:
            continue
        if not allow:
            raise ConfigError(problem)
        log.warning("%s (allowed by --allow-table-compaction)", problem)
