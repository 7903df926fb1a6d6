"""`PaidWorkload`: the input and the oracle of a chaos round for orders enriched from a
table, then joined with payments within an interval (`pipelines/orders_with_customers.py`).

The shape (`paid_shape`; near misses are refused naming why): a source of orders,
a left `join_table` on a field, then an inner `join_interval` of the enriched
orders (side a) with a second source of payments (side b) on a field of each,
writing the only sink; both sources stamped by a field.

All three topics get input all along, in event-time order across them:
- customers: a row for c0..c7 before the first order, then a change before
  every order (every seventh a tombstone), so that whenever orders are in
  flight, table records produced among them are too;
- orders: order i at `base + STEP_MS * i`, of customer c<i mod 10>;
- payments: order i's at `+ paid_after` unless 4 divides i, a second at
  `+ 2 * paid_after` when i mod 6 is 1; every fourth order's 5 s before its
  interval opens (it pairs with nothing).

Stamps lie `AHEAD_MS` past the wall clock (a task whose partitions all went idle
rises to the wall clock, below every stamp) and each partition's stamps rise, so
no record is late and the pairs do not depend on how the reads interleave. Which
row an order meets does (as in `join_chaos`): a pair's output must be the interval
merge of its payment with the table join of its order and some version of its
customer's row (or none). Each pair must come out once, and some output must carry
a row: a join that never reads its table fails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from laminar_kafka.api.pipeline import Flow, Pipeline
from laminar_kafka.chaos.producer import InputRecord
from laminar_kafka.chaos.shaped_workload import ShapedWorkload
from laminar_kafka.chaos.sink_output import read_output
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.event_time import KAFKA_TIME
from laminar_kafka.operators.interval_join import IntervalJoinOp, SideKey, Tagged
from laminar_kafka.operators.join import JoinTableOp
from laminar_kafka.operators.keyed import KeyByOp, key_bytes
from laminar_kafka.operators.partitioning import PARTITIONERS, murmur2_partition
from laminar_kafka.operators.stateless import MapOp
from laminar_kafka.runtime.task.event_clock import wall_ms
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.orders import order

AHEAD_MS = 15 * 60_000  # every stamp lies this far past the wall clock, or more
STEP_MS = 500  # order i is stamped `base + STEP_MS * i`
FIRST_ROWS = 8
EARLY_MS = 5_000  # a stray payment lies this far before its order's interval opens
ORDERS_PER_INPUT = 0.3
"""Orders per record of input: a round of `records` produces about `records` records."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True)
class PaidShape:
    """The flows reading orders and payments, the one writing the sink, and both joins."""

    source: Flow
    payments: Flow
    sink: Flow
    table_join: JoinTableOp
    interval: IntervalJoinOp
    table_on: str
    a_on: str
    b_on: str
    """The interval join's fields: the order's, the payment's."""


def _plumbing(op: object) -> bool:
    return isinstance(op, KeyByOp) or (isinstance(op, MapOp) and isinstance(op.fn, Tagged))


