"""The input of a windowed order round, planned so that no interleaving changes its outcome.

A replay may read partitions in another interleaving than the run it repeats,
so the watermark may pass a record at another moment (DESIGN.md, "Event time").
The plan fixes every record's fate anyway:

- on time: the i-th on-time order is stamped `base + offset(i) + jitter(i)`,
  `offset` never decreasing with i and `jitter` in [0, J], J = max_out_of_order
  + allowed_lateness: whatever was produced before it is stamped at most J
  above it. A watermark is the lowest, over partitions (and the writers between
  stages), of the highest stamp read minus max_out_of_order, and a partition is
  read in production order; so when an order is read the watermark is at most
  its stamp + allowed_lateness, short of every one of its windows' end +
  allowed_lateness: it lands in all its windows, whatever was read first. A
  partition released as idle (nothing for idle_timeout, at least
  `MIN_IDLE_TIMEOUT_MS`, far longer than any pause of a round's input) rises to
  its task's other partitions' watermark, of records produced before what it
  receives next: the bound holds for it too;
- ahead of the wall clock: every stamp lies `AHEAD_MS` or more past the
  planning time, so a task whose partitions all went idle, which raises their
  watermarks to the wall clock, closes nothing early (within a round's time);
  the stamps stay inside the horizon the source (`max_future`) and the broker
  (`log.message.timestamp.after.max.ms`, 1 h by default) accept;
- late: a few orders, from 40% to 70% of the input, are stamped so far back
  that every window they fall in closed below the lowest watermark there can be
  (of any on-time order, or of the wall clock at planning time). But a task
  without a watermark counts no record late, and a restore brings back the
  watermarks of its checkpoint: from one taken before they existed, a replay
  forwards records downstream ahead of any Watermark record. So the round
  produces the first late order, and all after it, only once a committed
  checkpoint holds a watermark of every task of every stage
  (`WindowWorkload.watermarked_from`, the `watermarks` of a
  `checkpoint_committed` event's stages): every restore is then from it or a
  later one, a window's task restores its watermark with its state (and a
  watermark never falls), and a late order finds one wherever it goes;
- closers: one order per source partition comes last, stamped past every
  on-time window's end + allowed_lateness + max_out_of_order. Once all are
  read, the watermark closes every on-time window; the closers' own windows
  stay open (nothing comes after them, and the wall clock stays behind them).

The aggregate must not depend on the order of a window's records (a sum, a
count): a window's records come from several partitions in any order.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from laminar_kafka.api.pipeline import Flow, Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators import AggregateOp, window_of
from laminar_kafka.operators.event_time import EventTime
from laminar_kafka.operators.keyed import KeyByOp
from laminar_kafka.operators.partitioning import PARTITIONERS
from laminar_kafka.operators.windows import WindowSpec

AHEAD_MS = 15 * 60_000
"""How far past the planning time the first stamp lies."""
BROKER_FUTURE_MS = 3_600_000
"""Kafka's default `log.message.timestamp.after.max.ms`: stamps travel between stages."""
SAFETY_MS = 5 * 60_000
"""How far inside the accepted horizon the last stamp stays."""
TARGET_WINDOWS = 20
"""Windows (sessions: bursts of orders) the on-time event time spans, room permitting."""
MIN_WINDOWS = 3
MIN_IDLE_TIMEOUT_MS = 10_000
"""A shorter idle timeout could release a partition between two of a round's records."""
LATE_EVERY = 50
"""One order in this many is late (at least one)."""
LATE_FROM, LATE_TO = 0.4, 0.7
"""Where in the input the late orders are spread."""
CUSTOMERS_PER_PARTITION = 3
PRODUCTS = 13

KeyOf = Callable[[Any], Any]


@dataclass(frozen=True)
class WindowShape:
    """What a windowed order round needs of a pipeline: orders keyed, then windowed."""

    source: Flow
    """The flow reading the user's source topic."""
    sink: Flow
    """The flow writing the user's sink, its last step the window."""
    key: str | KeyOf
    window_op: AggregateOp
    event_time: EventTime

    @property
    def window(self) -> WindowSpec:
        assert self.window_op.window is not None
        return self.window_op.window

    def key_of(self, order: dict[str, Any]) -> Any:
        return self.key(order) if callable(self.key) else order[self.key]


