"""The plan in words, for the startup output: what each stage reads and how it joins."""

from __future__ import annotations

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.interval_join import IntervalJoinOp
from laminar_kafka.operators.join import JoinTableOp
from laminar_kafka.plan.stages import plan_stages


def describe_plan(pipeline: Pipeline) -> list[str]:
    """One line per stage, e.g. `stage 1 reads orders.join-customers.repartition; joins
    table customers (stream repartitioned by the join key)`; an interval join says
    `co-partitioned: no repartition` or `repartitions through <internal topic>`; a flow
    that only filters into a topic of its source's encoding, `writes <topic> as read`."""
    lines = []
    for stage in plan_stages(pipeline).stages:
        line = f"stage {stage.index} reads {', '.join(stage.stream_inputs)}"
        seen: set[str] = set()  # a co-partitioned join's step is in both sides' flows
        for flow in stage.flows:
            for op in flow.operators:
                if isinstance(op, JoinTableOp | AsOfJoinOp):
                    how = (
                        "stream repartitioned by the join key"
                        if flow.source.internal
                        else "stream declared partitioned by the join key: no repartition"
                    )
                    line += f"; {op.describe()}, {how}"
                elif isinstance(op, IntervalJoinOp) and op.step not in seen:
                    seen.add(op.step)
                    how = (
                        f"repartitions through {flow.source.topic}"
                        if op.sides is None
                        else "co-partitioned: no repartition"
                    )
                    line += f"; {op.describe()}, {how}"
            if flow.writes_source_bytes:
                line += f"; writes {flow.sink.topic} as read (filters only: no encode)"
        lines.append(line)
    return lines
