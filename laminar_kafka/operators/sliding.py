"""Sliding windows: "the last `size` before each record".

For every record of a key at `t` there is the window (t - size, t]: it holds every
record of the key stamped in it, and records with equal timestamps share one. It
closes when the partition's watermark passes t + allowed lateness (as a tumbling
window whose last millisecond is t does): its final result, stamped t, is emitted
and its state dropped in the same checkpoint transaction, so it appears exactly once.

A record that comes out of order updates every open window it falls in (those
ending at the key's later records less than `size` after it) and, unless its own
window's closing time has passed, opens it with the key's records already in
(t - size, t]. So the records themselves are state: one at `ts` is kept until the
last window it could fall in (ending at ts + size - 1) has closed, that is until
the watermark reaches ts + size + lateness, then dropped: state stays bounded. A
record that arrives after that point is late (every window it could be in has
closed); its late header names its own window, half-open as [t - size + 1, t + 1).

Kafka Streams' `SlidingWindows` differ: a window [t - d, t] includes both ends, and
each record also starts one right after itself ([t + 1, t + 1 + d]), so that every
set of records that ever sits within d of each other has a window (and a new window
is built from such a one). Ours are only the windows ending at records, one result
per distinct record time; a new window folds the key's stored records instead, in
the order they arrived, so its cost grows with the records it holds.

State, per step: `key → [due, records, windows]`: `records` as `[ts, value]` in
arrival order, `windows` as `end → aggregate` (the open ones), `due` the watermark at
which the key next has a window to close or records to drop, a running table (on disk
with the disk store, and in deltas only the keys that changed). Beside it an index
maps each such watermark to its keys, so a close visits only those keys; it is rebuilt
from the table after a restore (`windows.window_ends`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from laminar_kafka.operators.base import BatchContext, ResultOffset, describe_error, set_back
from laminar_kafka.operators.windows import (
    NEVER,
    Window,
    WindowSpec,
    unindex,
    update_time,
    window_ends,
)


def apply_sliding(
    step: str,
    spec: WindowSpec,
    initial: Callable[[], Any],
    add: Callable[[Any, Any], Any],
    emit: Callable[[Any, Window, Any], Any],
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
) -> tuple[list[Any], list[int]]:
    """Add each (key, value) to the open windows it falls in and open its own; emit what
    closes as the watermark moves."""
    table = ctx.running_table(step)
    dues = window_ends(ctx, step, _due_of, former="#due")
    out: list[Any] = []
    kept: list[int] = []
    size, lateness = spec.size_ms, spec.lateness_ms
    updates = spec.emit == "updates"
    times, marks = ctx.times, ctx.marks
    due = min(dues, default=NEVER)
    for (k, v), o in zip(values, offsets, strict=True):
        ts, watermark = times[o], marks[o]
        if ts + size + lateness <= watermark:  # a late record moves no watermark
            ctx.late_record(o, spec.late_to, [(ts - size + 1, ts + 1)])
            continue
        state = table.get(k)
        records, windows = (state[1], state[2]) if state is not None else ([], {})
        later = [e for e in windows if ts <= e < ts + size and e + 1 + lateness > watermark]
        opens = ts not in windows and ts + 1 + lateness > watermark
        try:  # every window's new value first: a failing record changes no table entry
            updated = {e: add(windows[e], v) for e in later}
            if opens:
                acc = initial()
                for r_ts, r_value in records:
                    if ts - size < r_ts <= ts:
                        acc = add(acc, r_value)
                updated[ts] = add(acc, v)
            emitted = [
                (e, emit(k, Window(e - size, e, False), updated[e]))
                for e in (sorted(updated) if updates else ())
            ]
        except Exception as exc:
            ctx.reject(o, describe_error("sliding window aggregate", exc))
            set_back(table, k)
            continue
        if state is None:
            state = [NEVER, records, windows]
        windows.update(updated)
        records.append([ts, v])
        due = min(due, _schedule(dues, k, state, ts + (1 if opens else size) + lateness))
        table[k] = state  # a running table records a value set, not one changed in place
        for e, result in emitted:
            out.append(result)
            kept.append(ResultOffset(o, update_time(e, ts, watermark)))
        if watermark >= due:
            due = _close(table, dues, spec, watermark, emit, o, ctx, out, kept)
    if ctx.watermark >= due:
        _close(table, dues, spec, ctx.watermark, emit, ctx.last_offset, ctx, out, kept)
    return out, kept


def _due_of(k: Any, state: list[Any]) -> tuple[tuple[int, Any], ...]:
    """The index entry of key `k`: its next visit, if it has one."""
    return ((state[0], k),) if state[0] != NEVER else ()


def _schedule(dues: dict[Any, Any], k: Any, state: list[Any], at: int) -> int:
    """Visit key `k` when the watermark reaches `at`, if that is sooner than planned."""
    if at < state[0]:
        if state[0] != NEVER:
            unindex(dues, state[0], k)
        dues.setdefault(at, []).append(k)
        state[0] = at
    return int(state[0])


def _close(
    table: dict[Any, Any],
    dues: dict[Any, Any],
    spec: WindowSpec,
    watermark: int,
    emit: Callable[[Any, Window, Any], Any],
    offset: int,
    ctx: BatchContext,
    out: list[Any],
    kept: list[int],
) -> int:
    """Visit the keys due by `watermark`: emit and drop their windows that end at or before
    watermark - lateness - 1, oldest first, and drop the records no open window can
    need; returns the watermark of the next visit."""
    size, lateness = spec.size_ms, spec.lateness_ms
    closing: list[tuple[int, Any, Any]] = []
    for at in sorted(at for at in dues if at <= watermark):
        for k in dues.pop(at):
            _, records, windows = state = table[k]
            for end in sorted(e for e in windows if e + 1 + lateness <= watermark):
                closing.append((end, k, windows.pop(end)))
            records[:] = [r for r in records if r[0] + size + lateness > watermark]
            if not records and not windows:
                del table[k]
                continue
            state[0] = NEVER
            at_next = min(
                min((e + 1 + lateness for e in windows), default=NEVER),
                min((r[0] + size + lateness for r in records), default=NEVER),
            )
            _schedule(dues, k, state, at_next)
            table[k] = state
    closing.sort(key=lambda c: c[0])  # stable: oldest window first, then by key's visit
    for end, k, value in closing:
        try:
            out.append(emit(k, Window(end - size, end), value))
            kept.append(ResultOffset(offset, end))
        except Exception as exc:
            ctx.reject(offset, describe_error(f"window emit of ({end - size}, {end}]", exc))
    return min(dues, default=NEVER)
