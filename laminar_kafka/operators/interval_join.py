"""The interval join: records of two streams with equal keys and event times close enough.

A record of side a at `ta` pairs with each record of side b of the same key at
`tb` in [ta - before, ta + after]. Both sides reach the step as one keyed stream:
each record tagged with its side (`Tagged`) and both repartitioned by the join
key into one internal topic, so a partition holds every record of its keys and
its watermark is the lowest of both sides' (api/streams.py). Two sources declared
partitioned by their join keys alike need no repartition (`sides`): each side's
flow runs the step, on the state of side a's partition p, with the lower of both
partitions' watermarks (runtime/task/joined_inputs.py).

A record at t below the watermark is late: its partners may be gone; it is
counted (as a window's late record is) and joins nothing. Any other record finds
every partner it has: a buffered record stays until the watermark passes the
last time a partner can have (`ta + after` for side a, `tb + before` for side b),
a timer then drops it, and a left (outer) join emits it if it never matched
(side b's too). A key's buffers keep each side's times in order, so a record's
partners are found by bisection, not a scan (operators/interval_buffers.py).
Buffers and timers are the partition's tables (`<step>`, operators/timers.py), in
each checkpoint with the outputs: exactly once.

A pair is stamped with the later of its two times (as Flink's interval join); an
unmatched record with its own time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, ClassVar, Literal

from laminar_kafka.operators.base import BatchContext, ResultOffset, describe_error
from laminar_kafka.operators.interval_buffers import (
    Buffers,
    add_time,
    indexed,
    new_buffers,
    partners,
    remove,
)
from laminar_kafka.operators.keyed import StepKind
from laminar_kafka.operators.timers import TimerQueue

IntervalHow = Literal["inner", "left", "outer"]


@dataclass(frozen=True)
class Tagged:
    """A record of side `side` (0: a, 1: b) as the join's stage reads it: [side, value]."""

    side: int

    def __call__(self, value: Any) -> list[Any]:
        return [self.side, value]


@dataclass(frozen=True)
class SideKey:
    """The join key of a tagged record, `on[side]` of its value (a field or a function):
    what both sides are repartitioned by."""

    on: tuple[str | Callable[[Any], Any], str | Callable[[Any], Any]]

    def __call__(self, tagged: Any) -> Any:
        side, value = tagged
        on = self.on[side]
        return on(value) if callable(on) else itemgetter(on)(value)


def sides_of(operators: Iterable[object]) -> tuple[str, str] | None:
    """The topics (a, b) of the co-partitioned interval join among `operators`, if any."""
    for op in operators:
        if isinstance(op, IntervalJoinOp) and op.sides is not None:
            return op.sides
    return None


def merge_pair(a: Any, b: Any) -> Any:
    """Both dict records' fields (b's win); one record alone when the other is None."""
    if a is None or b is None:
        return b if a is None else a
    return {**a, **b}


