"""`AsOfWorkload`: the input and the oracle of a chaos round for an as-of join.

For pipelines whose sink a `join_table(..., as_of=True)` feeds, straight from
one source topic of orders (`testing.orders.order`) stamped by a field, maybe
repartitioned on the way (`join_chaos.join_shape`). Both sides get input all
along: a version of every key but one (which never has a row) before the
first order, then a change every few orders (new rows, every seventh a
tombstone), then one closing row per table partition (`ticks`).

The answer does not depend on how the two topics' reads interleave. An order
waits until its table partition's watermark passes its time, and each table
partition's versions come in time order (never late), so it is joined with
every version up to its time and none after. The produced sequence is in
time order across both topics too (a change at `base + STEP * i`, order i at
`+ STEP / 2`): a table partition released as idle rises to a watermark of
orders produced before its next change, below that change's time. Stamps lie
`AHEAD_MS` past the wall clock at planning time, so a task whose partitions
all went idle (raised to the wall clock) releases nothing early; the closing
rows, past the last order, release every order still waiting at the end.

Records carry their time as their Kafka timestamp too (a tombstone has no
field to read, and the table may be stamped by Kafka). The oracle is the
batch as-of join (`testing.asof_workload.batch_asof_join`) of the planned
input, each order's output compared once, exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from operator import itemgetter
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.chaos.join_chaos import JoinShape, join_shape
from laminar_kafka.chaos.producer import InputRecord
from laminar_kafka.chaos.shaped_workload import ShapedWorkload
from laminar_kafka.chaos.sink_output import read_output
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.event_time import KAFKA_TIME
from laminar_kafka.operators.keyed import key_bytes
from laminar_kafka.operators.partitioning import PARTITIONERS, murmur2_partition
from laminar_kafka.runtime.task.event_clock import wall_ms
from laminar_kafka.testing.asof_workload import batch_asof_join
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.orders import order

AHEAD_MS = 15 * 60_000
"""Every stamp lies this far past the wall clock at planning time, or more."""
STEP_MS = 50
"""Order i is stamped `base + STEP_MS * i + STEP_MS // 2`."""
CHANGE_EVERY = 10
"""A table change before every tenth order (before every order of inputs under 100)."""
TICK = "tick"

Change = tuple[int, Any, Any, int]
"""(orders produced before it, key, row or None for a tombstone, time in ms)."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def tick_keys(partitions: int) -> list[str]:
    """A key of each table partition (murmur2 of its UTF-8 bytes), never an order's."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < partitions:
        found.setdefault(murmur2_partition(f"{TICK}{n}".encode(), partitions), f"{TICK}{n}")
        n += 1
    return [found[p] for p in range(partitions)]


class AsOfWorkload(ShapedWorkload):
    """Orders and a versioned table for a pipeline with an as-of join (see the module doc)."""

    watermarked_from: int | None = None
    sides: tuple[str, ...] = ()

    def __init__(self, pipeline: Pipeline, records: int, partitions: int) -> None:
        shape = join_shape(pipeline)
        if shape is None or not isinstance(shape.join, AsOfJoinOp):
            raise ConfigError(f"pipeline {pipeline.name}: it joins no table as of a time")
        self.shape: JoinShape = shape
        self.op: AsOfJoinOp = shape.join
        clock, table_clock = shape.source.source.event_time, self.op.table.event_time
        if clock is None or not isinstance(clock.timestamp, str) or clock.timestamp == KAFKA_TIME:
            raise ConfigError(
                f"pipeline {pipeline.name}: chaos stamps the orders of an as-of join by a "
                "field: give the source timestamp='ts_ms'"
            )
        assert table_clock is not None and self.op.table.versions_kept_ms is not None
        if callable(table_clock.timestamp):
            raise ConfigError(
                f"pipeline {pipeline.name}: chaos stamps the table {self.op.table.topic!r} by "
                "Kafka timestamp or by a field, not by a function"
            )
        span = STEP_MS * (records + 2)
        if span > min(self.op.table.versions_kept_ms, 30 * 60_000):
            raise ConfigError(
                f"{records} orders span {span / 1000:.0f}s of event time: more than the "
                "table's versions_kept or half an hour (the broker's 1 h horizon for future "
                "timestamps); give fewer --records"
            )
        self.time_field: str = clock.timestamp
        self.table_field = None if table_clock.timestamp == KAFKA_TIME else table_clock.timestamp
        self.records, self.partitions = records, partitions
        self.key_of = self.op.on if callable(self.op.on) else itemgetter(self.op.on)
        self.keys = sorted({self.key_of(order(i)) for i in range(records)}, key=str)
        self._replan(wall_ms())

    def _row(self, n: int, ts: int) -> dict[str, Any]:
        row: dict[str, Any] = {"price": 100 + n}
        if self.table_field is not None:
            row[self.table_field] = ts
        return row

    def _replan(self, now_ms: int) -> None:
        base = now_ms + AHEAD_MS
        source = self.shape.source.source.value_format
        self.orders = []
        for i in range(self.records):
            o = {**order(i), self.time_field: base + STEP_MS * i + STEP_MS // 2}
            self.orders.append(source.decode_one(source.encode_one(o)))
        priced = self.keys[:-1]  # the last key never has a row
        self.changes: list[Change] = [
            (0, key, self._row(k, base), base) for k, key in enumerate(priced)
        ]
        every = CHANGE_EVERY if self.records >= 100 else 1
        for n, i in enumerate(range(every, self.records, every)):
            ts = base + STEP_MS * i
            row = None if n % 7 == 6 else self._row(len(priced) + n, ts)
            self.changes.append((i, priced[n % len(priced)], row, ts))
        end = base + STEP_MS * (self.records + 1)
        self.changes += [(self.records, k, self._row(-1, end), end) for k in self.ticks()]
        table, sink = self.op.table.value_format, self.shape.sink.sink.value_format
        decoded = [
            (key, None if row is None else table.decode_one(table.encode_one(row)), ts)
            for _, key, row, ts in self.changes
        ]
        joined = batch_asof_join(
            self.orders, decoded, self.op.merge, self.op.on, self.time_field, self.op.how == "left"
        )
        self.expected = {
            i: _canonical(sink.decode_one(sink.encode_one(v))) for i, v in joined.items()
        }

    def ticks(self) -> list[str]:
        """The closing rows' keys, one per table partition."""
        return tick_keys(self.partitions)

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        """A fresh plan (stamps ahead of the wall clock now), on the round's topics: table
        records placed by murmur2 of their key, orders by the source's partitioner of
        their join key, in time order across both topics."""
        if partitions != self.partitions:
            raise ConfigError(f"the plan has {self.partitions} partitions, not {partitions}")
        self._replan(wall_ms())
        table, source = self.op.table, self.shape.source.source
        order_partition = PARTITIONERS[source.partitioner]
        planned: list[InputRecord] = []
        changes = iter(self.changes)
        change = next(changes, None)
        for i in range(self.records + 1):
            while change is not None and change[0] <= i:
                _, key, row, ts = change
                data = table.key_format.encode_one(key)
                value = None if row is None else table.value_format.encode_one(row)
                where = murmur2_partition(data, partitions)
                planned.append(InputRecord(topics[table.topic], where, data, value, ts))
                change = next(changes, None)
            if i < self.records:
                o = self.orders[i]
                key = key_bytes(self.key_of(o))
                planned.append(
                    InputRecord(
                        topics[source.topic],
                        order_partition(key, partitions),
                        key,
                        source.value_format.encode_one(o),
                        o[self.time_field],
                    )
                )
        return planned

    def expected_outputs(self) -> int:
        return len(self.expected)

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        sink = self.shape.sink.sink
        return self.check(read_output(bootstrap, sink, sinks[sink.topic]))

    def check(self, outputs: list[Any]) -> ExactlyOnceReport:
        """The oracle's verdict on the decoded committed output of the sink: each
        expected order once, equal to the batch as-of join's output for it."""
        seen: dict[int, int] = {}
        wrong, example = 0, ""
        for out in outputs:
            i = out.get("id") if isinstance(out, dict) else None
            value = _canonical(out)
            if not isinstance(i, int) or self.expected.get(i) != value:
                wrong += 1
                want = self.expected.get(i) if isinstance(i, int) else None
                example = example or f"wrong: {value:.200} (expected {want!s:.200})"
                continue
            seen[i] = seen.get(i, 0) + 1
        return ExactlyOnceReport.counted(self.expected, seen, wrong, example)
