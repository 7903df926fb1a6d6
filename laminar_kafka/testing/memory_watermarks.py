"""The test kit's Watermark records between stages, as the tasks write and read them.

Each partition of an upstream stage stands for a writer (in a real run a task
writes the lowest watermark of its partitions, which comes to the same lowest
value downstream). After each of its batches, a partition whose watermark rose
writes a Watermark record into every partition of the internal topics its flows
write, in order with its records; a downstream partition hands the records it
reads to the flow runner in that order (`FlowRunner.on_watermark`). A stream
partition joined as of its time with versioned tables writes the lowest of its own
watermark and theirs (as its task does), also when only a table's rose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.control.codec import decode, encode
from laminar_kafka.control.headers import CONTROL_KEY, control_headers, is_control
from laminar_kafka.control.records import Watermark
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators.event_time import NO_WATERMARK, Progress
from laminar_kafka.runtime.event_clock import held_back
from laminar_kafka.runtime.processing import FlowRunner
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.testing.memory_log import MemoryMessage, MemoryOutput

_GENERATION = 0  # the test kit has no generations: a crash cuts the logs back instead


class MemoryWatermarks:
    """Writes and reads the Watermark records of a pipeline's internal topics."""

    def __init__(
        self,
        pipeline: Pipeline,
        keys: Sequence[PartitionKey],
        counts: Mapping[str, int],
        logs: dict[PartitionKey, list[MemoryMessage]],
        states: Mapping[PartitionKey, dict[str, KeyedState]],
    ) -> None:
        self._pipeline, self._counts, self._logs = pipeline.name, counts, logs
        self._states = states
        self._tables: dict[str, list[str]] = {}  # stream → the versioned tables it joins
        self._joined: dict[str, str] = {}  # versioned table → the stream joined with it
        for flow in pipeline.flows:
            for table in flow.tables:
                if table.versioned:
                    self._tables.setdefault(flow.source.topic, []).append(table.topic)
                    self._joined[table.topic] = flow.source.topic
        self._writes: dict[str, list[str]] = {}
        self._held_back: dict[str, int] = {}
        for flow in pipeline.flows:
            if flow.sink.internal and flow.source.event_time is not None:
                self._writes.setdefault(flow.source.topic, []).append(flow.sink.topic)
        for topic in self._writes:
            self._held_back[topic] = held_back(f for f in pipeline.flows if f.source.topic == topic)
        self._writer = {key: i for i, key in enumerate(keys)}
        self._expected: dict[str, frozenset[int]] = {}
        for key in keys:
            for topic in self._writes.get(key[0], ()):
                ids = self._expected.get(topic, frozenset())
                self._expected[topic] = ids | {self._writer[key]}
        self._sent: dict[PartitionKey, int] = {}

    def run(
        self,
        runner: FlowRunner,
        key: PartitionKey,
        batch: Sequence[MemoryMessage],
        output: MemoryOutput,
    ) -> None:
        """Process a batch of `key`'s log, its Watermark records in order; then write this
        partition's watermark downstream if it rose."""
        tables = self._states[key]
        start = 0
        for i, message in enumerate(batch):
            if is_control(message.headers()):
                if i > start:
                    runner.run(key, batch[start:i], tables, output)
                record = decode(message.value())
                if isinstance(record, Watermark) and record.pipeline == self._pipeline:
                    expected = self._expected.get(key[0], frozenset())
                    runner.on_watermark(key, record, expected, tables, output, message.offset())
                start = i + 1
        if start < len(batch):
            runner.run(key, batch[start:], tables, output)
        self.write(key, output)

    def write(self, key: PartitionKey, output: MemoryOutput) -> None:
        """Partition `key`'s watermark, less its windows' lateness (`held_back`), into the
        internal topics its flows write, if it rose (a table's: its stream partition's)."""
        if key[0] in self._joined:
            key = (self._joined[key[0]], key[1])
        targets = self._writes.get(key[0])
        watermark = self._watermark(key) if targets else NO_WATERMARK
        if watermark == NO_WATERMARK:
            return
        watermark -= self._held_back[key[0]]
        if watermark <= self._sent.get(key, NO_WATERMARK):
            return
        record = Watermark(self._pipeline, _GENERATION, self._writer[key], watermark)
        value, headers = encode(record), tuple(control_headers(record))
        for topic in targets or ():
            for partition in range(self._counts[topic]):
                log = self._logs[(topic, partition)]
                at, sequence = output.timestamp_ms, output.sequence
                log.append(
                    MemoryMessage(
                        topic, partition, len(log), CONTROL_KEY, value, at, sequence, headers
                    )
                )
        self._sent[key] = watermark

    def _watermark(self, key: PartitionKey) -> int:
        joined = [(table, key[1]) for table in self._tables.get(key[0], ())]
        return min(Progress.of(self._states[k]).watermark for k in (key, *joined))
