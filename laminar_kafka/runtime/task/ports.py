"""What a worker task reads, writes and asks, as ports: the task loop never builds them.

A task is given a `TaskPorts` (its reader, control link, sinks, checkpoint store,
the source logs recovery asks about, where its heartbeats go, and its clock) and
runs the same protocol code whatever carries them: Kafka in a Spark worker
(`runtime/task/kafka_ports.py`), or logs in memory. Each part is a Protocol, so the
Kafka implementations are checked against it by mypy, not by inheritance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import TopicPartition

from laminar_kafka import waits
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import ControlRecord
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.event_clock import Clock as WallClock
from laminar_kafka.runtime.task.event_clock import wall_ms
from laminar_kafka.runtime.task.heartbeat import BeatSender, Clock
from laminar_kafka.sinks.task_sinks import TaskSinks
from laminar_kafka.sources.kafka_reader import KafkaMessage


class SourceReader(Protocol):
    """A read_committed reader of the partitions a task is assigned (`PartitionReader`).

    The messages it returns have the methods of confluent-kafka's `Message` that
    the task calls: topic(), partition(), offset(), key(), value(), headers(),
    timestamp().
    """

    @property
    def group_metadata(self) -> Any:
        """What a transaction needs to commit offsets for the pipeline's group."""
        ...

    def committed(
        self, partitions: Iterable[PartitionKey], timeout_s: float
    ) -> list[TopicPartition]:
        """The offsets and metadata (markers) last committed for these partitions."""
        ...

    def assign(self, start: Mapping[PartitionKey, int]) -> None:
        """Read exactly these partitions, each from its offset."""
        ...

    def poll(self, timeout_s: float) -> list[KafkaMessage]:
        """Up to one batch of committed records, in offset order per partition."""
        ...

    def position(self, key: PartitionKey) -> int | None:
        """The offset `key` is read from next, past the transaction markers and aborted
        records before it (a task's position passes records only); None before a fetch."""
        ...

    def end_reached(self, key: PartitionKey) -> int | None:
        """The log end offset the reader reached in `key` since `key` was last
        positioned (every committed record below it returned); None: not reached."""
        ...

    def pause(self, key: PartitionKey) -> None:
        """Return nothing more of `key` until it is continued or repositioned."""
        ...

    def continue_at(self, positions: Mapping[PartitionKey, int]) -> None:
        """Seek these (assigned) partitions to their offsets and resume them."""
        ...

    def reposition(self, positions: Mapping[PartitionKey, int]) -> None:
        """Resume every partition at its offset, dropping whatever was fetched past it."""
        ...

    def close(self) -> None: ...


class ControlLink(Protocol):
    """The pipeline's control log as a task sees it (`ControlChannel`): it sends Acks and
    receives the Announcements of its pipeline."""

    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None:
        """Write `record` and wait until it is durable."""
        ...

    def receive(self, timeout_s: float) -> list[Any]:
        """The records of the wanted kinds that arrived within `timeout_s`."""
        ...

    def catch_up(self, timeout_s: float = 30.0) -> list[Any]:
        """Every wanted record up to the log's current end."""
        ...

    def close(self) -> None: ...


class SourceLogs(Protocol):
    """What recovery asks of the source logs besides the task's reader."""

    def bounds(
        self, keys: Sequence[PartitionKey], timeout_s: float
    ) -> dict[PartitionKey, tuple[int, int]]:
        """Each partition's (low, high) offsets: where a new partition starts."""
        ...

    def offsets_for_time(
        self, keys: Sequence[PartitionKey], ms: int, timeout_s: float
    ) -> dict[PartitionKey, int | None]:
        """Each partition's first offset stamped at or after `ms` (None: no such record)."""
        ...

    def markers(self, keys: Sequence[PartitionKey]) -> Mapping[PartitionKey, OffsetMarker | None]:
        """The markers committed now (open transactions not awaited): which staged
        file epochs were committed (`runtime/task/file_sinks.py`)."""
        ...


@dataclass(frozen=True)
class TaskPorts:
    """Everything a worker task reads from and writes to; the task closes what it can."""

    reader: SourceReader
    control: ControlLink
    sinks: TaskSinks
    store: CheckpointStore
    logs: SourceLogs
    beats: BeatSender
    clock: Clock = waits.monotonic
    """Monotonic seconds: heartbeats, alignment and decision timeouts."""
    wall_clock: WallClock = wall_ms
    """Wall-clock milliseconds: processing time (state TTL, idle partitions, `now_ms`)."""
    idle_check_s: float = 0.2
    """How often the task looks for idle partitions (`EventClock.tick_due`)."""
