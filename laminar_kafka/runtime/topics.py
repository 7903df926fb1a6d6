"""The topics a run needs, made ready before its first generation starts."""

from __future__ import annotations

from dataclasses import dataclass

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.kafka.admin import ensure_topics, record_limits, source_partition_counts
from laminar_kafka.plan.stages import StagePlan
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.internal_topics import prepare_internal_topics


@dataclass(frozen=True)
class PreparedTopics:
    counts: dict[str, int]
    """Partitions of every topic a stage reads: sources and internal topics."""
    limits: dict[str, int]
    """Topic written → the largest record it accepts."""


def prepare_topics(config: RuntimeConfig, pipeline: Pipeline, plan: StagePlan) -> PreparedTopics:
    """Count the sources' partitions; create sinks, the dead-letter and internal topics."""
    counts = source_partition_counts(config.kafka, pipeline.source_topics)
    sinks = dict.fromkeys(pipeline.sink_topics, max(counts.values()))
    wanted = {**sinks, config.dead_letters_to(pipeline.name): 1}
    counts.update(
        prepare_internal_topics(
            config.kafka, plan, config.parallelism, config.allow_internal_retention, counts
        )
    )
    ensure_topics(config.kafka, wanted)
    return PreparedTopics(counts, record_limits(config.kafka, [*wanted, *plan.internal]))
