"""One key's buffered records of an interval join, both sides, indexed by time.

A key's buffers are a list `[times of a, times of b, order of a, order of b]`:
per side, time → its records flat, `[value, matched, value, matched, ...]`, and
the same times ascending, so the partners of a record at t are the times
between two bisections of the other side's order, not a scan of every buffered
time. A side's order is None while it holds at most one time (most keys of a
join that pairs each record once): a list fewer per key is less for the garbage
collector to walk, which costs as much as the join itself. A time's records are
one list, not a list of pairs, for the same reason. All of it pickles (the
step's table is in each snapshot).

Snapshots taken before the index hold `[times of a, times of b]`, each time's
records as `[[value, matched], ...]`: `indexed` converts such a key's buffers in
place the first time it is touched after a restore.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import Any

Buffers = list[Any]
"""[times of a, times of b, order of a, order of b] (see the module docstring)."""


def new_buffers() -> Buffers:
    return [{}, {}, None, None]


def indexed(found: Buffers) -> Buffers:
    """`found` in the current layout: a buffer restored from an older snapshot is
    converted in place."""
    if len(found) == 2:
        for times in found:
            for ts, pairs in times.items():
                times[ts] = [item for pair in pairs for item in pair]
        found.extend(sorted(times) if len(times) > 1 else None for times in found[:2])
    return found


def add_time(found: Buffers, side: int, ts: int) -> None:
    """Order `ts`, just added to the times of `side`."""
    order = found[2 + side]
    if order is None:
        if len(found[side]) > 1:  # its second time: from now on in order
            found[2 + side] = sorted(found[side])
    elif order[-1] < ts:  # times mostly come in order
        order.append(ts)
    else:
        insort(order, ts)


def partners(found: Buffers, side: int, low: int, high: int) -> list[int]:
    """The buffered times of `side` in [low, high], ascending."""
    order = found[2 + side]
    if order is None:  # one time at most
        return [ts for ts in found[side] if low <= ts <= high]
    return order[bisect_left(order, low) : bisect_right(order, high)]  # type: ignore[no-any-return]


def remove(found: Buffers, side: int, ts: int) -> list[Any]:
    """The records of `side` at `ts` ([value, matched, ...]), no longer buffered; none
    if there were none."""
    times = found[side]
    records: list[Any] | None = times.pop(ts, None)
    if records is None:
        return []
    order = found[2 + side]
    if order is not None:
        if not times:
            found[2 + side] = None
        else:  # the watermark drops a side's times oldest first: ts is mostly the first
            del order[0 if order[0] == ts else bisect_left(order, ts)]
    return records


def values_of(found: Buffers, side: int) -> list[tuple[int, Any, bool]]:
    """(time, value, matched) of every buffered record of `side`, in time order."""
    found_at = found[side]
    return [
        (ts, value, matched)
        for ts in sorted(found_at)
        for value, matched in zip(found_at[ts][::2], found_at[ts][1::2], strict=True)
    ]
