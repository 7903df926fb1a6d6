"""`JoinWorkload`: the input and the oracle of a chaos round for a stream-table join.

For pipelines whose sink a left `join_table` (of the latest row) feeds,
straight from one source topic of orders (`testing.orders.order`), maybe
repartitioned on the way (`join_shape`; other shapes are refused with a
ConfigError; an as-of join of this shape gets `asof_chaos.AsOfWorkload`).
Both sides get input: rows for most customers come first, then the orders,
with table changes among them (updates, a new customer, tombstones), some in
the last quarter of the input, so that a kill meets both sides in flight.

A record joins with whichever row of its key is current when its task reads
it, and nothing orders a table partition's records against the stream's
beyond barrier alignment; so the oracle accepts, for each order, exactly the
values some state of the planned table gives: the batch join
(`testing.join_workload.batch_join`) of the orders with the empty table and
with the table after each planned table record. The output is compared order by order
(each id once, its value one of those), and at least one order must have
found a row: a join that never reads its table fails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from laminar_kafka.api.pipeline import Flow, Pipeline
from laminar_kafka.chaos.producer import InputRecord
from laminar_kafka.chaos.shaped_workload import ShapedWorkload
from laminar_kafka.chaos.sink_output import read_output
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.join import JoinTableOp
from laminar_kafka.operators.keyed import KeyByOp, key_bytes
from laminar_kafka.operators.partitioning import PARTITIONERS, murmur2_partition
from laminar_kafka.testing.join_workload import batch_join
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.orders import order

CUSTOMERS = 10
"""Orders name customers c0..c9 (`order`'s default)."""
FIRST_ROWS = 8
"""c0..c7 have a row before any order; c8 gets one later, c9 never."""
CHANGES: tuple[tuple[float, str, bool], ...] = (
    (0.3, "c1", True),
    (0.45, "c2", False),
    (0.6, "c8", True),
    (0.8, "c3", True),
    (0.9, "c4", False),
)
"""(share of the orders produced before it, customer, a new row (else a tombstone))."""


@dataclass(frozen=True)
class JoinShape:
    """The flow reading the orders and the flow joining them and writing the sink."""

    source: Flow
    sink: Flow
    join: JoinTableOp | AsOfJoinOp


def _describe(op: Any) -> str:
    describe = getattr(op, "describe", None)
    return describe() if callable(describe) else type(op).__name__


def join_shape(pipeline: Pipeline) -> JoinShape | None:
    """The stream-table join feeding the sink (None: the pipeline joins no table);
    a ConfigError naming what chaos cannot check for any other shape with a table."""

    def refuse(why: str) -> ConfigError:
        return ConfigError(
            f"pipeline {pipeline.name}: {why}; chaos checks one stream-table join "
            "(join_table: left, or as of the record's time) fed by one source topic and "
            "writing the only sink, and cannot check this shape yet"
        )

    joins = [f for f in pipeline.flows if f.tables]
    if not joins:
        return None
    if len(joins) > 1:
        raise refuse(f"it joins tables in {len(joins)} flows")
    flow = joins[0]
    op = flow.operators[0] if len(flow.operators) == 1 else None
    if not isinstance(op, JoinTableOp | AsOfJoinOp):
        steps = ", ".join(_describe(o) for o in flow.operators)
        raise refuse(f"the joining flow {flow.label} runs {steps}")
    if isinstance(op, JoinTableOp) and op.how != "left":
        raise refuse("its join is inner: how many orders come out depends on when rows are read")
    if flow.sink.internal or flow.sink.files is not None:
        raise refuse(f"the join's output goes on to {flow.sink.label}, not to a topic sink")
    if pipeline.sink_topics != (flow.sink.topic,):
        raise refuse(f"it writes {list(pipeline.sink_topics)}, the join only {flow.sink.topic!r}")
    streams = [t for t in pipeline.source_topics if t != op.table.topic]
    if len(streams) != 1:
        raise refuse(f"it reads {streams} besides the table {op.table.topic!r}")
    for other in (f for f in pipeline.flows if f is not flow):
        if not other.sink.internal or not all(isinstance(o, KeyByOp) for o in other.operators):
            steps = ", ".join(_describe(o) for o in other.operators) or "no step"
            raise refuse(f"flow {other.label} runs {steps} besides the join")
    source = next(f for f in pipeline.flows if not f.source.internal)
    return JoinShape(source, flow, op)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class JoinWorkload(ShapedWorkload):
    """Orders and table rows for a pipeline with a stream-table join (see the module doc)."""

    watermarked_from: int | None = None
    sides: tuple[str, ...] = ()

    def __init__(self, pipeline: Pipeline, records: int) -> None:
        shape = join_shape(pipeline)
        if shape is None:
            raise ConfigError(f"pipeline {pipeline.name}: it joins no table")
        if not isinstance(shape.join, JoinTableOp):
            raise ConfigError(f"pipeline {pipeline.name}: its join is as of the record's time")
        self.shape: JoinShape = shape
        self.records = records
        source = shape.source.source.value_format
        table = shape.join.table
        key_of = shape.join.on if callable(shape.join.on) else itemgetter(shape.join.on)
        self.orders = [source.decode_one(source.encode_one(order(i))) for i in range(records)]
        self._order_data = [(key_bytes(key_of(o)), source.encode_one(o)) for o in self.orders]
        self.table: list[tuple[int, str, Any]] = [  # (orders before it, key, row or None)
            (0, f"c{c}", {"name": f"customer {c}", "tier": c % 3}) for c in range(FIRST_ROWS)
        ]
        for n, (share, key, row) in enumerate(CHANGES):
            value = {"name": f"customer {key} v{n}", "tier": n % 3} if row else None
            self.table.append((int(share * records), key, value))
        decode_row = table.value_format.decode_one
        snapshot: dict[Any, Any] = {}
        snapshots = [dict(snapshot)]
        for _, key, row in self.table:
            if row is None:
                snapshot.pop(key, None)
            else:
                snapshot[key] = decode_row(table.value_format.encode_one(row))
            snapshots.append(dict(snapshot))
        sink = shape.sink.sink.value_format
        self.accepted: dict[int, set[str]] = {o["id"]: set() for o in self.orders}
        for state in snapshots:
            joined = batch_join(self.orders, state, shape.join.merge, shape.join.on)
            for i, value in joined.items():
                self.accepted[i].add(_canonical(sink.decode_one(sink.encode_one(value))))
        self.rowless = {
            i: _canonical(sink.decode_one(sink.encode_one(v)))
            for i, v in batch_join(self.orders, {}, shape.join.merge, shape.join.on).items()
        }

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        """Table rows placed by murmur2 of their key, orders by the source's partitioner
        of their join key: the join looks a key up in the table partition its order's
        partition (after a repartition by murmur2, if any) maps to."""
        table = self.shape.join.table
        orders_topic = topics[self.shape.source.source.topic]
        order_partition = PARTITIONERS[self.shape.source.source.partitioner]
        planned: list[InputRecord] = []
        changes = iter(self.table)
        change = next(changes, None)
        for i in range(self.records + 1):
            while change is not None and change[0] <= i:
                key = table.key_format.encode_one(change[1])
                row = None if change[2] is None else table.value_format.encode_one(change[2])
                where = murmur2_partition(key, partitions)
                planned.append(InputRecord(topics[table.topic], where, key, row))
                change = next(changes, None)
            if i < self.records:
                key, data = self._order_data[i]
                where = order_partition(key, partitions)
                planned.append(InputRecord(orders_topic, where, key, data))
        return planned

    def expected_outputs(self) -> int:
        return self.records  # a left join: one output per order

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        sink = self.shape.sink.sink
        return self.check(read_output(bootstrap, sink, sinks[sink.topic]))

    def check(self, outputs: list[Any]) -> ExactlyOnceReport:
        """The oracle's verdict on the decoded committed output of the sink."""
        seen: dict[int, int] = {}
        wrong, joined, example = 0, 0, ""
        for out in outputs:
            i = out.get("id") if isinstance(out, dict) else None
            value = _canonical(out)
            if not isinstance(i, int) or value not in self.accepted.get(i, set()):
                wrong += 1
                example = example or f"wrong: {value:.200}"
                continue
            seen[i] = seen.get(i, 0) + 1
            joined += value != self.rowless[i]
        if outputs and not joined:
            wrong += 1
            example = example or "no order found its customer's row: the table was never read"
        return ExactlyOnceReport.counted(self.accepted, seen, wrong, example)
