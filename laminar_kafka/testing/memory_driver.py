"""The driver's ports on a `MemoryBroker`: a run's driver side on the in-memory transport.

Each class implements a port of `runtime/driver/ports.py` the way the Kafka one
behaves, as far as the runner and the coordinator rely on it. The lease is
simpler: whoever holds the checkpoint store's lock (one process) holds it.
Like the Kafka injector, a barrier skips the source partitions that received
nothing since the previous one, so the tasks meet `Announcement.skipped` as
they do on Kafka. Nothing is ever deleted from memory, so the internal topics
need no purge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import TopicPartition

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.barriers.injection import Injection
from laminar_kafka.checkpoint.committed_markers import CommittedMarkers
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, control_headers
from laminar_kafka.control.records import Ack, Barrier, Heartbeat
from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.names import PartitionKey, consumer_group, transactional_id
from laminar_kafka.plan.stages import InternalTopic, StagePlan
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.topics import PreparedTopics
from laminar_kafka.runtime.task.file_sinks import publish_staged
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryControl, MemorySourceLogs
from laminar_kafka.testing.memory_transaction import MemoryTransaction

MAX_RECORD_BYTES = 1_048_588
"""What a Kafka topic accepts by default (`max.message.bytes`)."""


class MemoryLease:
    """The driver lease of a run in one process: never lost (the store's lock is the guard)."""

    regained = 0
    stalls = 0

    def check(self) -> None:
        pass

    def release(self) -> None:
        pass


class MemoryInjector:
    """Writes each barrier into the source partitions that moved since the last one
    (before the first, since the injector started), as `BarrierInjector` does."""

    def __init__(self, broker: MemoryBroker, partitions: Sequence[PartitionKey]) -> None:
        self._broker = broker
        self.partitions = tuple(partitions)
        self._seen_end = {k: broker.bounds(k)[1] for k in self.partitions}

    def inject(self, barrier: Barrier, timeout_s: float) -> Injection:
        value, headers = encode(barrier), control_headers(barrier)
        offsets: dict[PartitionKey, int] = {}
        for key in self.partitions:
            if self._broker.bounds(key)[1] != self._seen_end[key]:
                offsets[key] = self._broker.append(key, value, CONTROL_KEY, headers)
                self._seen_end[key] = offsets[key] + 1
        return Injection.landed(self.partitions, offsets)

    def close(self) -> None:
        pass


class MemoryOffsets:
    """A group's committed offsets (the `OffsetsReader` of `CommittedMarkers`)."""

    def __init__(self, broker: MemoryBroker, pipeline: str) -> None:
        self._broker = broker
        self._group = consumer_group(pipeline)

    def committed(
        self, partitions: list[TopicPartition], timeout: float = 0.0
    ) -> list[TopicPartition]:
        return self._broker.committed(self._group, [(tp.topic, tp.partition) for tp in partitions])

    def close(self) -> None:
        pass


class NoPurge:
    """Internal topics in memory are neither purged nor truncated (the `Purge` port)."""

    def check(self) -> None:
        pass

    def after(self, checkpoint_id: int) -> None:
        pass


class MemoryDriverPorts:
    """The driver's ports of one pipeline's run on `broker` (`runtime/driver/ports.py`)."""

    def __init__(self, broker: MemoryBroker, config: RuntimeConfig) -> None:
        self._broker = broker
        self._config = config

    def preflight(self, pipeline: Pipeline, plan: StagePlan) -> None:
        pass

    def hold_lease(self, pipeline: str) -> MemoryLease:
        self._broker.create(self._config.control_topic(pipeline), 1)
        return MemoryLease()

    def prepare_topics(self, pipeline: Pipeline, plan: StagePlan) -> PreparedTopics:
        broker, cfg = self._broker, self._config
        counts = {t: broker.partitions(t) for t in pipeline.source_topics}
        missing = sorted(t for t, n in counts.items() if not n)
        if missing:
            raise ConfigError(f"source topics {missing} do not exist: create them in the broker")
        for topic in pipeline.sink_topics:
            broker.create(topic, max(counts.values()))
        broker.create(cfg.dead_letters_to(pipeline.name), 1)
        for name, internal in plan.internal.items():
            have = broker.partitions(name)
            broker.create(name, have or internal.wanted(counts) or cfg.parallelism)
            counts[name] = broker.partitions(name)
        written = [*pipeline.sink_topics, cfg.dead_letters_to(pipeline.name), *plan.internal]
        return PreparedTopics(counts, dict.fromkeys(written, MAX_RECORD_BYTES))

    def check_internal_topics(
        self, pipeline: str, plan: StagePlan, counts: Mapping[str, int]
    ) -> None:
        pass

    def markers(
        self,
        pipeline: str,
        partitions: Sequence[PartitionKey],
        store: CheckpointStore | None = None,
    ) -> CommittedMarkers:
        reader = MemoryOffsets(self._broker, pipeline)
        return CommittedMarkers(self._config.kafka, pipeline, partitions, store, reader)

    def forget_offsets(self, pipeline: str, partitions: list[PartitionKey]) -> None:
        self._broker.forget(consumer_group(pipeline), partitions)

    def stable_bounds(
        self, keys: Sequence[PartitionKey], timeout_s: float = 30.0
    ) -> dict[PartitionKey, tuple[int, int]]:
        return {key: self._broker.stable_bounds(key) for key in keys}

    def control_end(self, pipeline: str) -> int:
        return self._broker.bounds((self._config.control_topic(pipeline), 0))[1]

    def watch_control(self, pipeline: str) -> MemoryControl:
        start = self.control_end(pipeline)
        topic = self._config.control_topic(pipeline)
        return MemoryControl(self._broker, topic, pipeline, start, Ack, Heartbeat)

    def injector(self, sources: Sequence[PartitionKey]) -> MemoryInjector:
        return MemoryInjector(self._broker, sources)

    def purge(
        self,
        markers: CommittedMarkers,
        internal: Mapping[str, InternalTopic],
        counts: Mapping[str, int],
    ) -> NoPurge:
        return NoPurge()

    def fence_removed(self, pipeline: str, tasks: int, widest: int) -> None:
        for task in range(tasks, widest):
            MemoryTransaction(self._broker, transactional_id(pipeline, task)).init()

    def recover_staged_files(self, pipeline: Pipeline, tasks: Iterable[int]) -> None:
        publish_staged(pipeline, MemorySourceLogs(self._broker, pipeline.name).markers, tasks)