@dataclass(frozen=True)
class IntervalJoinOp:
    """Joins (key, [side, value]) records of two sides within [-before, +after] ms."""

    before_ms: int
    after_ms: int
    how: IntervalHow = "inner"
    merge: Callable[[Any, Any], Any] = merge_pair
    name: str | None = None
    step: str = ""
    sides: tuple[str, str] | None = None
    """The topics of a and b when both are read co-partitioned by the join key: the
    step runs in both sides' flows, its state in a's partitions (b's partition p is
    read by the task holding a's). None: both sides reach it repartitioned."""
    kind: ClassVar[StepKind] = "interval_join"

    def describe(self) -> str:
        return f"join_interval within [-{self.before_ms}, +{self.after_ms}] ms ({self.how})"

    def reach(self, side: int) -> int:
        """How long after its own time a record of `side` may still meet a partner."""
        return self.after_ms if side == 0 else self.before_ms

    def emits_unmatched(self, side: int) -> bool:
        return self.how == "outer" or (self.how == "left" and side == 0)

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        buffers: dict[Any, Buffers] = ctx.running_table(self.step)
        timers = TimerQueue(ctx, self.step)
        out: list[Any] = []
        kept: list[int] = []
        times, marks = ctx.times, ctx.marks
        reach = (self.after_ms, self.before_ms)
        due = timers.next_due()
        for (key, (side, value)), o in zip(values, offsets, strict=True):
            ts, watermark = times[o], marks[o]
            if ts < watermark:
                ctx.late_record(o, None, [(ts - reach[1 - side], ts + reach[side] + 1)])
            else:
                found = buffers.get(key)
                if found is None:
                    found = buffers[key] = new_buffers()
                elif len(found) == 2:
                    indexed(found)
                matched = False
                if found[1 - side]:  # the other side has records buffered
                    low, high = ts - reach[1 - side], ts + reach[side]
                    for other_ts in partners(found, 1 - side, low, high):
                        others = found[1 - side][other_ts]
                        if self._pair(side, value, ts, others, other_ts, o, ctx, out, kept):
                            matched = True
                mine = found[side]
                if (records := mine.get(ts)) is not None:
                    records += (value, matched)
                else:
                    mine[ts] = [value, matched]
                    if len(mine) > 1:
                        add_time(found, side, ts)
                buffers[key] = found  # a running table records a value set, not changed
                at = ts + reach[side] + 1
                timers.set(key, at)
                if at < due:
                    due = at
            if due <= watermark:
                self._expire(buffers, timers, watermark, o, ctx, out, kept)
                due = timers.next_due()
        if due <= ctx.watermark:
            self._expire(buffers, timers, ctx.watermark, ctx.last_offset, ctx, out, kept)
        return out, kept

    def _pair(
        self,
        side: int,
        value: Any,
        ts: int,
        others: list[Any],
        other_ts: int,
        offset: int,
        ctx: BatchContext,
        out: list[Any],
        kept: list[int],
    ) -> bool:
        """Join a record with the other side's records buffered at `other_ts` (flat:
        value, matched, ...), marking those it met; whether it met any."""
        met = False
        for i in range(0, len(others), 2):
            other = others[i]
            try:
                out.append(self.merge(value, other) if side == 0 else self.merge(other, value))
            except Exception as exc:
                ctx.reject(offset, describe_error("join_interval merge", exc))
                continue
            kept.append(ResultOffset(offset, max(ts, other_ts)))
            others[i + 1] = met = True
        return met

    def _expire(
        self,
        buffers: dict[Any, Buffers],
        timers: TimerQueue,
        watermark: int,
        offset: int,
        ctx: BatchContext,
        out: list[Any],
        kept: list[int],
    ) -> None:
        """Drop the records no partner can reach any more (the watermark passed their
        interval), emitting the unmatched ones of a left or outer join. Their outputs and
        dead letters go under `offset`, the record that moved the watermark."""
        drops = ((0, self.after_ms + 1), (1, self.before_ms + 1))  # side, timer - time
        emits = (self.emits_unmatched(0), self.emits_unmatched(1))
        while (due := timers.pop(watermark)) is not None:
            at, keys = due
            for key in keys:
                found = buffers[key]
                if len(found) == 2:
                    indexed(found)
                for side, behind in drops:
                    if (ts := at - behind) in found[side]:
                        records = remove(found, side, ts)
                        if emits[side]:
                            self._unmatched(side, ts, records, offset, ctx, out, kept)
                if not found[0] and not found[1]:
                    del buffers[key]
                else:
                    buffers[key] = found

    def _unmatched(
        self,
        side: int,
        ts: int,
        records: list[Any],
        offset: int,
        ctx: BatchContext,
        out: list[Any],
        kept: list[int],
    ) -> None:
        """Emit the records (flat: value, matched, ...) of `side` at `ts` that met nothing."""
        for i in range(0, len(records), 2):
            if records[i + 1]:
                continue
            value = records[i]
            try:
                out.append(self.merge(value, None) if side == 0 else self.merge(None, value))
            except Exception as exc:
                ctx.reject(offset, describe_error(f"join_interval merge of {value!r:.40}", exc))
                continue
            kept.append(ResultOffset(offset, ts))
