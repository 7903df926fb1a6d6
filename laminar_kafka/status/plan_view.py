"""The plan of a pipeline as the status page shows it: plain data, ready for JSON."""

from __future__ import annotations

from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.kafka import names
from laminar_kafka.plan import plan_stages


def plan_view(
    pipeline: Pipeline, parallelism: int, dead_letter_topic: str | None = None
) -> dict[str, Any]:
    """Stages (inputs, outputs, parallelism asked for), internal topics, sinks and the
    dead-letter topic (`RuntimeConfig.dead_letters_to`; the default name when None).

    A stage may run fewer tasks than `parallelism` when its inputs have fewer
    partitions; the tasks it runs come with each checkpoint (`stages` there).
    """
    plan = plan_stages(pipeline)
    stages = []
    for stage in plan.stages:
        written = {f.sink.topic for f in stage.flows if not f.sink.internal}
        stages.append(
            {
                "stage": stage.index,
                "inputs": list(stage.inputs),
                "internal_inputs": list(stage.internal_inputs),
                "internal_outputs": list(stage.internal_outputs),
                "sinks": sorted(written),
                "stateful": stage.is_stateful,
                "parallelism": parallelism,
            }
        )
    internal = [
        {
            "topic": t.name,
            "partitions": t.partitions,
            "writers": list(t.writers),
            "reader": t.reader,
        }
        for t in plan.internal.values()
    ]
    sinks = sorted({f.sink.topic for f in pipeline.flows if not f.sink.internal})
    return {
        "pipeline": pipeline.name,
        "sources": list(pipeline.source_topics),
        "stages": stages,
        "internal_topics": internal,
        "sinks": sinks,
        "dead_letter_topic": dead_letter_topic or names.dead_letter_topic(pipeline.name),
    }