def paid_shape(pipeline: Pipeline) -> PaidShape | None:
    """The table-then-interval join shape (None: the pipeline has no interval join after
    a table join); a ConfigError naming what chaos cannot check for a near miss."""
    ops = [op for f in pipeline.flows for op in f.operators if not _plumbing(op)]
    tables = [op for op in ops if isinstance(op, JoinTableOp)]
    intervals = [op for op in ops if isinstance(op, IntervalJoinOp)]
    if not tables or not intervals:
        return None

    def refuse(why: str) -> ConfigError:
        return ConfigError(
            f"pipeline {pipeline.name}: {why}; chaos checks a left join_table then an inner "
            "join_interval with a second source, on fields, writing the only sink"
        )

    if len(ops) != 2 or len(tables) != 1 or len(intervals) != 1:
        steps = ", ".join(type(op).__name__ for op in ops)
        raise refuse(f"it runs {steps}")
    table_join, interval = tables[0], intervals[0]
    if table_join.how != "left" or interval.how != "inner":
        raise refuse(f"its joins are {table_join.how} and {interval.how}")
    keyed = [
        op.key
        for f in pipeline.flows
        for op in f.operators
        if isinstance(op, KeyByOp) and isinstance(op.key, SideKey)
    ]
    on = keyed[0].on if keyed else ()
    fields = (table_join.on, *on)
    if len(fields) != 3 or not all(isinstance(k, str) for k in fields):
        raise refuse("a join key is a function, not a field")
    sink = next(f for f in pipeline.flows if interval in f.operators)
    if pipeline.sink_topics != (sink.sink.topic,) or sink.sink.files is not None:
        raise refuse(f"it writes {list(pipeline.sink_topics)}")
    readers = [f for f in pipeline.flows if not f.source.internal]
    feeding = [f for f in readers if f.source.topic != table_join.table.topic]
    side_b = [f for f in feeding if MapOp(Tagged(1)) in f.operators]
    side_a = [f for f in feeding if f not in side_b]
    if len(side_a) != 1 or len(side_b) != 1:
        raise refuse(f"it reads {[f.source.topic for f in feeding]} besides the table")
    for flow in (side_a[0], side_b[0]):
        clock = flow.source.event_time
        if clock is None or not isinstance(clock.timestamp, str) or clock.timestamp == KAFKA_TIME:
            raise refuse(f"{flow.source.topic} is not stamped by a field")
    return PaidShape(side_a[0], side_b[0], sink, table_join, interval, *fields)


@dataclass(frozen=True)
class _Planned:
    at: int  # event time in ms (a table change: just before the order it precedes)
    topic: str
    key: bytes | None
    value: Any
    partition: int


