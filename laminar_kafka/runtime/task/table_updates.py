"""A batch of a versioned table's records: stamped with event time, kept as versions.

The table partition's watermark comes from the same stamping as a source
partition's (`EventClock.stamp`: its highest time less `max_out_of_order`, and
its idleness counted from its last record), and lives in the partition's state.
The runner then releases the stream records that waited for it (operators/asof_join.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from laminar_kafka.formats.format_check import FormatCheck
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.event_time import KAFKA_TIME, NO_WATERMARK, Progress
from laminar_kafka.operators.join import TableSpec, table_records
from laminar_kafka.operators.versions import prune, put_version, record_times
from laminar_kafka.runtime.task.event_clock import EventClock


def update_versions(
    spec: TableSpec,
    ctx: BatchContext,
    messages: Sequence[Any],
    clock: EventClock,
    check: FormatCheck,
) -> bool:
    """Apply `messages` (a batch of partition `ctx.partition` of versioned table `spec`)
    to its versions, in offset order; True when the partition's watermark rose.

    Bad records (undecodable, misplaced, without a usable time) are dead letters in
    `ctx`. A change below the partition's watermark when read is kept, and counted late
    in `ctx`: records at or after its time may have been joined without it. Each key
    updated is pruned (operators/versions.py) with the horizon of the watermark before
    the batch: a record still waiting has a time above that watermark.
    """
    assert spec.event_time is not None and spec.versions_kept_ms is not None
    records = table_records(spec, messages, ctx, check)
    times, refused = record_times(spec.event_time, records)
    for offset, reason in refused:
        ctx.reject(offset, reason)
    if refused:
        records = [r for r in records if r[0].offset() in times]
    progress = Progress.of(ctx.tables)
    start = replace(progress)
    stamped, kept, offsets = clock.stamp(
        (ctx.topic, ctx.partition),
        replace(spec.event_time, timestamp=KAFKA_TIME),
        ctx,
        [(key, value) for _, key, value in records],
        [m.offset() for m, _, _ in records],
        start,
        progress,
        times=times,
    )
    versions = ctx.running_table(spec.state_name)
    times_of, marks = stamped.times, stamped.marks
    for (key, value), offset in zip(kept, offsets, strict=True):
        put_version(versions, key, times_of[offset], value)
        if times_of[offset] < marks[offset]:
            ctx.late_record(offset, None, [])
    if start.watermark != NO_WATERMARK:
        horizon = start.watermark - spec.versions_kept_ms
        for key in {key for key, _ in kept}:
            prune(versions, key, horizon)
    return progress.watermark > start.watermark
