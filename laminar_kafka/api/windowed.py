"""Windowed aggregates as the user builds them: `keyed.tumbling_window(60).count()`.

A windowed step is a keyed aggregate with a `WindowSpec` (operators/windows.py):
the same naming, signatures and state as a running aggregate, one value per key
and window instead of one per key. Windows need event time on every source
that feeds them (`source(..., timestamp=...)`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from laminar_kafka.api.branches import Branch, Steps
from laminar_kafka.api.checks import (
    check_arity,
    check_callable,
    check_duration,
    check_name,
    check_step_name,
)
from laminar_kafka.api.event_time import check_first_event_time_step, require_event_time
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators import AggregateOp
from laminar_kafka.operators.keyed import StepKind
from laminar_kafka.operators.windows import EmitMode, Window, WindowSpec, default_window_emit

S = TypeVar("S", bound=Steps)


def window_spec(
    kind: str,
    size: Any,
    every: Any,
    allowed_lateness: Any,
    emit: EmitMode,
    late_to: str | None,
    branches: tuple[Branch, ...],
) -> WindowSpec:
    """A checked window; refused when a source feeding it has no event time."""
    check_first_event_time_step("a window", branches)
    require_event_time("windows", branches)
    size_ms = check_duration("window size", size, True)
    every_ms = size_ms if every is None else check_duration("window every", every, True)
    if every_ms > size_ms:
        raise ConfigError(f"a window's every ({every}) must not exceed its size ({size})")
    if emit not in ("final", "updates"):
        raise ConfigError(f"window emit must be 'final' or 'updates', not {emit!r}")
    if late_to is not None:
        check_name("late_to topic", late_to)
    lateness = check_duration("allowed_lateness", allowed_lateness)
    return WindowSpec(kind, size_ms, every_ms, lateness, emit, late_to)  # type: ignore[arg-type]


@dataclass(frozen=True)
class WindowedStream(Generic[S]):
    """A keyed stream cut into event-time windows: aggregate, reduce or count per window.

    `emit(key, window, value)` makes each result (default: a dict of key, start,
    end and value). With emit="final" a window emits once, when the watermark
    passes its end plus the allowed lateness; with "updates", after every record
    too (`window.final` tells the last one apart). Each result's Kafka timestamp
    is its window's end (an update's, once the stream got there: windows.update_time)
    unless its sink sets `timestamp=`.
    """

    stream: S
    window: WindowSpec

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any], Any],
        emit: Callable[[Any, Window, Any], Any] | None = None,
        *,
        merge: Callable[[Any, Any], Any] | None = None,
        name: str | None = None,
    ) -> S:
        """`merge(a, b)` combines two sessions' aggregates (session windows need it)."""
        check_callable("aggregate initial", initial)
        check_callable("aggregate add", add)
        if merge is not None:
            check_callable("aggregate merge", merge)
        elif self.window.kind == "session":
            raise ConfigError(
                "an aggregate over session windows needs merge=: how two sessions' "
                "aggregates combine when a record bridges them"
            )
        return self._stateful("aggregate", initial, add, emit, name, merge)

    def reduce(
        self,
        fn: Callable[[Any, Any], Any],
        emit: Callable[[Any, Window, Any], Any] | None = None,
        *,
        name: str | None = None,
    ) -> S:
        check_callable("reduce", fn)
        return self._stateful("reduce", _first, _Reduce(fn), emit, name, _Reduce(fn))

    def count(
        self, emit: Callable[[Any, Window, Any], Any] | None = None, *, name: str | None = None
    ) -> S:
        return self._stateful("count", _zero, _plus_one, emit, name, operator.add)

    def _stateful(
        self,
        kind: StepKind,
        initial: Callable[[], Any],
        add: Callable[[Any, Any], Any],
        emit: Callable[[Any, Window, Any], Any] | None,
        name: str | None,
        merge: Callable[[Any, Any], Any] | None = None,
    ) -> S:
        if emit is not None:
            check_callable(f"{kind} emit", emit)
            check_arity(f"{kind} emit over windows", emit, "key, window, value")
        check_step_name(name)
        op = AggregateOp(initial, add, kind=kind, name=name, window=self.window, merge=merge)
        return self.stream._then(replace(op, emit=emit or default_window_emit))


class _First:
    """The state of a reduce before its first value (one object, so it pickles as one)."""

    def __reduce__(self) -> str:
        return "_FIRST"


_FIRST = _First()


def _first() -> _First:
    return _FIRST


def _zero() -> int:
    return 0


def _plus_one(n: int, _value: Any) -> int:
    return n + 1


@dataclass(frozen=True)
class _Reduce:
    fn: Callable[[Any, Any], Any]

    def __call__(self, state: Any, value: Any) -> Any:
        return value if state is _FIRST else self.fn(state, value)