def _refuse(pipeline: Pipeline, why: str) -> ConfigError:
    return ConfigError(
        f"pipeline {pipeline.name}: {why}; windowed order rounds need orders (schemas/order.avsc) "
        "stamped by ts_ms, keyed by key_by and windowed (source -> key_by -> window -> sink): "
        "give --input for other pipelines"
    )


def window_shape(pipeline: Pipeline) -> WindowShape | None:
    """The pipeline's windowed shape; None when no window step feeds its sink.

    Raises ConfigError when one does but the round cannot plan its input.
    """
    outer = [f for f in pipeline.flows if not f.sink.internal and f.sink.files is None]
    if len(outer) != 1 or not any(window_of(op) for op in outer[0].operators):
        return None
    sink = outer[0]
    sources = [f for f in pipeline.flows if not f.source.internal]
    *before, last = sink.operators
    if len(sources) != 1 or len(pipeline.flows) > 2:
        raise _refuse(pipeline, "it reads or writes more than one topic outside its stages")
    if not (isinstance(last, AggregateOp) and last.window is not None):
        raise _refuse(pipeline, "steps follow its window")
    keyed = [op for f in pipeline.flows for op in f.operators if op is not last]
    if (
        not before
        or not isinstance(before[-1], KeyByOp)
        or not all(isinstance(op, KeyByOp) for op in keyed)
    ):
        raise _refuse(pipeline, "steps other than key_by come before its window")
    if last.window.emit != "final":
        raise _refuse(pipeline, "its window emits updates, which depend on the reading order")
    event_time = sources[0].source.event_time
    if event_time is None or event_time.timestamp != "ts_ms":
        raise _refuse(pipeline, "its source does not take event time from ts_ms")
    idle = event_time.idle_timeout_ms
    if idle is not None and idle < MIN_IDLE_TIMEOUT_MS:
        raise _refuse(
            pipeline,
            f"its idle_timeout ({idle / 1000:g} s) could release a partition between two "
            f"records of a round; give at least {MIN_IDLE_TIMEOUT_MS // 1000} s",
        )
    return WindowShape(sources[0], sink, before[-1].key, last, event_time)


