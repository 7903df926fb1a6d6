"""One key's buffered records of an interval join, both sides, indexed by time.

A key's buffers are a list `[times of a, times of b, order of a, order of b]`:
per side, time → its records flat, `[value, matched, value, matched, ...]`, and
the same times ascending in an `array('q')`, so the partners of a record at t
are the times between two bisections of the other side's order, not a scan of
every buffered time. The layout keeps the garbage collector's work small (it
was half the step's CPU): an array holds no Python objects and is not tracked,
and a time's records are one list, not a list of pairs. All of it pickles (the
step's table is in each snapshot).

Snapshots taken before the index hold `[times of a, times of b]`, each time's
records as `[[value, matched], ...]`: `indexed` converts such a key's buffers in
place the first time it is touched after a restore.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from typing import Any

Buffers = list[Any]
"""[times of a, times of b, order of a, order of b] (see the module docstring)."""


def new_buffers() -> Buffers:
    return [{}, {}, array("q"), array("q")]


def indexed(found: Buffers) -> Buffers:
    """`found` in the current layout: a buffer restored from an older snapshot is
    converted in place."""
    if len(found) == 2:
        for times in found:
            for ts, pairs in times.items():
                times[ts] = [item for pair in pairs for item in pair]
        found.extend((array("q", sorted(found[0])), array("q", sorted(found[1]))))
    return found


def partners(found: Buffers, side: int, low: int, high: int) -> array[int]:
    """The buffered times of `side` in [low, high], ascending."""
    order = found[2 + side]
    return order[bisect_left(order, low) : bisect_right(order, high)]  # type: ignore[no-any-return]


def remove(found: Buffers, side: int, ts: int) -> list[Any]:
    """The records of `side` at `ts` ([value, matched, ...]), no longer buffered; none
    if there were none."""
    records: list[Any] | None = found[side].pop(ts, None)
    if records is None:
        return []
    order = found[2 + side]
    # The watermark drops a side's times oldest first: ts is mostly the first.
    del order[0 if order[0] == ts else bisect_left(order, ts)]
    return records


def values_of(found: Buffers, side: int) -> list[tuple[int, Any, bool]]:
    """(time, value, matched) of every buffered record of `side`, in time order."""
    found_at = found[side]
    return [
        (ts, value, matched)
        for ts in found[2 + side]
        for value, matched in zip(found_at[ts][::2], found_at[ts][1::2], strict=True)
    ]
