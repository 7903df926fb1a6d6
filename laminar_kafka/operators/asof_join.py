"""The as-of join: each record joined with the value its key had in a versioned table at
the record's event time.

The table partition keeps each key's versions (operators/versions.py) and a
watermark of its own (the highest time read from it less its `max_out_of_order`,
or raised when it is idle), both state of that partition. A record at `t`:

- above the table's watermark waits: buffered per key in the stream partition's
  table `<step>` with a timer at `t` (operators/timers.py), it is joined once the
  table's watermark reaches `t`, however the two topics' reads interleave: a table
  update written after the record but stamped before it is used;
- below the table's horizon (watermark less `versions_kept`) is late: the versions
  it needs may be gone; it is counted (as a window's late record) and joins nothing;
- else joins at once with the newest version at or before `t`.

An output is stamped with its record's time. The buffer, its timers and the
table's versions and watermark are all in each checkpoint's snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from laminar_kafka.operators.base import BatchContext, ResultOffset, describe_error
from laminar_kafka.operators.event_time import NO_WATERMARK
from laminar_kafka.operators.join import (
    NO_KEY,
    JoinHow,
    TableSpec,
    default_merge,
    describe_on,
    join_key,
)
from laminar_kafka.operators.keyed import StepKind
from laminar_kafka.operators.timers import TimerQueue
from laminar_kafka.operators.versions import Versions, version_at

Waiting = dict[int, list[tuple[int, Any]]]
"""A key's waiting records: time → (source offset, value), in arrival order."""


@dataclass(frozen=True)
class AsOfJoinOp:
    """Joins each record with `table`'s version at the record's time for its key `on`."""

    table: TableSpec
    on: str | Callable[[Any], Any]
    how: JoinHow = "inner"
    merge: Callable[[Any, Any], Any] = default_merge
    name: str | None = None
    step: str = ""
    kind: ClassVar[StepKind] = "asof_join"

    def describe(self) -> str:
        on = describe_on(self.on)
        return f"join_table {self.table.topic} on {on} as of the record's time ({self.how})"

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        topic, kept_ms = self.table.topic, self.table.versions_kept_ms
        assert kept_ms is not None, "an as-of join reads a versioned table"
        versions: dict[Any, Versions] = ctx.side.get(topic, {})
        watermark = ctx.side_watermarks.get(topic, NO_WATERMARK)
        horizon = watermark - kept_ms if watermark != NO_WATERMARK else NO_WATERMARK
        waiting: dict[Any, Waiting] = ctx.running_table(self.step)
        timers = TimerQueue(ctx, self.step)
        out: list[Any] = []
        kept: list[int] = []
        times = ctx.times
        for value, offset in zip(values, offsets, strict=True):
            key = join_key(self.on, value, offset, ctx)
            if key is NO_KEY:
                continue
            ts = times[offset]
            if ts > watermark:
                found = waiting.get(key) or {}
                found.setdefault(ts, []).append((int(offset), value))
                waiting[key] = found  # a running table records a value set, not changed
                timers.set(key, ts)
            elif ts < horizon:
                ctx.late_record(offset, None, [])
            else:
                self._join(value, ts, offset, versions.get(key), ctx, out, kept)
        while (due := timers.pop(watermark)) is not None:
            ts, keys = due
            for key in keys:
                records = waiting[key]
                for offset, value in records.pop(ts):
                    self._join(value, ts, offset, versions.get(key), ctx, out, kept)
                if records:
                    waiting[key] = records
                else:
                    del waiting[key]
        return out, kept

    def _join(
        self,
        value: Any,
        ts: int,
        offset: int,
        found: Versions | None,
        ctx: BatchContext,
        out: list[Any],
        kept: list[int],
    ) -> None:
        row = version_at(found, ts)
        if row is None and self.how != "left":
            return
        try:
            out.append(self.merge(value, row))
        except Exception as exc:
            ctx.reject(offset, describe_error("join_table merge", exc))
            return
        kept.append(ResultOffset(offset, ts))
