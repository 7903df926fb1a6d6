"""Event-time timers of a keyed step in one partition: (key, time) pairs that fire, oldest
first, once the partition's watermark reaches their time.

State, per step: the table `<step>#timers`, time → the keys with a timer then (a
dict used as an ordered set: at most one timer per key and time, and a time's
keys fire in the order their timers were set), a running table (on disk with the
disk store, and in deltas only the times whose keys changed); beside it a heap of
those times (`KeyedState.index`, rebuilt from the table after a restore), so the
next timer due is found without a scan of every key or time. A deleted timer's
time may stay in the heap; it is skipped when it reaches the top, and the heap is
rebuilt when such times outnumber the live ones. A fired timer is removed: the
table holds only pending timers.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Any

from laminar_kafka.operators.base import BatchContext

NEVER = 2**62
"""Beyond any timestamp: the time that is due when no timer is pending."""
_SLACK = 64  # stale heap entries tolerated before a rebuild is considered


class TimerQueue:
    """The pending timers of one step in one partition, kept in its table `<step>#timers`
    (`ctx.running_table`)."""

    def __init__(self, ctx: BatchContext, step: str) -> None:
        by_time = step + "#timers"
        self._by_time: dict[int, dict[Any, None]] = ctx.running_table(by_time)
        state = ctx.tables[by_time]
        if state.index is None:
            ctx.tables.pop(step + "#due", None)  # the heap of earlier snapshots: rebuilt
            state.index = list(self._by_time)
            heapify(state.index)
        self._heap: list[int] = state.index

    def set(self, key: Any, ts: int) -> None:
        """A timer for `key` at `ts`; setting it again changes nothing."""
        keys = self._by_time.get(ts)
        if keys is None:
            keys = {}
            heappush(self._heap, ts)
        elif key in keys:
            return
        keys[key] = None
        self._by_time[ts] = keys  # a running table records a value set, not one changed

    def delete(self, key: Any, ts: int) -> None:
        """Remove `key`'s timer at `ts`, if there is one."""
        keys = self._by_time.get(ts)
        if keys is None or key not in keys:
            return
        del keys[key]
        if keys:
            self._by_time[ts] = keys
            return
        del self._by_time[ts]
        if len(self._heap) > 2 * len(self._by_time) + _SLACK:
            self._heap[:] = self._by_time  # in place: the table's index is this list
            heapify(self._heap)

    def next_due(self) -> int:
        """The time of the oldest pending timer (NEVER when there is none)."""
        heap, by_time = self._heap, self._by_time
        while heap and heap[0] not in by_time:
            heappop(heap)
        return heap[0] if heap else NEVER

    def pop(self, watermark: int) -> tuple[int, list[Any]] | None:
        """The oldest time at or below `watermark` with its keys, removed; None if none."""
        ts = self.next_due()
        if ts > watermark:
            return None
        heappop(self._heap)
        return ts, list(self._by_time.pop(ts))

    def __len__(self) -> int:
        """How many timers are pending."""
        return sum(map(len, self._by_time.values()))
