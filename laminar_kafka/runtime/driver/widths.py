"""Tasks per stage for a run, and the event that says when a stage got fewer than asked."""

from __future__ import annotations

from collections.abc import Mapping

from laminar_kafka.plan.stages import StagePlan
from laminar_kafka.plan.tasks import stage_parallelism
from laminar_kafka.runtime.driver.events import Listener, ParallelismCapped


def stage_widths(
    plan: StagePlan, counts: Mapping[str, int], wanted: int, emit: Listener
) -> list[int]:
    """Tasks per stage (`stage_parallelism`); a stage reading fewer partitions than
    `wanted` caps it, and `emit` hears which stage and topics did."""
    widths = stage_parallelism(plan, counts, wanted)
    if min(widths) < wanted:
        stage = widths.index(min(widths))
        inputs = tuple(plan.stages[stage].inputs)
        found = sum(counts[t] for t in inputs)
        emit(ParallelismCapped(wanted, min(widths), found, stage, inputs))
    return widths
