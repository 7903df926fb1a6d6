"""Run a pipeline in memory, without broker or Spark: unit tests of the user's pipeline.

Records go through the same `FlowRunner` the worker tasks use; keyed state is
snapshot and restored with the runtime's own snapshot functions. So a test here
checks the user's functions, formats and state exactly as they will run, in
milliseconds:

    out = run_pipeline(pipeline, {"orders": [order(1), order(2)]})
    out["customer-totals"]            # decoded values of the sink topic

`PipelineTester` adds checkpoints and crashes, step by step. Its committed
output after any sequence of sends, checkpoints and crashes must equal the
output of one crash-free run: the exactly-once contract, testable per pipeline.
`redeploy` restarts it with a new version of the pipeline, as a code change
between two runs does: state follows its step names, or the change is refused.

A multi-stage pipeline (a `key_by` that repartitions) runs stage by stage: the
internal topics between stages are in-memory logs too (`memory_topics`), and a
checkpoint covers every stage at once.

Records run one at a time by default (`batch_size=1`), so the output does not
depend on how the input was chunked; committed output is listed partition by
partition (source partitions first, then internal ones, upstream first), in
the order it was written within each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from laminar_kafka.api.pipeline import Pipeline, SinkSpec
from laminar_kafka.checkpoint.topology import check_topology
from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.event_clock import wall_ms
from laminar_kafka.runtime.processing import FlowRunner
from laminar_kafka.state.snapshot import (
    PartitionTables,
    decode_partition_snapshot,
    encode_task_snapshot,
)
from laminar_kafka.testing.memory_inputs import encode_inputs
from laminar_kafka.testing.memory_log import (
    DeadLetterRecord,
    MemoryMessage,
    MemoryOutput,
    OutputRecord,
    ProducedRecord,
    Raw,
)
from laminar_kafka.testing.memory_topics import MemoryTopics, late_formats, partition_counts
from laminar_kafka.testing.memory_watermarks import MemoryWatermarks

__all__ = ["DeadLetterRecord", "OutputRecord", "PipelineTester", "Raw"]


class PipelineTester:
    """Feeds a pipeline step by step, with checkpoints and crashes, all in memory.

    `send` appends records to the source partitions and processes them, stage
    by stage; `checkpoint` snapshots state and offsets (internal topics' too) and
    commits the output so far; `crash` drops uncommitted output and the internal
    records written since the checkpoint, restores the last snapshot and rewinds
    the input to its offsets, to be replayed by the next `send` or `checkpoint`;
    `redeploy` does the same with a new version of the pipeline.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        partitions: int | Mapping[str, int] = 1,
        *,
        batch_size: int = 1,
        dead_letter_topic: str | None = None,
    ) -> None:
        pipeline.validate()
        if batch_size < 1:
            raise ConfigError(f"batch size must be positive, not {batch_size}")
        config = RuntimeConfig("memory", "memory", dead_letter_topic=dead_letter_topic)
        self.dead_letter_topic = config.dead_letters_to(pipeline.name)
        self._batch_size = batch_size
        self._sinks: dict[str, SinkSpec] = {}
        self._topics = MemoryTopics()
        self._output = MemoryOutput(self._topics.logs, self._topics.internal)
        self._clock_ms = 0
        self._wall_ms = wall_ms()  # moved on by advance_clock only: idleness is testable
        self._sent = 0
        self._snapshot: bytes | None = None
        self._snapshot_keys: frozenset[PartitionKey] = frozenset()
        self._snapshot_topology: dict[str, str] = {}
        self._checkpoint_offsets: dict[PartitionKey, int] = {}
        self.checkpoints = 0
        self._deploy(pipeline, partition_counts(pipeline, partitions))

    def _deploy(self, pipeline: Pipeline, counts: Mapping[str, int]) -> None:
        """Run `pipeline` from the last checkpoint; topics seen before keep their input."""
        self.pipeline = pipeline
        self._keys = self._topics.deploy(pipeline, counts)  # stage by stage
        for key in self._keys:
            self._checkpoint_offsets.setdefault(key, 0)
        # Sinks of earlier versions stay readable: their committed output is still there.
        sinks = [f.sink for f in reversed(pipeline.flows) if not f.sink.internal]
        self._sinks.update({sink.topic: sink for sink in sinks})
        # Late records are source records as they were read: decoded with the source's format.
        self._sinks.update({t: SinkSpec(t, fmt) for t, fmt in late_formats(pipeline).items()})
        self._restart()

    def _restart(self) -> None:
        """A new worker generation resuming from the last checkpoint (or from scratch)."""
        self._topics.rewind()
        logs = self._topics.logs
        self._runner = FlowRunner(
            self.pipeline.flows,
            self._topics.counts,
            self.dead_letter_topic,
            clock=lambda: self._wall_ms,
        )
        self._positions = {k: self._checkpoint_offsets[k] for k in self._keys}
        snapshot = self._snapshot
        self._states: dict[PartitionKey, PartitionTables] = {
            k: decode_partition_snapshot(snapshot, k, "memory")
            if snapshot is not None and k in self._snapshot_keys
            else {}
            for k in self._keys
        }
        self._runner.states_of = self._states.__getitem__  # the tables a join reads
        counts = self._topics.counts
        self._marks = MemoryWatermarks(self.pipeline, self._keys, counts, logs, self._states)

    # -- input ------------------------------------------------------------
    def send(
        self,
        topic: str,
        values: Iterable[Any],
        keys: Iterable[Any] | None = None,
        timestamps: Iterable[int] | None = None,
        headers: Iterable[Iterable[tuple[str, bytes | None]]] | None = None,
    ) -> None:
        """Append records to `topic` (encoded with its source format; `Raw` as is), process them.

        Without `keys`, a record of a source declared `partitioned_by` goes to the
        partition its key maps to (what a producer keyed by that field does), else
        to partition 0; with `keys`, to the partition Kafka's producer picks for
        that key. A table's records need `keys` (value None: a tombstone); they are
        read in the order they are sent among the stream's, with no bootstrap.
        Internal topics are written by the pipeline only.
        """
        if topic in self.pipeline.internal_topics:
            raise ConfigError(
                f"{topic!r} is an internal topic of pipeline {self.pipeline.name!r}: "
                "only its source topics can be sent to"
            )
        items = list(values)
        key_list = list(keys) if keys is not None else None
        stamps = list(timestamps) if timestamps is not None else None
        heads = [tuple(h) for h in headers] if headers is not None else [()] * len(items)
        lengths = {len(key_list or items), len(items if stamps is None else stamps), len(heads)}
        if lengths != {len(items)}:
            raise ConfigError(f"send to {topic}: keys, timestamps, headers must match the values")
        count = self._topics.counts.get(topic, 0)
        encoded = encode_inputs(self.pipeline, topic, count, items, key_list)
        for i, (data, raw_key, partition) in enumerate(encoded):
            log = self._topics.logs[(topic, partition)]
            ts = stamps[i] if stamps is not None else self._clock_ms
            log.append(
                MemoryMessage(topic, partition, len(log), raw_key, data, ts, self._sent, heads[i])
            )
            self._clock_ms += 1
            self._sent += 1
        self._process()

    def _process(self) -> None:
        """Run every partition from its position to the end of its input, stage by stage.

        Upstream stages append to the internal logs the next stages read: repeat
        until a pass over every partition finds nothing left to read.
        """
        pending = True
        while pending:
            pending = False
            for key in self._keys:
                log, position = self._topics.logs[key], self._positions[key]
                self._topics.in_send_order(key, position)
                while position < len(log):
                    pending = True
                    batch = log[position : position + self._batch_size]
                    self._output.source = key
                    self._output.timestamp_ms = batch[-1].timestamp_ms
                    self._output.sequence = batch[-1].sequence
                    self._marks.run(self._runner, key, batch, self._output)
                    position += len(batch)
                    self._positions[key] = position

    def advance_clock(self, seconds: float) -> None:
        """Let `seconds` of wall-clock time pass: partitions without records for their
        source's idle_timeout release their windows (runtime/event_clock.py)."""
        self._wall_ms += round(seconds * 1000)
        self._process()  # a replay still to run is input, not idleness
        self._runner.tick(self._states, self._positions, self._output, self._output.at)
        for key in self._keys:  # released partitions tell the next stage
            self._marks.write(key, self._output)
        self._process()

    # -- checkpoints and crashes ------------------------------------------
    def checkpoint(self) -> int:
        """Process what is pending, snapshot state and offsets, commit; returns its number.

        Every stage has read everything by then: the internal logs are committed as
        they are, and a crash cuts them back to here.
        """
        self._process()
        self._runner.expire(self._states)  # as a task does: expired keys are in no snapshot
        self._snapshot = encode_task_snapshot(self._states)
        self._snapshot_keys = frozenset(self._states)
        self._snapshot_topology = self.pipeline.topology()  # as the runner's manifest holds it
        self._checkpoint_offsets.update(self._positions)
        self._topics.checkpoint()
        self._output.commit()
        self.checkpoints += 1
        return self.checkpoints

    def crash(self) -> None:
        """Lose everything since the last checkpoint: output, internal records, state and
        read positions."""
        self._output.abort()
        self._restart()

    def redeploy(self, pipeline: Pipeline, partitions: int | Mapping[str, int] = 1) -> None:
        """Crash, then restart from the last checkpoint with `pipeline`, a new version.

        As a restart of the runner with changed code: the change is checked against
        the checkpoint's topology (`CheckpointError` when a step with state is gone
        or changed), each stateful step gets its state back by name, and input
        resumes at the checkpoint's offsets (a new source topic from its start).
        Topics keep their partition count; `partitions` sizes new ones.
        """
        pipeline.validate()
        if pipeline.name != self.pipeline.name:
            raise ConfigError(
                f"redeploy needs the same pipeline name ({self.pipeline.name!r}, not "
                f"{pipeline.name!r}): the name keys the checkpoints"
            )
        if not isinstance(partitions, int):
            partitions = {t: n for t, n in partitions.items() if t not in self._topics.counts}
        counts = partition_counts(pipeline, partitions)
        check_topology(self._snapshot_topology, pipeline.topology(), self.checkpoints)
        self._output.abort()
        self._deploy(pipeline, counts)

    # -- output -----------------------------------------------------------
    def _committed(self, topic: str) -> list[ProducedRecord]:
        records = [r for r in self._output.committed if r.topic == topic]
        return sorted(records, key=lambda r: self._topics.rank(r.source))  # stable

    def output(self, topic: str) -> list[Any]:
        """The committed output of a sink topic, decoded (dead letters: `DeadLetterRecord`s)."""
        if topic == self.dead_letter_topic:
            return list(self.dead_letters())
        if any(sink.url == topic for sink in self.pipeline.file_sinks):
            return [r.row for r in self._committed(topic)]
        return [r.value for r in self.output_records(topic)]

    def output_records(self, topic: str) -> list[OutputRecord]:
        """The committed records of a sink topic with their keys, headers and timestamps."""
        sink = self._sinks.get(topic)
        if sink is None or sink.files is not None:
            raise ConfigError(f"pipeline {self.pipeline.name!r} does not write topic {topic!r}")
        keys = sink.key_format if sink.key is not None else None
        return [OutputRecord.decoded(r, sink.value_format, keys) for r in self._committed(topic)]

    def dead_letters(self) -> list[DeadLetterRecord]:
        """The committed records of the dead-letter topic."""
        return [DeadLetterRecord.from_record(r) for r in self._committed(self.dead_letter_topic)]

    def outputs(self) -> dict[str, list[Any]]:
        """Every sink topic's committed output, and the dead letters if there are any."""
        out = {topic: self.output(topic) for topic in self.pipeline.outputs}
        letters = self.dead_letters()
        if letters:
            out[self.dead_letter_topic] = letters
        return out
