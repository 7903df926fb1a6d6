"""Session windows: a key's records closer than the gap to each other form one window.

A record at `ts` opens [ts, ts + gap); a record whose interval overlaps a key's
open sessions merges them into one, with `merge` combining their aggregates.
A session closes, like any window, when the watermark passes its end plus the
allowed lateness: its result is emitted and its state dropped in the same
checkpoint. A record that would open a session already closed, and touches no
open one, is late.

State, per step: the table `key → [[start, end, aggregate], ...]` (the key's
open sessions, by start), a running table (on disk with the disk store, and in
deltas only the keys whose sessions changed), and beside it the index
`end → [(key, start), ...]`, which finds the sessions to close without a scan of
every key, rebuilt from the table after a restore (`windows.window_ends`).
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


def apply_sessions(
    step: str,
    spec: WindowSpec,
    initial: Callable[[], Any],
    add: Callable[[Any, Any], Any],
    merge: Callable[[Any, Any], Any],
    emit: Callable[[Any, Window, Any], Any],
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
) -> tuple[list[Any], list[int]]:
    """Add each (key, value) to its session, merging sessions it bridges; emit what closes."""
    table = ctx.running_table(step)
    ends = window_ends(ctx, step, lambda k, sessions: ((s[1], (k, s[0])) for s in sessions))
    out: list[Any] = []
    kept: list[int] = []
    gap, lateness = spec.size_ms, spec.lateness_ms
    times, marks = ctx.times, ctx.marks
    due = min(ends, default=NEVER) + lateness
    for (k, v), o in zip(values, offsets, strict=True):
        ts, watermark = times[o], marks[o]
        sessions: list[list[Any]] = table.get(k, [])
        touched = [s for s in sessions if s[0] < ts + gap and s[1] > ts]
        if not touched and ts + gap + lateness <= watermark:
            ctx.late_record(o, spec.late_to, [(ts, ts + gap)])
            continue
        try:  # the new aggregate first: a failing record changes no table entry
            acc = touched[0][2] if touched else initial()
            for other in touched[1:]:
                acc = merge(acc, other[2])
            acc = add(acc, v)
            start = min([ts, *(s[0] for s in touched)])
            end = max([ts + gap, *(s[1] for s in touched)])
            update = emit(k, Window(start, end, False), acc) if spec.emit == "updates" else None
        except Exception as exc:
            ctx.reject(o, describe_error("session aggregate", exc))
            set_back(table, k)
            continue
        for old in touched:
            unindex(ends, old[1], (k, old[0]))
        kept_sessions = [s for s in sessions if s not in touched]
        kept_sessions.append([start, end, acc])
        kept_sessions.sort(key=lambda s: s[0])
        table[k] = kept_sessions
        ends.setdefault(end, []).append((k, start))
        due = min(due, end + lateness)
        if update is not None:
            out.append(update)
            kept.append(ResultOffset(o, update_time(end, ts, watermark)))
        if watermark >= due:
            due = _close(table, ends, lateness, watermark, emit, o, ctx, out, kept)
    if ctx.watermark >= due:
        _close(table, ends, lateness, ctx.watermark, emit, ctx.last_offset, ctx, out, kept)
    return out, kept


def _close(
    table: dict[Any, Any],
    ends: dict[Any, Any],
    lateness: int,
    watermark: int,
    emit: Callable[[Any, Window, Any], Any],
    offset: int,
    ctx: BatchContext,
    out: list[Any],
    kept: list[int],
) -> int:
    """Emit and drop every session ending at or before watermark - lateness, oldest first;
    returns the watermark that closes the next one."""
    for end in sorted(end for end in ends if end + lateness <= watermark):
        for k, start in ends.pop(end):
            sessions = table[k]
            [session] = [s for s in sessions if s[0] == start]
            sessions.remove(session)
            if sessions:
                table[k] = sessions  # a running table records a value set, not changed in place
            else:
                del table[k]
            try:
                out.append(emit(k, Window(start, end), session[2]))
                kept.append(ResultOffset(offset, end))
            except Exception as exc:
                ctx.reject(offset, describe_error(f"session emit of [{start}, {end})", exc))
    return min(ends, default=NEVER) + lateness
