"""The interval join: records of two streams with equal keys and event times close enough.

A record of side a at `ta` pairs with each record of side b of the same key at
`tb` in [ta - before, ta + after]. Both sides reach the step as one keyed stream:
each record tagged with its side (`Tagged`) and both repartitioned by the join
key into one internal topic, so a partition holds every record of its keys and
its watermark is the lowest of both sides' (api/interval_join.py).

A record at t below the watermark is late: its partners may be gone; it is
counted (as a window's late record is) and joins nothing. Any other record finds
every partner it has: a buffered record stays until the watermark passes the
last time a partner can have (`ta + after` for side a, `tb + before` for side b),
a timer then drops it, and a left (outer) join emits it if it never matched
(side b's too). Buffers and timers are the partition's tables (`<step>`,
operators/timers.py), in each checkpoint with the outputs: exactly once.

A pair is stamped with the later of its two times (as Flink's interval join); an
unmatched record with its own time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, ClassVar, Literal

from laminar_kafka.operators.base import BatchContext, ResultOffset, describe_error
from laminar_kafka.operators.keyed import StepKind
from laminar_kafka.operators.timers import TimerQueue

IntervalHow = Literal["inner", "left", "outer"]
Buffers = list[dict[int, list[list[Any]]]]
"""A key's buffers: per side (0: a, 1: b), time → entries [value, matched]."""


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
        buffers: dict[Any, Buffers] = ctx.table(self.step)
        timers = TimerQueue(ctx, self.step)
        out: list[Any] = []
        kept: list[int] = []
        times, marks = ctx.times, ctx.marks
        for (key, (side, value)), o in zip(values, offsets, strict=True):
            ts, watermark = times[o], marks[o]
            if ts < watermark:
                ctx.late_record(o, None, [(ts - self.reach(1 - side), ts + self.reach(side) + 1)])
            else:
                found = buffers.get(key)
                if found is None:
                    found = buffers[key] = [{}, {}]
                self._pair(side, value, ts, found, o, ctx, out, kept)
                timers.set(key, ts + self.reach(side) + 1)
            if timers.next_due() <= watermark:
                self._expire(buffers, timers, watermark, o, ctx, out, kept)
        if timers.next_due() <= ctx.watermark:
            self._expire(buffers, timers, ctx.watermark, ctx.last_offset, ctx, out, kept)
        return out, kept

    def _pair(
        self,
        side: int,
        value: Any,
        ts: int,
        found: Buffers,
        offset: int,
        ctx: BatchContext,
        out: list[Any],
        kept: list[int],
    ) -> None:
        """Join a record with the other side's buffered partners, then buffer it."""
        entry = [value, False]
        low, high = ts - self.reach(1 - side), ts + self.reach(side)
        for other_ts, entries in found[1 - side].items():
            if not low <= other_ts <= high:
                continue
            for other in entries:
                a, b = (value, other[0]) if side == 0 else (other[0], value)
                try:
                    out.append(self.merge(a, b))
                except Exception as exc:
                    ctx.reject(offset, describe_error("join_interval merge", exc))
                    continue
                kept.append(ResultOffset(offset, max(ts, other_ts)))
                entry[1] = other[1] = True
        found[side].setdefault(ts, []).append(entry)

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
        while (due := timers.pop(watermark)) is not None:
            at, keys = due
            for key in keys:
                found = buffers[key]
                for side in (0, 1):
                    ts = at - self.reach(side) - 1
                    entries = found[side].pop(ts, ())
                    if self.emits_unmatched(side):
                        self._unmatched(side, ts, entries, offset, ctx, out, kept)
                if not found[0] and not found[1]:
                    del buffers[key]

    def _unmatched(
        self,
        side: int,
        ts: int,
        entries: Any,
        offset: int,
        ctx: BatchContext,
        out: list[Any],
        kept: list[int],
    ) -> None:
        for value, matched in entries:
            if matched:
                continue
            try:
                out.append(self.merge(value, None) if side == 0 else self.merge(None, value))
            except Exception as exc:
                ctx.reject(offset, describe_error(f"join_interval merge of {value!r:.40}", exc))
                continue
            kept.append(ResultOffset(offset, ts))
