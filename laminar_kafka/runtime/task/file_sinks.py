"""What a task writes through (its Kafka transaction and file sinks), and the recovery
of the files that tasks of earlier generations left staged."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.checkpoint.committed_markers import read_markers
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey, transactional_id
from laminar_kafka.plan.stages import Stage
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.sinks.file_layout import FileSinkLayout
from laminar_kafka.sinks.file_recovery import Committed, resolve_staged
from laminar_kafka.sinks.file_transaction import FileSinkWriter, FileTransaction
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction
from laminar_kafka.sinks.task_sinks import TaskSinks
from laminar_kafka.storage.locations import store_path

log = logging.getLogger(__name__)

Markers = Callable[[Sequence[PartitionKey]], Mapping[PartitionKey, OffsetMarker | None]]
"""Reads the offset markers committed now for some partitions."""


def task_sinks(spec: TaskSpec) -> TaskSinks:
    """The task's transactional producer (`<pipeline>-task-<t>`) and its file sinks."""
    cfg, name, limits = spec.config, spec.pipeline.name, spec.max_record_bytes
    batch_bytes = min(limits.values()) if limits else None
    timeout_ms = cfg.effective_transaction_timeout_ms
    kafka = KafkaTransaction(cfg.kafka, transactional_id(name, spec.task), timeout_ms, batch_bytes)
    files = file_transaction(spec.stage, name, spec.task, spec.generation)
    return TaskSinks(kafka, files, spec.task)


def file_transaction(
    stage: Stage, pipeline: str, task: int, generation: int
) -> FileTransaction | None:
    """The file sinks of the flows `stage` runs, for one task; None if it writes no files."""
    writers = {
        flow.sink.url: FileSinkWriter(flow.sink.url, flow.sink.files, pipeline, task)
        for flow in stage.flows
        if flow.sink.files is not None
    }
    return FileTransaction(writers, generation) if writers else None


def recover_staged_files(pipeline: Pipeline, kafka: KafkaConnection, tasks: Iterable[int]) -> None:
    """`publish_staged` with the markers committed in Kafka (the driver's call)."""
    publish_staged(pipeline, partial(read_markers, kafka, pipeline.name), tasks)


def publish_staged(pipeline: Pipeline, markers: Markers, tasks: Iterable[int]) -> None:
    """Publish or delete what tasks `tasks` of earlier generations left staged.

    Call after those tasks' transactional ids were fenced (see sinks/file_recovery.py);
    `markers` reads the markers committed now.
    """
    tasks = list(tasks)
    if not tasks or not pipeline.file_sinks:
        return

    def committed(partitions: Sequence[PartitionKey]) -> dict[PartitionKey, Committed | None]:
        found = markers(partitions)
        return {
            k: (m.checkpoint_id, m.generation) if m is not None else None for k, m in found.items()
        }

    for sink in pipeline.file_sinks:
        assert sink.files is not None
        root = store_path(sink.url, "file sink directory", CheckpointError)
        layout = FileSinkLayout(root, pipeline.name, sink.files.extension)
        published, deleted = resolve_staged(layout, tasks, committed)
        if published or deleted:
            log.info(
                "file sink %s: published %d staged epochs of dead tasks, deleted %d undecided",
                sink.url,
                published,
                deleted,
            )
