"""A copy of a pipeline under another name, reading and writing other topics.

Tests and fault-injection rounds run a user's pipeline on fresh topics and a
fresh checkpoint identity without touching the pipeline's file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from laminar_kafka.api.pipeline import Flow, Pipeline


def retarget(pipeline: Pipeline, name: str, topics: Mapping[str, str]) -> Pipeline:
    """`pipeline` renamed to `name`, with topics replaced as `topics` maps them."""
    copy = Pipeline(name)
    for flow in pipeline.flows:
        copy.add_flow(
            Flow(
                replace(flow.source, topic=topics.get(flow.source.topic, flow.source.topic)),
                flow.operators,
                replace(flow.sink, topic=topics.get(flow.sink.topic, flow.sink.topic)),
            )
        )
    return copy