class PaidWorkload(ShapedWorkload):
    """Customers, orders and payments for the table-then-interval shape (module doc)."""

    watermarked_from: int | None = None

    def __init__(self, pipeline: Pipeline, records: int, partitions: int) -> None:
        shape = paid_shape(pipeline)
        if shape is None:
            raise ConfigError(f"pipeline {pipeline.name}: no interval join after a table join")
        self.shape: PaidShape = shape
        streams = (shape.source.source.topic, shape.payments.source.topic)
        self.sides: tuple[str, ...] = (
            *streams,
            shape.table_join.table.topic,
        )  # each in flight at a fault
        self.partitions = partitions
        self.orders_n = max(8, int(records * ORDERS_PER_INPUT))
        after = shape.interval.after_ms
        if after < 3:
            raise ConfigError(f"pipeline {pipeline.name}: the interval must reach after the order")
        self.paid_after = min(after // 3, 4 * STEP_MS)  # payments trail by a few orders
        span = STEP_MS * self.orders_n + 2 * self.paid_after
        if AHEAD_MS + span > 45 * 60_000:
            raise ConfigError(
                f"{self.orders_n} orders span {span / 1000:.0f}s of event time: past the "
                "broker's 1 h horizon for future timestamps; give fewer --records"
            )
        self._replan(wall_ms())

    def _replan(self, now_ms: int) -> None:
        s = self.shape
        base = now_ms + AHEAD_MS
        a_time = str(s.source.source.event_time.timestamp)  # type: ignore[union-attr]
        b_time = str(s.payments.source.event_time.timestamp)  # type: ignore[union-attr]
        a_fmt, b_fmt = s.source.source.value_format, s.payments.source.value_format
        table = s.table_join.table
        by_a = PARTITIONERS[s.source.source.partitioner]
        by_b = PARTITIONERS[s.payments.source.partitioner]
        p = self.partitions
        planned: list[_Planned] = []
        versions: dict[Any, list[Any]] = {}  # key → every row it has had, None first
        self.changes = 0

        def change(at: int, key: str, row: Any) -> None:
            data = table.key_format.encode_one(key)
            value = None if row is None else table.value_format.encode_one(row)
            planned.append(_Planned(at, table.topic, data, value, murmur2_partition(data, p)))
            decoded = None if value is None else table.value_format.decode_one(value)
            versions.setdefault(key, [None]).append(decoded)
            self.changes += 1

        for c in range(FIRST_ROWS):
            change(base - 1, f"c{c}", {"name": f"customer {c}", "tier": c % 3})
        orders: list[dict[str, Any]] = []
        payments: list[dict[str, Any]] = []
        for i in range(self.orders_n):
            at = base + STEP_MS * i
            if i:
                n = self.changes
                key = f"c{n % (FIRST_ROWS + 1)}"  # c8 gets its first row among the orders
                change(at - 1, key, None if n % 7 == 0 else {"name": f"{key} v{n}", "tier": n % 3})
            o = a_fmt.decode_one(a_fmt.encode_one({**order(i), s.a_on: i, a_time: at}))
            orders.append(o)
            k = key_bytes(o[s.table_on])
            planned.append(_Planned(at, s.source.source.topic, k, a_fmt.encode_one(o), by_a(k, p)))
            times = [at + self.paid_after] if i % 4 else [at - s.interval.before_ms - EARLY_MS]
            if i % 6 == 1:
                times.append(at + 2 * self.paid_after)
            for t in times:
                pay = {s.b_on: i, "amount": 100_000 + len(payments), b_time: t}
                pay = b_fmt.decode_one(b_fmt.encode_one(pay))
                payments.append(pay)
                k = key_bytes(i)
                planned.append(
                    _Planned(t, s.payments.source.topic, k, b_fmt.encode_one(pay), by_b(k, p))
                )
        planned.sort(key=lambda r: r.at)  # stable: a change stays before its order
        self._planned = planned
        self.records = len(planned)
        self._expect(orders, payments, versions, a_time, b_time)

    def _expect(
        self,
        orders: list[dict[str, Any]],
        payments: list[dict[str, Any]],
        versions: Mapping[Any, list[Any]],
        a_time: str,
        b_time: str,
    ) -> None:
        """Each pair's accepted outputs, and which pair an output is (by its value)."""
        s = self.shape
        sink = s.sink.sink.value_format
        low, high = -s.interval.before_ms, s.interval.after_ms
        by_order: dict[int, list[dict[str, Any]]] = {}
        for pay in payments:
            by_order.setdefault(pay[s.b_on], []).append(pay)
        self.pair_of: dict[str, tuple[int, int]] = {}
        self.rowless: set[str] = set()
        self.pairs: set[tuple[int, int]] = set()
        for o in orders:
            i = o[s.a_on]
            hits = [p for p in by_order.get(i, []) if low <= p[b_time] - o[a_time] <= high]
            for pay in hits:
                pair = (i, pay["amount"])
                self.pairs.add(pair)
                for n, row in enumerate(versions.get(o[s.table_on], [None])):
                    enriched = s.table_join.merge(dict(o), None if row is None else dict(row))
                    value = _canonical(
                        sink.decode_one(sink.encode_one(s.interval.merge(enriched, dict(pay))))
                    )
                    if self.pair_of.setdefault(value, pair) != pair:
                        raise ConfigError(
                            f"pipeline {s.sink.sink.topic}: the join's merge gives two pairs "
                            "one output: chaos cannot tell them apart"
                        )
                    if n == 0:
                        self.rowless.add(value)

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        """A fresh plan (stamps ahead of the wall clock now) on the round's topics, in
        event-time order across the three topics."""
        if partitions != self.partitions:
            raise ConfigError(f"the plan has {self.partitions} partitions, not {partitions}")
        self._replan(wall_ms())
        table = self.shape.table_join.table.topic
        return [
            InputRecord(
                topics[r.topic], r.partition, r.key, r.value, None if r.topic == table else r.at
            )
            for r in self._planned
        ]

    def expected_outputs(self) -> int:
        return len(self.pairs)

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        sink = self.shape.sink.sink
        return self.check(read_output(bootstrap, sink, sinks[sink.topic]))

    def check(self, outputs: list[Any]) -> ExactlyOnceReport:
        """The oracle's verdict on the decoded committed output of the sink."""
        seen: dict[tuple[int, int], int] = {}
        wrong, joined, example = 0, 0, ""
        for out in outputs:
            value = _canonical(out)
            pair = self.pair_of.get(value)
            if pair is None:
                wrong += 1
                example = example or f"wrong: {value:.200}"
                continue
            seen[pair] = seen.get(pair, 0) + 1
            joined += value not in self.rowless
        if outputs and not joined:
            wrong += 1
            example = example or "no order found its customer's row: the table was never read"
        return ExactlyOnceReport.counted(self.pairs, seen, wrong, example)
