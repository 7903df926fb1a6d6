"""Event-time windows of a keyed aggregate: tumbling and hopping, with allowed lateness
(session windows: operators/sessions.py; sliding windows: operators/sliding.py).

A window [start, end) of a key holds the aggregate of the key's records
stamped inside it. It closes when the partition's watermark reaches
end + allowed lateness: its final result is emitted and its state dropped, in
the same checkpoint transaction, so a final result appears exactly once
whatever crashes. A record whose every window has closed is late: it goes to
the `late_to` topic (with the windows it missed) or is counted and dropped.

Every result carries an event time of its own (`ResultOffset`), which becomes its
Kafka timestamp unless its sink sets one: a final result its window's end, an
update the same unless that end is still ahead of the stream (`update_time`).

State, per step: the table `(key, start) → aggregate`, a running table
(`BatchContext.running_table`: on disk with the disk store, and in deltas only
the windows that changed), and beside it the index `end → keys with a window
ending there`, which finds the windows to close without a scan of every key.
The index is not in the snapshot: it is rebuilt from the table at its first
use after a restore (`KeyedState.index`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

from laminar_kafka.operators.base import BatchContext, ResultOffset, describe_error, set_back

WindowKind = Literal["tumbling", "hopping", "session", "sliding"]
NEVER = 2**62
"""Beyond any timestamp: the due time of a window that does not exist."""
EmitMode = Literal["final", "updates"]
_ABSENT = object()
"""What a table holds for a window not yet opened (None is an aggregate like any other)."""


@dataclass(frozen=True)
class Window:
    """The window a result belongs to: [start, end) in ms, a sliding window's (start, end];
    `final` on its last result."""

    start: int
    end: int
    final: bool = True


@dataclass(frozen=True)
class WindowSpec:
    """Which windows a record falls in, when they close and what they emit."""

    kind: WindowKind
    size_ms: int
    """The window's size; a session's gap; how far a sliding window looks back."""
    every_ms: int
    lateness_ms: int = 0
    emit: EmitMode = "final"
    late_to: str | None = None

    def starts(self, ts: int) -> range:
        """Starts of the windows holding `ts`: multiples of `every_ms` in (ts - size, ts]."""
        every = self.every_ms
        first = ((ts - self.size_ms) // every + 1) * every
        return range(first, ts - ts % every + 1, every)

    def describe(self) -> str:
        """What the window is, for a step's signature (saved state must mean the same)."""
        if self.kind == "tumbling":
            return f"tumbling {self.size_ms} ms windows"
        if self.kind == "session":
            return f"session windows with a {self.size_ms} ms gap"
        if self.kind == "sliding":
            return f"sliding {self.size_ms} ms windows ending at each record"
        return f"hopping {self.size_ms} ms windows every {self.every_ms} ms"


def default_window_emit(key: Any, window: Window, value: Any) -> Any:
    return {"key": key, "start": window.start, "end": window.end, "value": value}


def update_time(end: int, ts: int, watermark: int) -> int:
    """The event time of an update of a window ending at `end`, made by a record at `ts`
    read at `watermark`: the window's end, unless the stream has not got there yet; then
    the later of the record's time and the watermark.

    Never ahead of the stream: a broker refuses a record stamped more than an hour past
    its clock (`message.timestamp.after.max.ms`), and windows of an hour or more are
    common. Never behind the watermark the stage writes downstream either (its own less
    the lateness, which an open window's end is not): the next stage never takes an
    update for late.
    """
    return min(end, max(ts, watermark))


def unindex(index: dict[Any, Any], at: int, entry: Any) -> None:
    """Remove `entry` from the list `index[at]`, and that list once empty."""
    entries = index[at]
    entries.remove(entry)
    if not entries:
        del index[at]


def apply_windowed(
    step: str,
    spec: WindowSpec,
    initial: Callable[[], Any],
    add: Callable[[Any, Any], Any],
    emit: Callable[[Any, Window, Any], Any],
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
) -> tuple[list[Any], list[int]]:
    """Add each (key, value) to its windows; emit what closes as the watermark moves."""
    table = ctx.running_table(step)
    size = spec.size_ms
    ends = window_ends(ctx, step, lambda slot, _: ((slot[1] + size, slot[0]),), values=False)
    out: list[Any] = []
    kept: list[int] = []
    windows = _tumbling if spec.every_ms == spec.size_ms else _hopping
    windows(table, ends, spec, (initial, add, emit), values, offsets, ctx, out, kept)
    if ends and ctx.watermark >= min(ends) + spec.lateness_ms:
        _close(table, ends, spec, emit, ctx.watermark, ctx.last_offset, ctx, out, kept)
    return out, kept


