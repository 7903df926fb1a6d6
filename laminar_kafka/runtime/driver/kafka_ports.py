"""The driver's ports on Kafka: what a run on Spark (or any Kafka run) uses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.barriers.injector import BarrierInjector
from laminar_kafka.checkpoint.committed_markers import CommittedMarkers
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import Ack, Heartbeat
from laminar_kafka.control.transport import ControlChannel
from laminar_kafka.kafka.acl_needs import Need
from laminar_kafka.kafka.admin import delete_committed_offsets, end_offset
from laminar_kafka.kafka.group_lease import GroupLease
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.kafka.stable_offsets import stable_bounds
from laminar_kafka.plan.stages import InternalTopic, StagePlan
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.fencing import fence_removed_tasks
from laminar_kafka.runtime.driver.internal_purge import InternalPurge, check_internal_topics
from laminar_kafka.runtime.driver.lease import hold_driver_lease
from laminar_kafka.runtime.driver.permissions import (
    check_created_topics,
    check_permissions,
    needs_of,
)
from laminar_kafka.runtime.driver.preflight import check_brokers_answer, check_transaction_timeout
from laminar_kafka.runtime.driver.topics import PreparedTopics, prepare_topics
from laminar_kafka.runtime.task.file_sinks import recover_staged_files


class KafkaDriverPorts:
    """Each port by the Kafka client that does it (`runtime/driver/ports.py`)."""

    def __init__(self, config: RuntimeConfig) -> None:
        self._config = config
        self._needs: tuple[Need, ...] = ()
        self._created: list[str] = []  # topics whose permissions are checked once they exist

    def preflight(self, pipeline: Pipeline, plan: StagePlan) -> None:
        check_brokers_answer(self._config.kafka)
        check_transaction_timeout(self._config)
        self._needs = needs_of(self._config, pipeline, plan)
        self._created = check_permissions(self._config, pipeline.name, self._needs)

    def hold_lease(self, pipeline: str) -> GroupLease:
        return hold_driver_lease(self._config, pipeline)

    def prepare_topics(self, pipeline: Pipeline, plan: StagePlan) -> PreparedTopics:
        topics = prepare_topics(self._config, pipeline, plan)
        check_created_topics(self._config, self._needs, self._created)
        return topics

    def check_internal_topics(
        self, pipeline: str, plan: StagePlan, counts: Mapping[str, int]
    ) -> None:
        check_internal_topics(self._config, pipeline, plan, counts)

    def markers(
        self,
        pipeline: str,
        partitions: Sequence[PartitionKey],
        store: CheckpointStore | None = None,
    ) -> CommittedMarkers:
        return CommittedMarkers(self._config.kafka, pipeline, partitions, store)

    def forget_offsets(self, pipeline: str, partitions: list[PartitionKey]) -> None:
        delete_committed_offsets(self._config.kafka, pipeline, partitions)

    def stable_bounds(
        self, keys: Sequence[PartitionKey], timeout_s: float = 30.0
    ) -> dict[PartitionKey, tuple[int, int]]:
        return stable_bounds(self._config.kafka, keys, timeout_s)

    def control_end(self, pipeline: str) -> int:
        return end_offset(self._config.kafka, self._config.control_topic(pipeline))

    def watch_control(self, pipeline: str) -> ControlChannel:
        topic = self._config.control_topic(pipeline)
        start = end_offset(self._config.kafka, topic)
        return ControlChannel(self._config.kafka, topic, pipeline, start, Ack, Heartbeat)

    def injector(self, sources: Sequence[PartitionKey]) -> BarrierInjector:
        cfg = self._config
        return BarrierInjector(
            cfg.kafka, sources, max_barrier_partitions=cfg.max_barrier_partitions
        )

    def purge(
        self,
        markers: CommittedMarkers,
        internal: Mapping[str, InternalTopic],
        counts: Mapping[str, int],
    ) -> InternalPurge:
        return InternalPurge(self._config.kafka, markers, internal, counts)

    def fence_removed(self, pipeline: str, tasks: int, widest: int) -> None:
        fence_removed_tasks(self._config, pipeline, tasks, widest)

    def recover_staged_files(self, pipeline: Pipeline, tasks: Iterable[int]) -> None:
        recover_staged_files(pipeline, self._config.kafka, tasks)
