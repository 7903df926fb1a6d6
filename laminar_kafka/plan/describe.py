"""The plan in words, for the startup output: what each stage reads and how it joins."""

from __future__ import annotations

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.interval_join import IntervalJoinOp
from laminar_kafka.operators.join import JoinTableOp
from laminar_kafka.plan.stages import plan_stages


def describe_plan(pipeline: Pipeline) -> list[str]:
    """One line per stage, e.g. `stage 1 reads orders.join-customers.repartition; joins
    table customers (stream repartitioned by the join key)`."""
    lines = []
    for stage in plan_stages(pipeline).stages:
        line = f"stage {stage.index} reads {', '.join(stage.stream_inputs)}"
        for flow in stage.flows:
            for op in flow.operators:
                if isinstance(op, JoinTableOp | AsOfJoinOp):
                    how = (
                        "stream repartitioned by the join key"
                        if flow.source.internal
                        else "stream declared partitioned by the join key: no repartition"
                    )
                    line += f"; {op.describe()}, {how}"
                elif isinstance(op, IntervalJoinOp):
                    line += f"; {op.describe()}, both streams repartitioned by the join key"
        lines.append(line)
    return lines