def window_ends(
    ctx: BatchContext,
    step: str,
    entries: Callable[[Any, Any], Iterable[tuple[int, Any]]],
    former: str = "#ends",
    values: bool = True,
) -> dict[int, list[Any]]:
    """Step `step`'s index end → what ends there, built from its table at first use: for
    each (key, value) of the table, in the table's order, the (end, entry) pairs `entries`
    gives (`values` False: `entries` needs the key alone, and a table on disk reads no
    value). The table `<step><former>` of earlier snapshots, which held the index, goes."""
    state = ctx.tables[step]
    if state.index is None:
        ctx.tables.pop(step + former, None)
        index: dict[int, list[Any]] = {}
        table = state.table
        for key, value in table.items() if values else ((key, None) for key in table):
            for end, entry in entries(key, value):
                index.setdefault(end, []).append(entry)
        state.index = index
    return cast("dict[int, list[Any]]", state.index)


Functions = tuple[Callable[[], Any], Callable[[Any, Any], Any], Callable[[Any, Window, Any], Any]]
"""A windowed aggregate's initial, add and emit."""


def _tumbling(
    table: dict[Any, Any],
    ends: dict[Any, Any],
    spec: WindowSpec,
    functions: Functions,
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
    out: list[Any],
    kept: list[int],
) -> None:
    """`apply_windowed`'s loop for windows that do not overlap: one window per record.

    The hot path of every tumbling window: no per-record list, one table lookup.
    """
    initial, add, emit = functions
    size, lateness, updates = spec.size_ms, spec.lateness_ms, spec.emit == "updates"
    open_for = size + lateness  # a window takes records while the watermark is below this
    times, marks = ctx.times, ctx.marks
    due = min(ends, default=NEVER) + lateness  # the watermark that closes the next window
    for (k, v), o in zip(values, offsets, strict=True):
        ts = times[o]
        watermark = marks[o]
        s = ts - ts % size
        if s + open_for <= watermark:  # a late record moves no watermark: nothing closes here
            ctx.late_record(o, spec.late_to, [(s, s + size)])
            continue
        slot = (k, s)
        try:  # the new value first: a failing record changes no table entry
            found = table.get(slot, _ABSENT)
            updated = add(initial() if found is _ABSENT else found, v)
            if updates:
                out.append(emit(k, Window(s, s + size, False), updated))
                kept.append(ResultOffset(o, update_time(s + size, ts, watermark)))
        except Exception as exc:
            ctx.reject(o, describe_error("window aggregate", exc))
            set_back(table, slot)
            continue
        table[slot] = updated
        if found is _ABSENT:
            ends.setdefault(s + size, []).append(k)
            if s + open_for < due:
                due = s + open_for
        if watermark >= due:
            due = _close(table, ends, spec, emit, watermark, o, ctx, out, kept)


def _hopping(
    table: dict[Any, Any],
    ends: dict[Any, Any],
    spec: WindowSpec,
    functions: Functions,
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
    out: list[Any],
    kept: list[int],
) -> None:
    """`apply_windowed`'s loop for windows that overlap: every window holding a record."""
    initial, add, emit = functions
    size, lateness, updates = spec.size_ms, spec.lateness_ms, spec.emit == "updates"
    times, marks = ctx.times, ctx.marks
    due = min(ends, default=NEVER) + lateness
    for (k, v), o in zip(values, offsets, strict=True):
        ts, watermark = times[o], marks[o]
        starts = spec.starts(ts)
        open_starts = [s for s in starts if s + size + lateness > watermark]
        if not open_starts:
            ctx.late_record(o, spec.late_to, [(s, s + size) for s in starts])
            continue
        try:  # every window's new value first: a failing record changes no table entry
            updated = [add(table[(k, s)] if (k, s) in table else initial(), v) for s in open_starts]
            emitted = (
                [
                    emit(k, Window(s, s + size, False), u)
                    for s, u in zip(open_starts, updated, strict=True)
                ]
                if updates
                else ()
            )
        except Exception as exc:
            ctx.reject(o, describe_error("window aggregate", exc))
            for s in open_starts:
                set_back(table, (k, s))
            continue
        for s, u in zip(open_starts, updated, strict=True):
            if (k, s) not in table:
                ends.setdefault(s + size, []).append(k)
                due = min(due, s + size + lateness)
            table[(k, s)] = u
        if emitted:
            out.extend(emitted)
            kept.extend(ResultOffset(o, update_time(s + size, ts, watermark)) for s in open_starts)
        if watermark >= due:
            due = _close(table, ends, spec, emit, watermark, o, ctx, out, kept)


def _close(
    table: dict[Any, Any],
    ends: dict[Any, Any],
    spec: WindowSpec,
    emit: Callable[[Any, Window, Any], Any],
    watermark: int,
    offset: int,
    ctx: BatchContext,
    out: list[Any],
    kept: list[int],
) -> int:
    """Emit and drop every window that ends at or before watermark - lateness, oldest
    first; returns the watermark that closes the next one."""
    size, lateness = spec.size_ms, spec.lateness_ms
    for end in sorted(end for end in ends if end + lateness <= watermark):
        start = end - size
        window, at = Window(start, end), ResultOffset(offset, end)  # shared by its results
        for k in ends.pop(end):
            value = table.pop((k, start))
            try:
                out.append(emit(k, window, value))
                kept.append(at)
            except Exception as exc:
                ctx.reject(offset, describe_error(f"window emit of [{start}, {end})", exc))
    return min(ends, default=NEVER) + lateness
