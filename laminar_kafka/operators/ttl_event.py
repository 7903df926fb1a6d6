"""State TTL in event time: a key leaves the table once the partition's watermark reaches
the event time of its newest update plus the TTL.

The table is a TTL table as in processing time (operators/ttl.py): key →
(state, time), in the order of the last update; the time is the newest event
time of the key's records since it was (re)created. Whether a key expired is
decided record by record, at the watermark as of that record (`ctx.marks`), so
the outputs do not depend on how records were batched, and a replay after a
crash expires the same keys at the same records as the first run did.

Removing the expired keys (after each batch of the step, and before each
snapshot, `FlowRunner.expire`) costs the keys removed, not the table's size.
Event times arrive out of order, so the table is not in time order throughout:
a key set with a time at or above every time set before it (`high`) is *in
order*, and the in-order keys are in time order within the table; a key set
with an older time is a *laggard*, and goes into a heap as well. Removal scans
the table's front up to the first key not expired (no in-order key after it is
expired either), then pops the laggards that are due. That index is not in the
snapshot: it is rebuilt from the table, in one pass, at its first use after a
restore (`KeyedState.index`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from laminar_kafka.operators.base import BatchContext, describe_error, result_time, set_back
from laminar_kafka.operators.event_time import NO_WATERMARK, WATERMARK_TABLE, Progress
from laminar_kafka.state.keyed_state import KeyedState


@dataclass
class ExpiryIndex:
    """The newest time set in order (`high`) and a heap of the laggards: (time, n, key)."""

    high: int = NO_WATERMARK
    laggards: list[tuple[int, int, Any]] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    @classmethod
    def of(cls, table: Mapping[Any, tuple[Any, int]]) -> ExpiryIndex:
        """The index of a table read in its order (after a restore)."""
        index = cls()
        for key, (_state, time) in table.items():
            index.set(key, time)
        return index

    def set(self, key: Any, time: int) -> None:
        """`key` was set (moved to the table's end) with `time`."""
        if time >= self.high:
            self.high = time
        else:
            heapq.heappush(self.laggards, (time, next(self._seq), key))


def index_of(state: KeyedState) -> ExpiryIndex:
    """The expiry index of a TTL table, built from the table on first use."""
    if not isinstance(state.index, ExpiryIndex):
        state.index = ExpiryIndex.of(state.table)
    return state.index


def expire_at(state: KeyedState, watermark: int, ttl_ms: int) -> int:
    """Remove the keys whose time plus `ttl_ms` the `watermark` reached; how many went."""
    if watermark == NO_WATERMARK:
        return 0
    table, index = state.table, index_of(state)
    cutoff = watermark - ttl_ms
    due = 0
    for _state, time in table.values():
        if time > cutoff:
            break
        due += 1
    for key in list(islice(table, due)):
        del table[key]
    laggards = index.laggards
    while laggards and laggards[0][0] <= cutoff:
        _time, _n, key = heapq.heappop(laggards)
        entry = table.get(key)
        if entry is not None and entry[1] <= cutoff:  # else: set again since, or gone
            del table[key]
            due += 1
    return due


def apply_with_event_ttl(
    step: str,
    ttl_ms: int,
    initial: Callable[[], Any],
    add: Callable[[Any, Any], Any],
    emit: Callable[[Any, Any], Any],
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
) -> tuple[list[Any], list[int]]:
    """A running aggregate whose keys expire in event time (see the module's docstring)."""
    table = ctx.running_table(step)
    state = ctx.tables[step]
    index = index_of(state)
    times, marks, last = ctx.times, ctx.marks, ctx.watermark
    out: list[Any] = []
    kept: list[int] = []
    for (k, v), o in zip(values, offsets, strict=True):
        mark = marks.get(o, last)  # a window's result after the batch: the batch's watermark
        ts = result_time(o)
        ts = times.get(o, mark) if ts is None else ts
        try:
            entry = table.get(k)
            if entry is not None and entry[1] + ttl_ms <= mark:
                entry = None  # expired at this record, whether or not it was removed yet
            updated = add(initial() if entry is None else entry[0], v)
            emitted = emit(k, updated)
        except Exception as exc:
            ctx.reject(o, describe_error("aggregate", exc))
            set_back(table, k)
            continue
        time = ts if entry is None else max(entry[1], ts)
        table.pop(k, None)  # to the end: the table stays in the order of the last update
        table[k] = (updated, time)
        index.set(k, time)
        out.append(emitted)
        kept.append(o)
    expire_at(state, last, ttl_ms)
    return out, kept


def partition_watermark(tables: Mapping[str, KeyedState]) -> int:
    """A partition's watermark, from its tables; NO_WATERMARK before its first one."""
    progress = tables.get(WATERMARK_TABLE)
    found = progress.table.get("progress") if progress is not None else None
    return found.watermark if isinstance(found, Progress) else NO_WATERMARK
