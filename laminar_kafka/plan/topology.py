"""The whole plan in words, as Kafka Streams' `Topology.describe()`: for `run --plan`.

Stages with their flows' steps, the internal topics with their partition
counts, the tasks per stage, the sinks and the names the run keeps in Kafka.
Built from `plan_stages` alone: no Spark, no broker. What only the broker
knows (the source topics' partition counts) is said as a bound: a stage runs
`parallelism` tasks, or fewer when the topics it reads have fewer partitions.
"""

from __future__ import annotations

from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.api.specs import Flow
from laminar_kafka.kafka import names
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.interval_join import IntervalJoinOp, SideKey, Tagged
from laminar_kafka.operators.join import JoinTableOp
from laminar_kafka.operators.keyed import AggregateOp, KeyByOp
from laminar_kafka.operators.process import ProcessOp
from laminar_kafka.operators.stateless import FilterOp, FlatMapOp, MapOp
from laminar_kafka.operators.steps import describe_key
from laminar_kafka.plan.stages import InternalTopic, Stage, StagePlan, plan_stages
from laminar_kafka.plan.tasks import spread

__all__ = ["describe_step", "describe_topology"]


def _function(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__qualname__)


def describe_step(op: object) -> str:
    """One operator, e.g. `key_by field 'product' (murmur2)` or `count 'totals' over ...`."""
    if isinstance(op, MapOp) and isinstance(op.fn, Tagged):
        return f"tag as side {'ab'[op.fn.side]} of the interval join"
    if isinstance(op, KeyByOp) and isinstance(op.key, SideKey):
        a, b = (describe_key(k) for k in op.key.on)
        return f"key_by the join key: {a} of side a, {b} of side b ({op.partitioner})"
    if isinstance(op, MapOp | FilterOp | FlatMapOp):
        word = {MapOp: "map", FilterOp: "filter", FlatMapOp: "flat_map"}[type(op)]
        return f"{word} {_function(op.fn)}"
    if isinstance(op, KeyByOp):
        return f"key_by {describe_key(op.key)} ({op.partitioner})"
    if isinstance(op, AggregateOp):
        window = f" over {op.window.describe()}" if op.window is not None else ""
        return f"{op.kind} step {op.step!r}{window} (keyed state)"
    if isinstance(op, ProcessOp):
        timers = ", with timers" if op.on_timer is not None else ""
        return f"process step {op.step!r} (keyed state{timers})"
    if isinstance(op, IntervalJoinOp) and op.sides is not None:
        return f"{op.describe()} step {op.step!r} (keyed state), co-partitioned: no repartition"
    if isinstance(op, IntervalJoinOp | AsOfJoinOp):
        return f"{op.describe()} step {op.step!r} (keyed state)"
    if isinstance(op, JoinTableOp):
        return op.describe()
    return type(op).__name__


def _flow_lines(flow: Flow) -> list[str]:
    source = flow.source
    read = f"read {source.topic}" + ("" if source.internal else f" (from {source.start_from})")
    if source.event_time is not None:
        read += ", event time"
    lines = [read, *(describe_step(op) for op in flow.operators)]
    sink = flow.sink
    if sink.internal:
        lines.append(f"repartition into {sink.topic}")
    elif sink.files is not None:
        lines.append(f"write files to {sink.url}")
    else:
        key = f" keyed by {describe_key(sink.key)}" if sink.key is not None else ""
        lines.append(f"write {sink.topic}{key}")
    return lines


def _tasks(stage: Stage, plan: StagePlan, parallelism: int) -> str:
    """How many tasks the stage runs, as far as it is known without the broker: each
    input partition goes to one task, so a stage never runs more tasks than that."""
    known, unknown = 0, []
    for topic in spread(stage):
        internal = plan.internal.get(topic)
        if internal is None or internal.like is not None:
            unknown.append(topic if internal is None else str(internal.like))
        else:
            known += internal.partitions or parallelism
    if not unknown:
        return f"{min(parallelism, known)} tasks"
    verb = "has" if len(unknown) == 1 else "have"
    return f"up to {parallelism} tasks (fewer if {', '.join(unknown)} {verb} fewer partitions)"


def _internal_line(topic: InternalTopic, parallelism: int) -> str:
    if topic.like is not None:
        count = f"as many partitions as the table {topic.like}"
    elif topic.partitions is not None:
        count = f"{topic.partitions} partitions (key_by partitions=)"
    else:
        count = f"{parallelism} partitions (the parallelism)"
    writers = ", ".join(str(w) for w in topic.writers)
    return (
        f"{topic.name}: {count} when the run creates it (an existing topic keeps its "
        f"count), written by stage {writers}, read by stage {topic.reader}"
    )


def describe_topology(pipeline: Pipeline, parallelism: int) -> list[str]:
    """The plan of `pipeline` run at `parallelism`, one line per fact, indented by level."""
    plan = plan_stages(pipeline)
    lines = [f"pipeline {pipeline.name}: {len(plan.stages)} stage(s), parallelism {parallelism}"]
    lines.append(f"sources: {', '.join(pipeline.source_topics)}")
    for stage in plan.stages:
        state = ", keeps state" if stage.keeps_state else ""
        lines.append(f"stage {stage.index}: {_tasks(stage, plan, parallelism)}{state}")
        for table, stream in stage.tables.items():
            lines.append(f"  table {table}, partitioned as {stream}")
        for b, a in stage.co_partitioned.items():
            lines.append(f"  stream {b}, partitioned as {a} (co-partitioned join)")
        for i, flow in enumerate(stage.flows):
            steps = _flow_lines(flow)
            lines.append(f"  flow {i}: {steps[0]}")
            lines += [f"    -> {step}" for step in steps[1:]]
    lines.append("internal topics:" if plan.internal else "internal topics: none")
    lines += [f"  {_internal_line(t, parallelism)}" for t in plan.internal.values()]
    lines.append(f"sinks: {', '.join(pipeline.outputs) or 'none'}")
    name = pipeline.name
    lines += [
        f"dead letters: {names.dead_letter_topic(name)}",
        f"control topic: {names.control_topic(name)} (1 partition)",
        f"consumer group: {names.consumer_group(name)}; transactional ids: "
        f"{names.transactional_id(name, 0)} ...",
    ]
    return lines
