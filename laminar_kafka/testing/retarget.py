"""A copy of a pipeline under another name, reading and writing other topics.

Tests and fault-injection rounds run a user's pipeline on fresh topics and a
fresh checkpoint identity without touching the pipeline's file. Internal topics
(`<pipeline>.<step>.repartition`) follow the new name; the topics windows send late
records to (`late_to`) are replaced like sinks, the tables a flow joins like
sources (with the repartition that takes its partition count from one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from laminar_kafka.api.pipeline import Flow, Pipeline, SinkSpec, SourceSpec
from laminar_kafka.operators import AggregateOp, Operator
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.join import JoinTableOp


def retarget(pipeline: Pipeline, name: str, topics: Mapping[str, str]) -> Pipeline:
    """`pipeline` renamed to `name`, with topics replaced as `topics` maps them.

    An internal topic not in `topics` gets `<name>.` in place of `<old name>.`;
    stateful steps keep their names (their state follows them).
    """
    copy = Pipeline(name)
    old_prefix, new_prefix = f"{pipeline.name}.", f"{copy.name}."

    def moved(topic: str, internal: bool) -> str:
        if topic in topics:
            return topics[topic]
        if internal and topic.startswith(old_prefix):
            return new_prefix + topic[len(old_prefix) :]
        return topic

    def source(spec: SourceSpec) -> SourceSpec:
        return replace(spec, topic=moved(spec.topic, spec.internal))

    def sink(spec: SinkSpec) -> SinkSpec:
        like = spec.partitions_like
        return replace(
            spec,
            topic=moved(spec.topic, spec.internal),
            partitions_like=None if like is None else moved(like, False),
        )

    def operator(op: Operator) -> Operator:
        if isinstance(op, AggregateOp) and op.window is not None and op.window.late_to:
            return replace(op, window=replace(op.window, late_to=moved(op.window.late_to, False)))
        if isinstance(op, JoinTableOp | AsOfJoinOp):
            return replace(op, table=replace(op.table, topic=moved(op.table.topic, False)))
        return op

    for flow in pipeline.flows:
        operators = tuple(operator(op) for op in flow.operators)
        copy.add_flow(Flow(source(flow.source), operators, sink(flow.sink)))
    return copy
