"""A task's event time across stages: it writes its watermark into the internal
partitions it writes, and raises its internal partitions' watermarks from what
their writers wrote.

A task's watermark is the lowest of its partitions' (none until each has one).
It goes, as a Watermark control record, into every partition of every internal
topic the task writes, inside its transaction and so in order with its records:
when its generation starts, whenever it rose (looked at every 200 ms), and before each
forwarded barrier. The watermark is state, snapshotted with the partitions' tables
also in a stage without keyed state (`Stage.keeps_state`): a task restored at a
checkpoint reports at once the watermark it wrote before that checkpoint's barrier
(no higher than its offsets justify; the writers of a new generation must all
report before a downstream watermark rises), also when it has no new input. A
downstream partition's watermark is the lowest of its current writers' (see
`Progress.heard`), so a slow upstream task holds back the windows downstream
instead of its records arriving late there. A task whose windows allow lateness
writes its watermark less that lateness: its window results, stamped with their
windows' ends, are then never late downstream (`held_back`).
"""

from __future__ import annotations

from laminar_kafka.barriers.forwarding import forward_watermark
from laminar_kafka.control.records import Watermark
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.event_clock import held_back
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.sinks.task_sinks import TaskSinks
from laminar_kafka.sources.kafka_reader import KafkaMessage
from laminar_kafka.state.task_state import TaskState


class TaskEventTime:
    """Watermarks in and out of one task; every call is a no-op without event time."""

    def __init__(
        self, spec: TaskSpec, flows: FlowRunner, state: TaskState, sinks: TaskSinks
    ) -> None:
        self._spec, self._flows, self._state, self._sinks = spec, flows, state, sinks
        self._forwarded: int | None = None
        self._held_back = held_back(spec.stage.flows)
        self.max_ts: dict[PartitionKey, int] = {}
        """Each partition's highest Kafka timestamp (what a task without event time reports)."""

    def saw(self, key: PartitionKey, last: KafkaMessage) -> None:
        self.max_ts[key] = max(self.max_ts.get(key, 0), last.timestamp()[1])

    def watermark(self) -> int | None:
        """What the task reports in its Ack: its watermark (see FlowRunner.watermark)."""
        return self._flows.watermark(self._state.partitions, self.max_ts)

    def tick(self, positions: dict[PartitionKey, int]) -> None:
        """Release idle partitions, then forward the watermark if it rose."""
        if self._flows.has_event_time and self._flows.clock.tick_due():
            self._flows.tick(self._state.partitions, positions, self._sinks)
            self.forward()

    def forward(self) -> None:
        """Write the task's watermark, less its windows' lateness (`held_back`), into every
        internal partition it writes, if it rose."""
        outputs = self._spec.outputs
        watermark = self.watermark() if self._flows.has_event_time and outputs else None
        if watermark is None:
            return
        watermark -= self._held_back
        if self._forwarded is not None and watermark <= self._forwarded:
            return
        spec = self._spec
        record = Watermark(spec.pipeline.name, spec.generation, spec.task, watermark)
        forward_watermark(self._sinks.kafka, record, outputs)
        self._forwarded = watermark

    def heard(self, key: PartitionKey, record: Watermark, offset: int) -> bool:
        """A Watermark record read at `offset` of internal partition `key`; always False
        (it completes no alignment)."""
        expected = self._spec.writers.get(key, frozenset())
        tables = self._state.of(key)
        self._flows.on_watermark(key, record, expected, tables, self._sinks, offset - 1)
        return False

    def restart(self) -> None:
        """Reading starts again (recovery, rollback): idleness counts from now, and the
        watermark is forwarded again even if it did not rise (the transaction that
        carried it may be gone)."""
        self._flows.clock.restart()
        self._forwarded = None
