"""Runs one partition's batch of data records through the pipeline's flows.

Decoding, operators, encoding and produce (runtime/task/sink_writes.py) all work on
the batch. Records that cannot be decoded, that user code rejects or whose
output cannot be encoded go to the dead-letter topic with the reason and their
source offset, inside the same transaction as the output, so they are
exactly-once too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from laminar_kafka.api.specs import Flow
from laminar_kafka.control.records import Watermark
from laminar_kafka.formats.format_check import FormatCheck
from laminar_kafka.formats.internal_batch import SPAN
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators import runs_on_watermark
from laminar_kafka.operators.base import BatchContext, TableMaker
from laminar_kafka.operators.event_time import NO_WATERMARK, Progress
from laminar_kafka.operators.join import TableSpec, update_table
from laminar_kafka.operators.keyed import ttls_of
from laminar_kafka.operators.ttl import expire_steps
from laminar_kafka.runtime.task.decoding import decode_source
from laminar_kafka.runtime.task.event_clock import Clock, EventClock, wall_ms
from laminar_kafka.runtime.task.internal_reading import RUN_MESSAGES, InternalBatch
from laminar_kafka.runtime.task.joined_inputs import joined
from laminar_kafka.runtime.task.side_outputs import write_dead_letters, write_late
from laminar_kafka.runtime.task.sink_writes import write_sink
from laminar_kafka.runtime.task.table_updates import update_versions
from laminar_kafka.sinks.output import OutputWriter
from laminar_kafka.sources.kafka_reader import KafkaMessage, each
from laminar_kafka.state.keyed_state import KeyedState


@dataclass
class ProcessCounts:
    records_in: int = 0
    records_out: int = 0
    dead_letters: int = 0
    late: int = 0
    """Records later than their windows allowed (written to late_to, or dropped)."""
    reasons: dict[str, int] = field(default_factory=dict)
    """The dead letters per kind of reason (`side_outputs.reason_kind`)."""

    def as_tuple(self) -> tuple[int, int, int, int]:
        return self.records_in, self.records_out, self.dead_letters, self.late


class FlowRunner:
    """Applies the flows of a pipeline to batches, writing into a transaction."""

    def __init__(
        self,
        flows: Iterable[Flow],
        partition_counts: dict[str, int],
        dead_letter_topic: str,
        max_record_bytes: Mapping[str, int] | None = None,
        clock: Clock = wall_ms,
        idle_check_s: float = 0.2,
    ) -> None:
        """`max_record_bytes`: sink topic → the largest record it accepts (key + value);
        `clock`: processing time; `idle_check_s`: how often idle partitions are looked for."""
        self._limits = dict(max_record_bytes or {})
        self._flows_by_topic: dict[str, list[Flow]] = {}
        flows = list(flows)
        for flow in flows:
            self._flows_by_topic.setdefault(flow.source.topic, []).append(flow)
        self._tables = {t.topic: t for f in flows for t in f.tables}
        self._internal = {f.source.topic for f in flows if f.source.internal}
        self._joined_by = {t.topic: f.source.topic for f in flows for t in f.tables if t.versioned}
        """Versioned table → the stream joined with it: its watermark releases that stream's
        waiting records (operators/asof_join.py)."""
        self.states_of: Callable[[PartitionKey], dict[str, KeyedState]] = lambda _: {}
        """A partition's keyed state, for the tables a flow joins (set by the task)."""
        self._partition_counts = partition_counts
        self._dlq = dead_letter_topic
        self._event_times = {
            f.source.topic: f.source.event_time for f in flows if f.source.event_time is not None
        }
        # A versioned table's partitions have watermarks of their own, idleness included.
        self._event_times.update(
            {t.topic: t.event_time for t in self._tables.values() if t.event_time is not None}
        )
        self.clock = EventClock(clock, idle_check_s)
        self._now = clock
        self._ttls = ttls_of(op for f in flows for op in f.operators)
        self.counts = ProcessCounts()
        self.make_table: TableMaker | None = None  # TaskState.running_table; None: dicts
        self._format_check = FormatCheck()

    def run(
        self,
        key: PartitionKey,
        messages: Sequence[KafkaMessage],
        states: dict[str, KeyedState],
        txn: OutputWriter,
    ) -> None:
        """Process `messages` (data records of partition `key`, in offset order); `states` is
        the partition's state, step name → table (a step adds its table on first use)."""
        topic, partition = key
        if topic in self._internal and len(messages) > RUN_MESSAGES:  # decoded a few at a time
            for at in range(0, len(messages), RUN_MESSAGES):
                self.run(key, messages[at : at + RUN_MESSAGES], states, txn)
            return
        if topic not in self._internal:  # an internal message holds many records: below
            self.counts.records_in += len(messages)
        if topic in self._tables:
            self._update_table(self._tables[topic], key, messages, states, txn)
            return
        datas = each(messages, "value")
        source_offsets = each(messages, "offset")
        clock = self._event_times.get(topic)
        progress = Progress.of(states) if clock is not None else None
        start = replace(progress) if progress is not None else None  # every flow starts here
        last = source_offsets[-1] if source_offsets else -1
        for i, flow in enumerate(self._flows_by_topic.get(topic, ())):
            # An internal partition's messages hold batches of records, each flow its own copy.
            internal = flow.source.internal
            batch = InternalBatch(messages, flow.source.value_format) if internal else None
            if batch is not None and i == 0:  # records in, not messages
                self.counts.records_in += len(batch) + len(batch.refused)
            ctx = BatchContext(
                topic,
                partition,
                self._partition_counts[topic],
                states,
                messages=messages if batch is None else batch,
                key_format=flow.source.key_format,
                last_offset=last if batch is None else batch.last_offset,
                now_ms=self._now(),
                make_table=self.make_table,
            )
            if batch is None:
                values, offsets = decode_source(
                    flow, datas, source_offsets, ctx, self._format_check
                )
            else:
                values, offsets = batch.decoded(ctx.reject)
            if clock is not None and start is not None and progress is not None:
                times = None if batch is None else batch.times
                stamped = self.clock.stamp(key, clock, ctx, values, offsets, start, progress, times)
                ctx, values, offsets = stamped
            read = (
                dict(zip(source_offsets, datas, strict=True)) if flow.writes_source_bytes else None
            )
            self._apply(flow, values, offsets, joined(flow, ctx, self.states_of), txn, read)

    def expire(self, states: Mapping[PartitionKey, Mapping[str, KeyedState]]) -> int:
        """Remove the expired keys of every step with a TTL (before a snapshot: an expired
        key is in none); how many went."""
        now = self._now()
        return sum(expire_steps(tables, self._ttls, now) for tables in states.values())

    def tick(
        self,
        states: Mapping[PartitionKey, dict[str, KeyedState]],
        positions: Mapping[PartitionKey, int],
        txn: OutputWriter,
    ) -> None:
        """Release idle partitions (runtime/task/event_clock.py): raise their watermarks and
        emit what this closes or fires. `positions`: each partition's next offset."""
        specs = {k: self._event_times[k[0]] for k in states if k[0] in self._event_times}
        for key, watermark in self.clock.idle_watermarks(specs, states).items():
            Progress.of(states[key]).watermark = watermark
            self._watermark_rose(key, watermark, states[key], txn, positions.get(key, 0) - 1)

    def on_watermark(
        self,
        key: PartitionKey,
        record: Watermark,
        expected: frozenset[int],
        tables: dict[str, KeyedState],
        txn: OutputWriter,
        last_offset: int,
    ) -> None:
        """A writer's Watermark record read in internal partition `key` after `last_offset`:
        the partition's watermark rises once every `expected` writer reached it, and the
        windows that this closes and the timers it reaches emit (`Progress.heard`)."""
        progress = Progress.of(tables)
        if progress.heard(record.task, record.generation, record.watermark_ms, expected):
            self._watermark_rose(key, progress.watermark, tables, txn, last_offset)

    @property
    def has_event_time(self) -> bool:
        return bool(self._event_times)

    def _watermark_rose(
        self,
        key: PartitionKey,
        watermark: int,
        tables: dict[str, KeyedState],
        txn: OutputWriter,
        last_offset: int,
    ) -> None:
        """Run the flows that act on the watermark alone: windows close, timers fire. A
        versioned table's watermark acts on the stream partition joined with it; either
        side's, on a co-partitioned interval join (runtime/task/joined_inputs.py)."""
        topic, partition = key
        if topic in self._joined_by:
            topic = self._joined_by[topic]
            tables = self.states_of((topic, partition))
            watermark = Progress.of(tables).watermark
        elif topic in self._internal and last_offset >= 0:  # past every record of its message
            last_offset = last_offset * SPAN + SPAN - 1
        for flow in self._flows_by_topic.get(topic, ()):
            if flow.runs_on_watermark:
                count = self._partition_counts[topic]
                ctx = BatchContext(
                    topic,
                    partition,
                    count,
                    tables,
                    watermark=watermark,
                    last_offset=last_offset,
                    now_ms=self._now(),  # a window's results may feed a step with a TTL
                    make_table=self.make_table,
                )
                self._apply(flow, [], [], joined(flow, ctx, self.states_of), txn)

    def watermark(
        self,
        states: Mapping[PartitionKey, dict[str, KeyedState]],
        max_ts: Mapping[PartitionKey, int],
    ) -> int | None:
        """What the task reports at a checkpoint: the lowest event-time watermark of its
        partitions, or, without event time, the lowest of their highest Kafka timestamps."""
        if not self._event_times:
            return min(max_ts.values()) if max_ts else None
        found = [
            Progress.of(tables).watermark
            for key, tables in states.items()
            if key[0] in self._event_times
        ]
        known = [w for w in found if w != NO_WATERMARK]
        return min(known) if known and len(known) == len(found) else None

    def _apply(
        self,
        flow: Flow,
        values: list[Any],
        offsets: list[int],
        ctx: BatchContext,
        txn: OutputWriter,
        read: Mapping[int, bytes | None] | None = None,
    ) -> None:
        """The flow's operators, its sink, then what left beside it (late, dead letters).
        `read`: source offset -> bytes, for a flow that writes them (`writes_source_bytes`)."""
        for op in flow.operators:
            # A window closes, a timer fires, on the watermark alone: on an empty batch too.
            if values or runs_on_watermark(op):
                values, offsets = op.apply(values, offsets, ctx)
        self.counts.records_out += write_sink(
            flow, values, offsets, ctx, txn, self._partition_counts, self._limits, read
        )
        source, internal = (ctx.topic, ctx.partition), ctx.topic in self._internal
        if ctx.late:
            self.counts.late += write_late(ctx.late, source, ctx.messages, txn, internal)
        if ctx.dead_letters:
            letters, messages = ctx.dead_letters, ctx.messages
            self.counts.dead_letters += write_dead_letters(
                self._dlq, letters, messages, txn, self.counts.reasons, internal
            )

    def _update_table(
        self,
        spec: TableSpec,
        key: PartitionKey,
        messages: Sequence[KafkaMessage],
        states: dict[str, KeyedState],
        txn: OutputWriter,
    ) -> None:
        """Table records change the partition's rows (or versions); bad ones are dead
        letters. A versioned table's rising watermark releases waiting stream records."""
        counts, make = self._partition_counts, self.make_table
        ctx = BatchContext(
            key[0], key[1], counts[key[0]], states, messages=messages, make_table=make
        )
        rose = False
        if spec.versioned:
            rose = update_versions(spec, ctx, messages, self.clock, self._format_check)
        else:
            rows = ctx.running_table(spec.state_name)
            update_table(spec, messages, rows, ctx, self._format_check)
        if ctx.dead_letters:
            self.counts.dead_letters += write_dead_letters(
                self._dlq, ctx.dead_letters, messages, txn, self.counts.reasons
            )
        if ctx.late:
            self.counts.late += write_late(ctx.late, key, messages, txn)
        if rose:
            self._watermark_rose(key, Progress.of(states).watermark, states, txn, -1)
