"""What the driver reads, writes and asks of the transport, as ports: the runner builds none.

The runner (`runtime/driver/runner.py`) and the coordinator it drives run the same code
whatever carries a run's records: Kafka (`runtime/driver/kafka_ports.py`), or
logs in memory (`testing/memory_driver.py`). Each port says what the run needs,
not how a client does it; the Kafka implementation is checked against it by mypy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.barriers.injection import Injector
from laminar_kafka.checkpoint.committed_markers import CommittedMarkers
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import InternalTopic, StagePlan
from laminar_kafka.runtime.driver.generation_watch import WatchedControl
from laminar_kafka.runtime.driver.lease import Lease
from laminar_kafka.runtime.driver.topics import PreparedTopics


class BarrierWriter(Injector, Protocol):
    """Writes barriers into the source partitions (`BarrierInjector`)."""

    def close(self) -> None: ...


class Purge(Protocol):
    """Care of the internal topics between checkpoints (`InternalPurge`)."""

    def check(self) -> None:
        """Raise CheckpointError when an internal topic was deleted or truncated."""
        ...

    def after(self, checkpoint_id: int) -> None:
        """Delete internal records every next stage committed past."""
        ...


class DriverPorts(Protocol):
    """The driver's side of a transport, for one pipeline's run."""

    def preflight(self, pipeline: Pipeline, plan: StagePlan) -> None:
        """Refuse settings the transport cannot honour and permissions it lacks, before
        anything is touched."""
        ...

    def hold_lease(self, pipeline: str) -> Lease:
        """Take the pipeline's driver lease (creating its control log), or raise."""
        ...

    def prepare_topics(self, pipeline: Pipeline, plan: StagePlan) -> PreparedTopics:
        """Count the sources' partitions; create the sinks, dead letters, internal topics."""
        ...

    def check_internal_topics(
        self, pipeline: str, plan: StagePlan, counts: Mapping[str, int]
    ) -> None:
        """On a reset, empty the internal topics; otherwise check nothing in them was lost."""
        ...

    def markers(
        self,
        pipeline: str,
        partitions: Sequence[PartitionKey],
        store: CheckpointStore | None = None,
    ) -> CommittedMarkers:
        """A reader of the pipeline group's committed offset markers."""
        ...

    def forget_offsets(self, pipeline: str, partitions: list[PartitionKey]) -> None:
        """Delete the pipeline group's committed offsets (a reset)."""
        ...

    def stable_bounds(
        self, keys: Sequence[PartitionKey], timeout_s: float = 30.0
    ) -> dict[PartitionKey, tuple[int, int]]:
        """Each partition's log start and last stable offset (a read_committed reader's end)."""
        ...

    def control_end(self, pipeline: str) -> int:
        """The offset the next record of the control log will get."""
        ...

    def watch_control(self, pipeline: str) -> WatchedControl:
        """The control log, read from its end for Acks and Heartbeats."""
        ...

    def injector(self, sources: Sequence[PartitionKey]) -> BarrierWriter:
        """The writer of this generation's barriers into `sources`."""
        ...

    def purge(
        self,
        markers: CommittedMarkers,
        internal: Mapping[str, InternalTopic],
        counts: Mapping[str, int],
    ) -> Purge: ...

    def fence_removed(self, pipeline: str, tasks: int, widest: int) -> None:
        """Fence the transactional ids of tasks `tasks..widest-1` (a narrower generation)."""
        ...

    def recover_staged_files(self, pipeline: Pipeline, tasks: Iterable[int]) -> None:
        """Publish or delete what tasks `tasks` of earlier generations left staged."""
        ...
