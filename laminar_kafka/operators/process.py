"""A keyed process step: user code with a state and event-time timers per key.

`on_record(key, value, ctx)` runs for each record, `on_timer(key, ctx)` for each
timer the watermark reaches; each returns the outputs (an iterable) or None. The
`ProcessContext` of a call holds the key's state (`ctx.state`, None at first;
setting None drops it) and sets or deletes the key's timers.

When timers fire: a timer at `t` fires once the partition's watermark reaches
`t`: right after the record whose watermark reaches it (that record's
`on_record` still sees it pending, and may delete it), or when the watermark
rises without records (an idle partition, a watermark from the stage upstream).
A timer set at or below the current watermark fires right after the call that
set it. Timers of one time fire in the order they were set; `on_timer` may set
timers only after its own time (so that firing ends).

A call's changes (state, timers) apply when it returns; a call that raises
sets nothing (a state it changed in place stays changed, as in a dict) and is
a dead letter: for `on_record`, that record's; for
`on_timer`, with the reason, that of the record that moved the watermark (the
timer is spent either way). State and timers are the partition's running tables
(`<step>`, and operators/timers.py), so they are in each checkpoint together with
the outputs: a timer fires exactly once whatever crashes. A call that read a state
and set none counts as a change of it (it may have changed the value in place), so
a delta never misses one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from laminar_kafka.operators.base import BatchContext, ResultOffset, describe_error, set_back
from laminar_kafka.operators.keyed import StepKind
from laminar_kafka.operators.timers import NEVER, TimerQueue

OnRecord = Callable[[Any, Any, "ProcessContext"], Iterable[Any] | None]
OnTimer = Callable[[Any, "ProcessContext"], Iterable[Any] | None]
_UNSET = object()


class ProcessContext:
    """One call's view of its key: `state`, `timestamp`, `watermark`, and its timers.

    `timestamp` is the record's event time in `on_record`, the timer's time in
    `on_timer`; `watermark` is the partition's, in ms.
    """

    __slots__ = ("_changes", "_earliest", "_state", "_stored", "timestamp", "watermark")

    def __init__(self, timestamp: int, watermark: int, stored: Any, earliest: int | None) -> None:
        self.timestamp = timestamp
        self.watermark = watermark
        self._stored = stored
        self._state: Any = _UNSET
        self._changes: dict[int, bool] = {}  # time → set (True) or deleted (False)
        self._earliest = earliest  # no timer before this time; None: the step has no on_timer

    @property
    def state(self) -> Any:
        """The key's state: a picklable value, None until set (setting None drops it)."""
        return self._stored if self._state is _UNSET else self._state

    @state.setter
    def state(self, value: Any) -> None:
        self._state = value

    def set_timer(self, ts: int) -> None:
        """Call `on_timer` for this key once the watermark reaches `ts` (ms since the epoch)."""
        self._changes[self._checked(ts)] = True

    def delete_timer(self, ts: int) -> None:
        """Forget this key's timer at `ts`, if it has one."""
        self._changes[self._checked(ts)] = False

    def _checked(self, ts: Any) -> int:
        if self._earliest is None:
            raise ValueError("this process step has no on_timer: pass on_timer= to use timers")
        if type(ts) is not int or not 0 <= ts < NEVER:
            raise TypeError(f"a timer's time must be an int of ms since the epoch, not {ts!r}")
        if ts < self._earliest:
            raise ValueError(
                f"on_timer at {self.timestamp} may set timers only after its own time, not at {ts}"
            )
        return ts

    def apply(self, key: Any, states: dict[Any, Any], timers: TimerQueue) -> None:
        """Make the call's changes: its state, then its timers (the last change to a time
        counts)."""
        if self._state is not _UNSET:
            if self._state is None:
                states.pop(key, None)
            else:
                states[key] = self._state
        elif self._stored is not None:
            states[key] = self._stored  # the call may have changed it in place: record it
        for ts, on in self._changes.items():
            if on:
                timers.set(key, ts)
            else:
                timers.delete(key, ts)


def outputs_of(what: str, returned: Any) -> list[Any]:
    """What a call returned, as a list of outputs; a single value is refused, not split."""
    if returned is None:
        return []
    if isinstance(returned, str | bytes | Mapping) or not isinstance(returned, Iterable):
        raise TypeError(
            f"{what} returned {type(returned).__name__} {returned!r:.40}: "
            "return a list of outputs (or None)"
        )
    return list(returned)


@dataclass(frozen=True)
class ProcessOp:
    """The keyed process step: on_record per (key, value), on_timer per timer that fires."""

    on_record: OnRecord
    on_timer: OnTimer | None = None
    name: str | None = None
    step: str = ""
    kind: ClassVar[StepKind] = "process"

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        states = ctx.running_table(self.step)
        timers = TimerQueue(ctx, self.step)
        out: list[Any] = []
        kept: list[int] = []
        on_record, times, marks = self.on_record, ctx.times, ctx.marks
        earliest = 0 if self.on_timer is not None else None
        for (k, v), o in zip(values, offsets, strict=True):
            watermark = marks[o]
            call = ProcessContext(times[o], watermark, states.get(k), earliest)
            try:
                produced = outputs_of("on_record", on_record(k, v, call))
            except Exception as exc:
                ctx.reject(o, describe_error("process on_record", exc))
                set_back(states, k)
            else:
                call.apply(k, states, timers)
                out.extend(produced)
                kept.extend([o] * len(produced))
            if timers.next_due() <= watermark:
                self._fire(states, timers, watermark, o, ctx, out, kept)
        if timers.next_due() <= ctx.watermark:
            self._fire(states, timers, ctx.watermark, ctx.last_offset, ctx, out, kept)
        return out, kept

    def _fire(
        self,
        states: dict[Any, Any],
        timers: TimerQueue,
        watermark: int,
        offset: int,
        ctx: BatchContext,
        out: list[Any],
        kept: list[int],
    ) -> None:
        """Fire every timer at or below `watermark`, oldest first, those set meanwhile too.

        Their outputs and dead letters go under `offset`, the record that moved the
        watermark (ctx.last_offset when the watermark alone moved).
        """
        on_timer = self.on_timer
        while (due := timers.pop(watermark)) is not None:
            ts, keys = due
            for k in keys:
                call = ProcessContext(ts, watermark, states.get(k), ts + 1)
                try:
                    produced = outputs_of("on_timer", on_timer(k, call)) if on_timer else []
                except Exception as exc:
                    ctx.reject(offset, describe_error(f"process on_timer of {k!r} at {ts}", exc))
                    set_back(states, k)
                    continue
                call.apply(k, states, timers)
                out.extend(produced)
                kept.extend([ResultOffset(offset, ts)] * len(produced))  # stamped with `ts`
