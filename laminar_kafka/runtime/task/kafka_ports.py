"""A worker task's ports on Kafka and the checkpoint store: what a Spark worker runs with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from confluent_kafka import KafkaException, TopicPartition

from laminar_kafka import waits
from laminar_kafka.checkpoint.committed_markers import read_markers
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.control.records import Announcement
from laminar_kafka.control.transport import ControlChannel
from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.admin import watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.file_sinks import task_sinks
from laminar_kafka.runtime.task.heartbeat import ControlTopicBeats
from laminar_kafka.runtime.task.internal_reading import messages_per_poll
from laminar_kafka.runtime.task.ports import TaskPorts
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.sources.kafka_reader import PartitionReader


class KafkaSourceLogs:
    """The source partitions' offsets and the group's markers, each read by a client of
    its own that lives for the one call (recovery asks once per task start)."""

    def __init__(self, kafka: KafkaConnection, pipeline: str) -> None:
        self._kafka = kafka
        self._pipeline = pipeline

    def bounds(
        self, keys: Sequence[PartitionKey], timeout_s: float
    ) -> dict[PartitionKey, tuple[int, int]]:
        probe = probe_consumer(self._kafka)
        try:
            return {(t, p): watermark_offsets(probe, t, p, timeout_s) for t, p in keys}
        finally:
            probe.close()

    def offsets_for_time(
        self, keys: Sequence[PartitionKey], ms: int, timeout_s: float
    ) -> dict[PartitionKey, int | None]:
        probe = probe_consumer(self._kafka)
        try:
            found = probe.offsets_for_times(
                [TopicPartition(t, p, ms) for t, p in keys], timeout=timeout_s
            )
        except KafkaException as exc:
            raise LaminarError(f"cannot find the offsets at {ms} ms: {exc}") from None
        finally:
            probe.close()
        return {(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None) for tp in found}

    def markers(self, keys: Sequence[PartitionKey]) -> Mapping[PartitionKey, OffsetMarker | None]:
        return read_markers(self._kafka, self._pipeline, keys)


def kafka_ports(spec: TaskSpec) -> TaskPorts:
    """The ports of the task `spec` describes: its transactional producer
    (`<pipeline>-task-<t>`) and file sinks, a read_committed reader, the control topic
    from the generation's start offset, heartbeats on the control topic."""
    cfg, name = spec.config, spec.pipeline.name
    store = cfg.checkpoint_store(name)
    sinks = task_sinks(spec)
    per_poll = messages_per_poll(spec.stage, cfg.batch_size)
    reader = PartitionReader(cfg.kafka, name, per_poll, report_ends=bool(spec.ends))
    control = ControlChannel(
        cfg.kafka, cfg.control_topic(name), name, spec.control_start_offset, Announcement
    )
    # A beat older than the timeout tells the driver nothing: it is dropped.
    beats = ControlTopicBeats(cfg.kafka, cfg.control_topic(name), cfg.heartbeat_timeout_s)
    logs = KafkaSourceLogs(cfg.kafka, name)
    return TaskPorts(reader, control, sinks, store, logs, beats, waits.monotonic)
