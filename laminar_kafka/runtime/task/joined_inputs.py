"""What a flow's batch sees of the partitions it joins, beside its own.

A stream-table join looks its records up in the rows (or versions) of the table
partition with the stream partition's number, held by the same task
(plan/tasks.py). A co-partitioned interval join runs in the flows of both its
sides, which the same task reads partition by partition: a batch of either side,
or a watermark of either, works on the state of side a's partition (the join's
buffers and timers), and with the lower of both partitions' watermarks, so that a
record is late, or left unmatched, only once neither side can still bring its
partner. Each partition keeps its own watermark (its event-time progress); only
the join sees both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from laminar_kafka.api.specs import Flow
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.event_time import Progress
from laminar_kafka.operators.join import side_rows, side_watermarks
from laminar_kafka.state.keyed_state import KeyedState

StatesOf = Callable[[PartitionKey], dict[str, KeyedState]]
"""A partition of the task → its tables."""


def joined(flow: Flow, ctx: BatchContext, states_of: StatesOf) -> BatchContext:
    """`ctx` (a batch's, stamped, or a watermark's) with what `flow` joins: the rows and
    watermarks of its tables, or the other side of its co-partitioned interval join."""
    if flow.tables:
        tables, partition = flow.tables, ctx.partition
        side = side_rows(tables, partition, states_of)
        marks = side_watermarks(tables, partition, states_of)
        ctx = replace(ctx, side=side, side_watermarks=marks)
    sides = flow.co_partitioned
    if sides is None:
        return ctx
    a, b = sides
    other = Progress.of(states_of((b if ctx.topic == a else a, ctx.partition))).watermark
    lowest = ctx.marks
    if any(mark > other for mark in lowest.values()):
        lowest = {offset: min(mark, other) for offset, mark in lowest.items()}
    return replace(
        ctx,
        tables=states_of((a, ctx.partition)),
        marks=lowest,
        watermark=min(ctx.watermark, other),
    )
