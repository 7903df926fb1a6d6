"""Test a pipeline on the real engine, in memory: no broker, no Spark, milliseconds a step.

`PipelineTester` runs the runtime itself (the `PipelineRunner`, its checkpoint
coordinator, the worker tasks and their recovery) on threads over an in-memory
Kafka (`memory_engine`), so a test checks the user's functions, formats and
state exactly as they run in a deployment, checkpoints and crashes included:

    out = run_pipeline(pipeline, {"orders": [order(1), order(2)]})
    out["customer-totals"]            # decoded values of the sink topic

Its committed output after any sequence of sends, checkpoints and crashes must
equal the output of one crash-free run: the exactly-once contract, testable per
pipeline. `crash(at=...)` kills a task or the driver at one of the runtime's own
crash points (`faults.FaultPoint`) in the next checkpoint, and the engine
recovers as it does in a deployment. `redeploy` restarts it with a new version
of the pipeline: state follows its step names, or the runtime refuses the change.

Committed output is listed by the source partition whose task wrote it (source
partitions first, then internal ones, upstream first), in the order written
within each (`memory_committed`): the same list however the threads ran.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from laminar_kafka import faults
from laminar_kafka.api.pipeline import Pipeline, SinkSpec
from laminar_kafka.errors import ConfigError, LaminarError
from laminar_kafka.faults import FaultPoint, ThreadCrash
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.plan.tasks import stage_parallelism
from laminar_kafka.runtime.driver.events import RuntimeEvent
from laminar_kafka.runtime.task.event_clock import wall_ms
from laminar_kafka.sinks.file_reader import read_published, staged_epochs
from laminar_kafka.testing.memory_committed import TracedBroker, engine_parallelism, listed
from laminar_kafka.testing.memory_crashes import check_crash
from laminar_kafka.testing.memory_engine import EngineSession, kit_config, scratch
from laminar_kafka.testing.memory_inputs import encode_inputs
from laminar_kafka.testing.memory_log import DeadLetterRecord, OutputRecord, Raw
from laminar_kafka.testing.memory_threads import VirtualClock
from laminar_kafka.testing.memory_topics import late_formats, partition_counts, read_order
from laminar_kafka.testing.retarget import retarget

__all__ = ["DeadLetterRecord", "OutputRecord", "PipelineTester", "Raw"]


def _close(session: EngineSession, home: Path) -> None:
    session.close()
    shutil.rmtree(home, ignore_errors=True)


class PipelineTester:
    """Feeds a pipeline step by step on the engine, with checkpoints and crashes.

    `send` appends records to the source partitions, and the tasks read them at
    once; `checkpoint` checkpoints until a committed checkpoint holds everything
    sent, every stage's share; `crash` kills the run (what is not committed is
    lost) and starts it again from the last checkpoint; `redeploy` does the same
    with a new version of the pipeline. `close` (or the end of a `with` block, or
    of the tester) stops the engine's threads. `state_store`, `full_snapshot_every`: a run's.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        partitions: int | Mapping[str, int] = 1,
        *,
        batch_size: int = 1,
        dead_letter_topic: str | None = None,
        state_store: str = "memory",
        full_snapshot_every: int = 1,
    ) -> None:
        pipeline.validate()
        if batch_size < 1:
            raise ConfigError(f"batch size must be positive, not {batch_size}")
        self._home = Path(tempfile.mkdtemp(prefix="laminar-tester-", dir=scratch()))
        state = {"state_store": state_store, "full_snapshot_every": full_snapshot_every}
        self._base = kit_config(self._home, batch_size, dead_letter_topic, **state)
        self.dead_letter_topic = self._base.dead_letters_to(pipeline.name)
        self._clock = VirtualClock(wall_ms())  # moved on by advance_clock only
        self._broker = TracedBroker(self._clock)
        self._session = EngineSession(self._broker, self._clock, timeout_s=30.0)
        self._closer = weakref.finalize(self, _close, self._session, self._home)
        self._sinks: dict[str, SinkSpec] = {}
        self._files: dict[str, str] = {}  # a file sink's directory → the tester's own
        self._rank: dict[PartitionKey, tuple[int, int]] = {}
        self._sent_ms = 0  # the Kafka timestamp of the next record sent without one
        self._crashes: list[ThreadCrash] = []
        self.fired = 0
        """How many of the crashes armed with `crash(at=...)` fired."""
        try:
            self._deploy(pipeline, partition_counts(pipeline, partitions))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the engine's threads and delete the tester's files."""
        self._closer()

    def __enter__(self) -> PipelineTester:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _deploy(self, pipeline: Pipeline, counts: Mapping[str, int]) -> None:
        """Run `pipeline` from the last checkpoint; topics seen before keep their input."""
        for topic, n in counts.items():
            self._broker.create(topic, n)  # a topic that exists keeps its partitions
        for topic in (*pipeline.sink_topics, self.dead_letter_topic):
            self._broker.create(topic, 1)  # one partition: output listed as written
        files = dict(self._files)  # a file sink writes into a directory of the tester's
        for sink in pipeline.file_sinks:
            files.setdefault(sink.url, str(self._home / f"files-{len(files)}"))
        run_as = retarget(pipeline, pipeline.name, files) if files else pipeline
        read = {t: self._broker.partitions(t) for t in read_order(run_as)}
        config = replace(self._base, parallelism=engine_parallelism(run_as, read))
        self._session.start(run_as, config)
        self.pipeline, self._run_as, self._config = pipeline, run_as, config
        self._files.update(files)
        for key in [(t, p) for t, n in read.items() for p in range(n)]:
            self._rank.setdefault(key, (int(key[0] in pipeline.internal_topics), len(self._rank)))
        # Sinks of earlier versions stay readable: their committed output is still there.
        sinks = [f.sink for f in reversed(pipeline.flows) if not f.sink.internal]
        self._sinks.update({sink.topic: sink for sink in sinks})
        # Late records are source records as they were read: decoded with the source's format.
        self._sinks.update({t: SinkSpec(t, fmt) for t, fmt in late_formats(pipeline).items()})

    # -- input ------------------------------------------------------------
    def send(
        self,
        topic: str,
        values: Iterable[Any],
        keys: Iterable[Any] | None = None,
        timestamps: Iterable[int] | None = None,
        headers: Iterable[Iterable[tuple[str, bytes | None]]] | None = None,
    ) -> None:
        """Append records to `topic` (encoded with its source format; `Raw` as is); returns
        once the tasks have read them.

        Without `keys`, a record of a source declared `partitioned_by` goes to the
        partition its key maps to (what a producer keyed by that field does), else
        to partition 0; with `keys`, to the partition Kafka's producer picks for
        that key. A table's records need `keys` (value None: a tombstone). Records
        sent without `timestamps` are stamped 0, 1, 2... in the order sent.
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
        count = self._broker.partitions(topic)
        encoded = encode_inputs(self.pipeline, topic, count, items, key_list)
        ends: dict[PartitionKey, int] = {}
        with self._broker.changed:  # read whole or not at all: batches never span two sends
            for i, (data, raw_key, partition) in enumerate(encoded):
                at = stamps[i] if stamps is not None else self._sent_ms
                key = (topic, partition)
                ends[key] = 1 + self._broker.append(key, data, raw_key, heads[i], at)
                self._sent_ms += 1
        self._session.read_to(ends)

    def advance_clock(self, seconds: float) -> None:
        """Checkpoint what was sent (a replay still to run is input, not idleness), then let
        `seconds` of wall-clock time pass: state TTLs run out, and partitions without
        records for their source's idle_timeout release their windows (committed by
        the next checkpoint)."""
        self._session.settle(self._run_as)
        self._clock.ms += round(seconds * 1000)
        self._session.go_round()

    # -- checkpoints and crashes ------------------------------------------
    def checkpoint(self) -> int:
        """Checkpoint until every record sent is in a committed checkpoint, every stage's
        share; returns the id of that checkpoint.

        A crash armed with `crash(at=...)` fires in it, and the engine recovers before
        it commits; `LaminarError` if the crash point was not reached.
        """
        crashes, self._crashes = self._crashes, []
        with faults.kill_threads(*crashes) as fired:
            if crashes:
                self._session.go_round()  # between two steps: where MID_EPOCH is met
            n = self._session.settle(self._run_as)
            count = fired()
        folders = [self._files[s.url] for s in self.pipeline.file_sinks]
        # A task publishes its files once its Kafka transaction committed: wait for them.
        self._session.wait(lambda: not any(map(staged_epochs, folders)), "files published")
        self.fired += count
        if count < len(crashes):
            points = ", ".join(c.point.value for c in crashes)
            raise LaminarError(f"armed crash points not all reached in checkpoint {n}: {points}")
        return n

    def crash(self, at: FaultPoint | str | None = None, task: int | None = None) -> None:
        """Without `at`: kill the run now, and start it again from the last checkpoint
        (output, state and read positions since then are lost; the input is not).

        With `at` (a `FaultPoint` or its name): arm that crash point of the runtime for the
        next checkpoint. The thread that reaches it first dies there (in task `task`
        only, if given; a driver's point kills the driver); the engine recovers from it
        as in a deployment, and the checkpoint completes after the recovery.
        """
        if at is None:
            if task is not None:
                raise ConfigError("crash(task=...) needs a crash point: crash(at=..., task=...)")
            self._session.stop()
            self._session.start(self._run_as, self._config)
            return
        plan = plan_stages(self._run_as)
        counts = {t: self._broker.partitions(t) for t in read_order(self._run_as)}
        tasks = sum(stage_parallelism(plan, counts, self._config.parallelism))
        next_id = max(self._session.committed, default=0) + 1
        self._crashes.append(check_crash(self._run_as, at, task, tasks, next_id))

    def redeploy(self, pipeline: Pipeline, partitions: int | Mapping[str, int] = 1) -> None:
        """Crash, then restart from the last checkpoint with `pipeline`, a new version.

        As a restart of the runner with changed code: the runtime checks the change
        against the checkpoint's topology (`CheckpointError` when a step with state is
        gone or changed, and the tester runs on with the old version), each stateful
        step gets its state back by name, and input resumes at the checkpoint's
        offsets (a new source topic from its start). Topics keep their partition
        count; `partitions` sizes new ones.
        """
        pipeline.validate()
        if pipeline.name != self.pipeline.name:
            raise ConfigError(
                f"redeploy needs the same pipeline name ({self.pipeline.name!r}, not "
                f"{pipeline.name!r}): the name keys the checkpoints"
            )
        if not isinstance(partitions, int):
            partitions = {t: n for t, n in partitions.items() if not self._broker.partitions(t)}
        counts = partition_counts(pipeline, partitions)
        counts.update({t: n for t in counts if (n := self._broker.partitions(t))})
        self._session.stop()
        try:
            self._deploy(pipeline, counts)
        except LaminarError:
            self._session.start(self._run_as, self._config)  # the old version runs on
            raise

    # -- output -----------------------------------------------------------
    @property
    def events(self) -> tuple[RuntimeEvent, ...]:
        """What the runtime reported so far (`runtime/driver/events.py`): generations started,
        checkpoints committed with each stage's counts, workers lost."""
        return tuple(self._session.events)

    def output(self, topic: str) -> list[Any]:
        """The committed output of a sink topic, decoded (dead letters: `DeadLetterRecord`s;
        a file sink's directory: its published rows, epoch by epoch)."""
        if topic == self.dead_letter_topic:
            return list(self.dead_letters())
        if topic in self._files:
            return read_published(self._files[topic])
        return [r.value for r in self.output_records(topic)]

    def output_records(self, topic: str) -> list[OutputRecord]:
        """The committed records of a sink topic with their keys, headers and timestamps."""
        sink = self._sinks.get(topic)
        if sink is None or sink.files is not None:
            raise ConfigError(f"pipeline {self.pipeline.name!r} does not write topic {topic!r}")
        keys = sink.key_format if sink.key is not None else None
        return [
            OutputRecord.decoded(r, sink.value_format, keys)
            for r in listed(self._broker, topic, self._rank)
        ]

    def dead_letters(self) -> list[DeadLetterRecord]:
        """The committed records of the dead-letter topic."""
        return [
            DeadLetterRecord.from_record(r)
            for r in listed(self._broker, self.dead_letter_topic, self._rank)
        ]

    def outputs(self) -> dict[str, list[Any]]:
        """Every sink topic's committed output, and the dead letters if there are any."""
        out = {topic: self.output(topic) for topic in self.pipeline.outputs}
        letters = self.dead_letters()
        if letters:
            out[self.dead_letter_topic] = letters
        return out
