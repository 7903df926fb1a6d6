"""The topics of a pipeline in the test kit: partition counts, the order they are read in,
and the formats of the topics late records go to."""

from __future__ import annotations

from collections.abc import Mapping

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import Format
from laminar_kafka.operators import window_of
from laminar_kafka.plan.stages import plan_stages


def partition_counts(pipeline: Pipeline, partitions: int | Mapping[str, int]) -> dict[str, int]:
    """Partitions per topic the pipeline reads, internal topics included.

    Source topics: one count for all, or per topic (1 if not given). Internal
    topics: the `partitions=` of their key_by if set, else the one count, else 1.
    """
    if isinstance(partitions, int):
        counts = dict.fromkeys(pipeline.source_topics, partitions)
    else:
        counts = {t: partitions.get(t, 1) for t in pipeline.source_topics}
        unknown = sorted(set(partitions) - set(counts))
        if unknown:
            raise ConfigError(f"partitions given for topics the pipeline does not read: {unknown}")
    for topic, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"topic {topic} needs at least 1 partition, not {n!r}")
    default = partitions if isinstance(partitions, int) else 1
    for flow in pipeline.flows:
        if flow.sink.internal and flow.sink.topic not in counts:
            like = flow.sink.partitions_like
            counts[flow.sink.topic] = (
                counts[like] if like is not None else flow.sink.partitions or default
            )
    return counts


def read_order(pipeline: Pipeline) -> list[str]:
    """The topics the pipeline reads, stage by stage (upstream first)."""
    stages = plan_stages(pipeline).stages
    return list(dict.fromkeys(t for stage in stages for t in stage.inputs))


def late_formats(pipeline: Pipeline) -> dict[str, Format]:
    """Each `late_to` topic → the format of the records its windowed step reads."""
    return {
        w.late_to: flow.source.value_format
        for flow in pipeline.flows
        for op in flow.operators
        if (w := window_of(op)) and w.late_to
    }
