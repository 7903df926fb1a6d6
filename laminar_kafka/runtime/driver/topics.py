"""The topics a run needs, made ready before its first generation starts."""

from __future__ import annotations

from dataclasses import dataclass

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.kafka.admin import ensure_topics, record_limits, source_partition_counts
from laminar_kafka.plan.stages import StagePlan
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.internal_topics import prepare_internal_topics
from laminar_kafka.runtime.driver.table_compaction import check_table_compaction


@dataclass(frozen=True)
class PreparedTopics:
    counts: dict[str, int]
    """Partitions of every topic a stage reads: sources and internal topics."""
    limits: dict[str, int]
    """Topic written → the largest record it accepts."""


def prepare_topics(config: RuntimeConfig, pipeline: Pipeline, plan: StagePlan) -> PreparedTopics:
    """Count the sources' partitions; check that compaction keeps what versioned tables
    need; create sinks, the dead-letter and internal topics."""
    counts = source_partition_counts(config.kafka, pipeline.source_topics)
    check_table_compaction(config.kafka, pipeline.flows, config.allow_table_compaction)
    sinks = dict.fromkeys(pipeline.sink_topics, max(counts.values()))
    wanted = {**sinks, config.dead_letters_to(pipeline.name): 1}
    counts.update(
        prepare_internal_topics(
            config.kafka, plan, config.parallelism, config.allow_internal_retention, counts
        )
    )
    ensure_topics(config.kafka, wanted)
    return PreparedTopics(counts, record_limits(config.kafka, [*wanted, *plan.internal]))