@dataclass(frozen=True)
class Timeline:
    """Where on-time stamps go past `base`: `units` stretches of event time, each
    `unit_ms` (a window's size; for sessions two gaps) with `pause_ms` after it (for
    sessions a gap plus J + 1, so that no session spans two units; else 0)."""

    units: int
    unit_ms: int
    pause_ms: int
    jitter_ms: int
    """J: max_out_of_order + allowed_lateness."""
    align_ms: int
    """`base` is a multiple of this (the windows' grid): every plan has one shape."""

    @classmethod
    def of(cls, shape: WindowShape, pipeline: str) -> Timeline:
        w, et = shape.window, shape.event_time
        jitter = et.max_out_of_order_ms + w.lateness_ms
        room = min(et.max_future_ms, BROKER_FUTURE_MS) - SAFETY_MS - AHEAD_MS
        # Past the last unit: the jitter, the last window's end (a session's gap), then
        # the closers' lead (allowed lateness and out-of-orderness), the grid.
        tail = jitter + w.size_ms + w.lateness_ms + et.max_out_of_order_ms + w.every_ms
        if w.kind == "session":
            unit, pause, align = 2 * w.size_ms, w.size_ms + jitter + 1, 1000
        else:
            unit, pause, align = w.size_ms, 0, w.every_ms
        units = min(TARGET_WINDOWS, (room - tail) // (unit + pause))
        if units < MIN_WINDOWS:
            raise ConfigError(
                f"pipeline {pipeline}: {MIN_WINDOWS} {w.describe()} with {w.lateness_ms} ms "
                f"of allowed lateness and {et.max_out_of_order_ms} ms out of order do not fit "
                f"in the {(room + AHEAD_MS) // 60_000} min ahead of the wall clock that the "
                "source's max_future and the broker accept (a round stamps its orders "
                f"{AHEAD_MS // 60_000} min ahead or more); use smaller windows or --input"
            )
        return cls(units, unit, pause, jitter, align)

    def offset(self, i: int, on_time: int) -> int:
        """Event time of the i-th of `on_time` orders past `base`, before its jitter."""
        unit = i * self.units // on_time
        return i * self.units * self.unit_ms // on_time + unit * self.pause_ms


@dataclass(frozen=True)
class WindowInput:
    """A round's orders in production order (the last one per partition: the closers),
    and which of them are late."""

    orders: tuple[dict[str, Any], ...]
    late_ids: frozenset[int]
    final_watermark: int
    """The watermark once every order was read: what closes the on-time windows."""

    @property
    def windowed(self) -> list[dict[str, Any]]:
        """The orders that land in windows: all but the late ones (the closers' windows
        never close)."""
        return [o for o in self.orders if o["id"] not in self.late_ids]


def late_count(records: int) -> int:
    return max(1, records // LATE_EVERY)


def customers(partitions: int, partitioner: str = "murmur2") -> list[str]:
    """Customer names, CUSTOMERS_PER_PARTITION per partition, taking the partitions in turn
    (consecutive orders go to different partitions; every partition has orders early)."""
    partition_of = PARTITIONERS[partitioner]
    found: list[list[str]] = [[] for _ in range(partitions)]
    k = 0
    while any(len(names) < CUSTOMERS_PER_PARTITION for names in found):
        name = f"c{k}"
        names = found[partition_of(name.encode(), partitions)]
        if len(names) < CUSTOMERS_PER_PARTITION:
            names.append(name)
        k += 1
    return [found[p][n] for n in range(CUSTOMERS_PER_PARTITION) for p in range(partitions)]


def plan_input(
    shape: WindowShape, timeline: Timeline, records: int, partitions: int, now_ms: int
) -> WindowInput:
    """`records` orders planned at wall-clock time `now_ms`: `late_count(records)` late
    ones, one closer per partition, the rest on time."""
    w, et = shape.window, shape.event_time
    late = late_count(records)
    on_time = records - late - partitions
    if on_time < MIN_WINDOWS * partitions:
        raise ConfigError(f"{records} records are too few for a windowed round: give more")
    base = -(-(now_ms + AHEAD_MS) // timeline.align_ms) * timeline.align_ms
    # Below what the lowest watermark there can be (of base, or of the wall clock at
    # planning time) leaves open.
    late_top = base - AHEAD_MS - timeline.align_ms - et.max_out_of_order_ms
    late_top -= w.lateness_ms + 2 * w.size_ms
    first, last = int(records * LATE_FROM), int(records * LATE_TO)
    late_at = {first + k * (last - first) // late: k for k in range(late)}
    names = customers(partitions, shape.source.source.partitioner)
    rng = random.Random(records)  # one shape for every plan of this size
    orders: list[dict[str, Any]] = []
    i = 0
    for n in range(records - partitions):
        if n in late_at:
            ts = late_top - late_at[n] * w.size_ms
        else:
            ts = base + timeline.offset(i, on_time) + rng.randint(0, timeline.jitter_ms)
            i += 1
        orders.append(_order(n, names[n % len(names)], ts))
    # Past the end of every window of the latest stamp (its session's end), then the
    # allowed lateness and out-of-orderness: the closers' watermark closes them all.
    closer_ts = max(o["ts_ms"] for o in orders) + w.size_ms + w.lateness_ms
    closer_ts += et.max_out_of_order_ms
    partition_of = PARTITIONERS[shape.source.source.partitioner]
    for p in range(partitions):
        name = next(c for c in names if partition_of(c.encode(), partitions) == p)
        orders.append(_order(records - partitions + p, name, closer_ts))
    return WindowInput(tuple(orders), frozenset(late_at), closer_ts - et.max_out_of_order_ms)


def _order(n: int, customer: str, ts: int) -> dict[str, Any]:
    return {
        "id": n,
        "customer": customer,
        "amount": 1 + n % 97,
        "ts_ms": ts,
        "product": f"p{n % PRODUCTS}",
    }
