"""A task's event-time bookkeeping: stamping batches, and releasing idle partitions.

Stamping and watermarks are per partition and deterministic (operators/event_time.py).
Idleness is not: it is measured on the wall clock, from the last record of the
partition or from when reading (re)started, whichever is later. A partition that received no
record for its source's `idle_timeout` stops holding its windows back: its
watermark rises to the lowest watermark of the task's partitions that are not
idle, or, when every partition is idle, to the wall clock minus the allowed
out-of-orderness (so the last windows of a stream that stopped do close).
A record that arrives afterwards with an older timestamp is late.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from laminar_kafka import waits
from laminar_kafka.api.specs import Flow
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators.base import BatchContext, ResultOffset
from laminar_kafka.operators.event_time import (
    KAFKA_TIME,
    NO_WATERMARK,
    EventTime,
    Progress,
    kafka_times,
    stamp,
)
from laminar_kafka.state.keyed_state import KeyedState

Clock = Callable[[], int]
"""Wall-clock milliseconds."""


def wall_ms() -> int:
    return waits.wall_ms()


def held_back(flows: Iterable[Flow]) -> int:
    """How far below its own watermark the watermark a stage writes downstream stays: the
    largest allowed lateness of the windows among `flows` that write internal topics.

    A window's result carries its window's end, and comes up to that lateness after the
    watermark passed its end; so held back, it is never behind the next stage's watermark
    (never late there).
    """
    return max((f.window_lateness_ms for f in flows if f.sink.internal), default=0)


def event_times_of(offsets: list[int], ctx: BatchContext) -> list[int | None]:
    """The event time of each output record: a result's own (a window's end), else its
    source record's, else the partition's watermark."""
    fallback = ctx.watermark if ctx.watermark != NO_WATERMARK else None
    times = ctx.times
    return [o.event_time if type(o) is ResultOffset else times.get(o, fallback) for o in offsets]


class EventClock:
    """Stamps batches and finds idle partitions; remembers when each partition last had data."""

    def __init__(self, clock: Clock = wall_ms, tick_every_s: float = 0.2) -> None:
        self.clock = clock
        self._arrivals: dict[PartitionKey, int] = {}
        self._started = clock()
        self._tick_every_s = tick_every_s
        self._next_tick = 0.0

    def restart(self) -> None:
        """Reading starts (again): idleness counts from now, so a partition with input
        still to read (a replay after recovery or a rollback) is not taken for idle."""
        self._arrivals.clear()
        self._started = self.clock()

    def tick_due(self) -> bool:
        """True at most every `tick_every_s` (monotonic): time to look for idle partitions."""
        now = waits.monotonic()
        if now < self._next_tick:
            return False
        self._next_tick = now + self._tick_every_s
        return True

    def stamp(
        self,
        key: PartitionKey,
        spec: EventTime,
        ctx: BatchContext,
        values: list[Any],
        offsets: list[int],
        start: Progress,
        progress: Progress,
        times: dict[int, int | None] | None = None,
    ) -> tuple[BatchContext, list[Any], list[int]]:
        """Event times of a flow's decoded batch, from the partition's progress `start`.

        Records without a usable timestamp are dead letters in `ctx`; `progress`
        (the partition's, in its state) moves to the batch's end. `times`, if given,
        stand for the records' Kafka timestamps (a versioned table reads its own).
        """
        now = self.clock()
        self._arrivals[key] = now
        # Kafka timestamps are read only for a source stamped by them (the hot path).
        if times is not None:
            by_kafka = times
        else:
            by_kafka = kafka_times(ctx.messages) if spec.timestamp == KAFKA_TIME else {}
        stamped = stamp(spec, values, offsets, by_kafka, start, now)
        for offset, reason in stamped.refused:
            ctx.reject(offset, reason)
        if stamped.refused:
            kept = [i for i, o in enumerate(offsets) if o in stamped.times]
            values, offsets = [values[i] for i in kept], [offsets[i] for i in kept]
        progress.max_ts = max(progress.max_ts, stamped.max_ts)
        progress.watermark = max(progress.watermark, stamped.watermark)
        ctx = replace(ctx, times=stamped.times, marks=stamped.marks, watermark=stamped.watermark)
        return ctx, values, offsets

    def idle_watermarks(
        self,
        specs: Mapping[PartitionKey, EventTime],
        states: Mapping[PartitionKey, dict[str, KeyedState]],
    ) -> dict[PartitionKey, int]:
        """Partition → the watermark it rises to now for being idle (only rises listed)."""
        now = self.clock()
        idle: list[PartitionKey] = []
        active: list[int] = []
        for key, spec in specs.items():
            quiet = now - self._arrivals.get(key, self._started)
            progress = Progress.of(states[key])
            if spec.idle_timeout_ms is not None and quiet >= spec.idle_timeout_ms:
                idle.append(key)
            elif progress.watermark != NO_WATERMARK:
                active.append(progress.watermark)
        found: dict[PartitionKey, int] = {}
        for key in idle:
            progress = Progress.of(states[key])
            target = min(active) if active else now - specs[key].max_out_of_order_ms
            if target > progress.watermark:
                found[key] = target
        return found
