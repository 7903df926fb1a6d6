"""A keyed stream as the user builds it: running aggregates, event-time windows and
process steps with timers, per key.

`Stream.key_by` makes one; each method appends a keyed step (operators/keyed.py,
operators/windows.py, operators/process.py) to the stream it wraps and returns the
stream of its results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from laminar_kafka.api.branches import Steps
from laminar_kafka.api.checks import check_callable, check_duration, check_step_name
from laminar_kafka.api.event_time import Duration, check_ttl_time
from laminar_kafka.api.process import process_op
from laminar_kafka.api.windowed import WindowedStream, window_spec
from laminar_kafka.operators import AggregateOp
from laminar_kafka.operators.keyed import StepKind
from laminar_kafka.operators.process import OnRecord, OnTimer
from laminar_kafka.operators.ttl import TtlTime
from laminar_kafka.operators.windows import EmitMode

S = TypeVar("S", bound=Steps)


@dataclass(frozen=True)
class KeyedStream(Generic[S]):
    """A stream grouped by key: its only operators are keyed steps. Its methods return
    the kind of stream it wraps (a `Stream`), with the step appended."""

    stream: S

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any], Any],
        emit: Callable[[Any, Any], Any] | None = None,
        *,
        name: str | None = None,
        ttl: Duration | None = None,
        ttl_time: TtlTime = "processing",
    ) -> S:
        """Running aggregate: state = add(state, value); emits emit(key, state) per record.

        `name` keys the step's state in checkpoints (default: derived from the flow).
        `ttl` (seconds or a timedelta): a key not updated for that long leaves the state
        and later snapshots; its next record starts from `initial()` again. Nothing is
        emitted when a key expires. `ttl_time`: what the ttl counts in, "processing"
        (the task's wall clock) or "event": the key expires once the partition's
        watermark reaches its newest update's event time plus the ttl (the sources
        need event time).
        """
        check_callable("aggregate initial", initial)
        check_callable("aggregate add", add)
        return self._stateful("aggregate", initial, add, emit, name, ttl, ttl_time)

    def reduce(
        self,
        fn: Callable[[Any, Any], Any],
        emit: Callable[[Any, Any], Any] | None = None,
        *,
        name: str | None = None,
        ttl: Duration | None = None,
        ttl_time: TtlTime = "processing",
    ) -> S:
        """Running reduce: the first value of a key is its state, then fn(state, value);
        `ttl` and `ttl_time` as for `aggregate`."""
        check_callable("reduce", fn)
        missing = object()

        def add(state: Any, value: Any) -> Any:
            return value if state is missing else fn(state, value)

        return self._stateful("reduce", lambda: missing, add, emit, name, ttl, ttl_time)

    def count(
        self,
        emit: Callable[[Any, Any], Any] | None = None,
        *,
        name: str | None = None,
        ttl: Duration | None = None,
        ttl_time: TtlTime = "processing",
    ) -> S:
        """Running count of records per key; `ttl` and `ttl_time` as for `aggregate`."""
        return self._stateful("count", lambda: 0, lambda n, _v: n + 1, emit, name, ttl, ttl_time)

    def tumbling_window(
        self,
        size: Duration,
        *,
        allowed_lateness: Duration = 0,
        emit: EmitMode = "final",
        late_to: str | None = None,
    ) -> WindowedStream[S]:
        """Event-time windows of `size` (seconds or a timedelta), back to back from the epoch.

        A window closes when the watermark passes its end plus `allowed_lateness`;
        records later than that go to the `late_to` topic, else are counted and
        dropped. See `WindowedStream` for what it emits.
        """
        branches = self.stream.branches
        spec = window_spec("tumbling", size, None, allowed_lateness, emit, late_to, branches)
        return WindowedStream(self.stream, spec)

    def session_window(
        self,
        gap: Duration,
        *,
        allowed_lateness: Duration = 0,
        emit: EmitMode = "final",
        late_to: str | None = None,
    ) -> WindowedStream[S]:
        """Sessions: a key's records less than `gap` apart form one window; a record
        bridging two sessions merges them (an `aggregate` then needs `merge=`)."""
        branches = self.stream.branches
        spec = window_spec("session", gap, None, allowed_lateness, emit, late_to, branches)
        return WindowedStream(self.stream, spec)

    def hopping_window(
        self,
        size: Duration,
        every: Duration,
        *,
        allowed_lateness: Duration = 0,
        emit: EmitMode = "final",
        late_to: str | None = None,
    ) -> WindowedStream[S]:
        """Event-time windows of `size` starting `every` (overlapping when every < size)."""
        branches = self.stream.branches
        spec = window_spec("hopping", size, every, allowed_lateness, emit, late_to, branches)
        return WindowedStream(self.stream, spec)

    def process(
        self,
        on_record: OnRecord,
        *,
        on_timer: OnTimer | None = None,
        name: str | None = None,
    ) -> S:
        """Run `on_record(key, value, ctx)` per record and `on_timer(key, ctx)` per timer
        that fires; each returns an iterable of outputs, or None.

        `ctx.state` is the key's state (a picklable value, None at first; set None to
        drop it); `ctx.timestamp` the record's event time (the timer's, in on_timer),
        `ctx.watermark` the partition's; `ctx.set_timer(ts)` / `ctx.delete_timer(ts)`
        manage the key's event-time timers, which fire once the watermark reaches
        `ts`. State and timers are in each checkpoint: a timer fires exactly once.
        Needs event time on the sources; see operators/process.py for the details.
        """
        return self.stream._then(process_op(self.stream.branches, on_record, on_timer, name))

    def sliding_window(
        self,
        size: Duration,
        *,
        allowed_lateness: Duration = 0,
        emit: EmitMode = "final",
        late_to: str | None = None,
    ) -> WindowedStream[S]:
        """The last `size` before each record: for a key's record at t, the window
        (t - size, t] of every record of the key stamped in it (equal times share one).

        Its result, stamped t, comes once the watermark passes t + `allowed_lateness`;
        a record out of order within lateness updates the open windows it falls in
        and opens its own. Kafka Streams' SlidingWindows differ: [t - d, t] includes
        both ends, and a window also starts right after each record; here there is
        one window, and one result, per distinct record time (operators/sliding.py).
        Records are kept until no open window can need them.
        """
        branches = self.stream.branches
        spec = window_spec("sliding", size, None, allowed_lateness, emit, late_to, branches)
        return WindowedStream(self.stream, spec)

    def _stateful(
        self,
        kind: StepKind,
        initial: Callable[[], Any],
        add: Callable[[Any, Any], Any],
        emit: Callable[[Any, Any], Any] | None,
        name: str | None,
        ttl: Duration | None = None,
        ttl_time: TtlTime = "processing",
    ) -> S:
        if emit is not None:
            check_callable(f"{kind} emit", emit)
        check_step_name(name)
        ttl_ms = None if ttl is None else check_duration(f"{kind} ttl", ttl, positive=True)
        check_ttl_time(kind, ttl_ms, ttl_time, self.stream.branches)
        op = AggregateOp(initial, add, kind=kind, name=name, ttl_ms=ttl_ms, ttl_time=ttl_time)
        return self.stream._then(op if emit is None else replace(op, emit=emit))
