"""State TTL of running aggregates: a key not updated for `ttl_ms` leaves the table.

Time is processing time (for event time, `ttl_time="event"`: operators/ttl_event.py),
the task's wall clock in ms, read once per batch. A TTL step's table maps key →
(state, last update in ms) and is kept in the order of the last update (an
update moves its key to the end), so the keys that expired are always at its
front: expiring costs the keys removed, not the table's size. It runs before
each batch of the step and before each snapshot (`FlowRunner.expire`), so an
expired key is in no later snapshot. The times are wall-clock times, kept in
the snapshot: a key idle while the pipeline was stopped expires at the first
batch or checkpoint after the restart. A wall clock set back delays expiry (it
stops at the first key not yet expired), never hastens it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import islice
from typing import Any, Literal

from laminar_kafka.operators.base import BatchContext, describe_error, set_back
from laminar_kafka.operators.ttl_event import expire_at, partition_watermark

TtlTime = Literal["processing", "event"]
"""What a TTL counts in: processing time (here), or event time (operators/ttl_event.py)."""
TTL_TIMES: tuple[TtlTime, ...] = ("processing", "event")


def expire(table: dict[Any, tuple[Any, int]], now_ms: int, ttl_ms: int) -> int:
    """Remove the keys last updated `ttl_ms` or longer before `now_ms`; how many went."""
    cutoff = now_ms - ttl_ms
    removed = 0
    for _state, updated_ms in table.values():
        if updated_ms > cutoff:
            break
        removed += 1
    for key in list(islice(table, removed)):
        del table[key]
    return removed


def apply_with_ttl(
    step: str,
    ttl_ms: int,
    initial: Callable[[], Any],
    add: Callable[[Any, Any], Any],
    emit: Callable[[Any, Any], Any],
    values: list[Any],
    offsets: list[int],
    ctx: BatchContext,
) -> tuple[list[Any], list[int]]:
    """A running aggregate whose keys expire (see the module's docstring)."""
    table = ctx.running_table(step)
    now = ctx.now_ms
    expire(table, now, ttl_ms)
    out: list[Any] = []
    kept: list[int] = []
    for (k, v), o in zip(values, offsets, strict=True):
        try:
            entry = table.get(k)
            updated = add(initial() if entry is None else entry[0], v)
            emitted = emit(k, updated)
        except Exception as exc:
            ctx.reject(o, describe_error("aggregate", exc))
            set_back(table, k)
            continue
        table.pop(k, None)  # to the end: the table stays in the order of the last update
        table[k] = (updated, now)
        out.append(emitted)
        kept.append(o)
    return out, kept


def expire_steps(
    tables: Mapping[str, Any], ttls: Mapping[str, tuple[int, TtlTime]], now_ms: int
) -> int:
    """`expire` each step of `ttls` found in `tables` (one partition's, step → its keyed
    state) at `now_ms`, or at the partition's watermark if it counts in event time; how
    many keys went."""
    watermark = partition_watermark(tables)
    return sum(
        expire(tables[step].table, now_ms, ttl)
        if time == "processing"
        else expire_at(tables[step], watermark, ttl)
        for step, (ttl, time) in ttls.items()
        if step in tables
    )
