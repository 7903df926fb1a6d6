"""A worker task's ports on a `MemoryBroker`: the in-memory transport.

Each class implements a port of `runtime/task/ports.py` (or the sinks' producer) the
way the Kafka one behaves, as far as the task relies on it; the contract tests
(tests/testing/test_transport_contract.py) hold both to the same assertions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import TopicPartition

from laminar_kafka import waits
from laminar_kafka.checkpoint.markers import OffsetMarker, parse_marker
from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, control_headers
from laminar_kafka.control.records import Announcement, ControlRecord, Heartbeat
from laminar_kafka.control.transport import WantedRecords
from laminar_kafka.kafka.names import PartitionKey, consumer_group, transactional_id
from laminar_kafka.runtime.task.file_sinks import file_transaction
from laminar_kafka.runtime.task.internal_reading import messages_per_poll
from laminar_kafka.runtime.task.ports import TaskPorts
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.sinks.task_sinks import TaskSinks
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_log import MemoryMessage
from laminar_kafka.testing.memory_transaction import MemoryTransaction


class MemoryReader:
    """A read_committed reader of assigned partitions (the `SourceReader` port)."""

    def __init__(self, broker: MemoryBroker, pipeline: str, batch_size: int) -> None:
        self._broker = broker
        self._group = consumer_group(pipeline)
        self._batch_size = batch_size
        self._next: dict[PartitionKey, int] = {}
        self._paused: set[PartitionKey] = set()
        self._reached: dict[PartitionKey, int] = {}
        self._turn = 0

    @property
    def group_metadata(self) -> Any:
        return self._group

    def committed(
        self, partitions: Iterable[PartitionKey], timeout_s: float
    ) -> list[TopicPartition]:
        return self._broker.committed(self._group, partitions)

    def assign(self, start: Mapping[PartitionKey, int | str]) -> None:
        """Read exactly these partitions, from an offset or 'earliest' / 'latest'."""
        found = {}
        for key, where in start.items():
            low, high = self._broker.bounds(key)
            found[key] = low if where == "earliest" else high if where == "latest" else int(where)
        self._next = found
        self._reached = {}
        self._paused &= found.keys()  # as librdkafka: a pause outlives a new assignment

    def poll(self, timeout_s: float) -> list[MemoryMessage]:
        """Up to a batch of committed records, waiting up to `timeout_s` for the first.

        Like a consumer's poll it may return nothing early: here at the broker's first
        change, so that a task waiting for input sees a control record at once.
        """
        with self._broker.changed:
            out = self._read()
            if out or timeout_s <= 0:
                return out
            self._broker.changed.wait(timeout_s)
            return self._read()

    def _read(self) -> list[MemoryMessage]:
        keys = [k for k in self._next if k not in self._paused]
        if not keys:
            return []
        self._turn = (self._turn + 1) % len(keys)  # no partition starves the others
        out: list[MemoryMessage] = []
        for key in keys[self._turn :] + keys[: self._turn]:
            room = self._batch_size - len(out)
            if room <= 0:
                break
            records, self._next[key] = self._broker.read_committed(key, self._next[key], room)
            out.extend(records)
            if len(records) < room:  # the last stable offset: as librdkafka's EOF event
                self._reached[key] = self._next[key]
        return out

    def position(self, key: PartitionKey) -> int | None:
        return self._next.get(key)

    def end_reached(self, key: PartitionKey) -> int | None:
        return self._reached.get(key)

    def pause(self, key: PartitionKey) -> None:
        self._paused.add(key)

    def continue_at(self, positions: Mapping[PartitionKey, int]) -> None:
        self._next.update(positions)
        for key in positions:
            self._reached.pop(key, None)
        self._paused -= positions.keys()

    def reposition(self, positions: Mapping[PartitionKey, int]) -> None:
        self._paused -= positions.keys()
        self.assign(dict(positions))

    def close(self) -> None:
        self._next = {}


class MemoryControl:
    """The pipeline's control log (the `ControlLink` port), on partition 0 of `topic`."""

    arrival_s = 0.0
    """A written record is readable at once."""

    def __init__(
        self,
        broker: MemoryBroker,
        topic: str,
        pipeline: str,
        start_offset: int,
        *reads: type[ControlRecord],
    ) -> None:
        self._broker, self.topic = broker, topic
        self._key = (topic, 0)
        self._next = start_offset
        self.wanted = WantedRecords(pipeline, reads)

    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None:
        self._broker.append(self._key, encode(record), CONTROL_KEY, control_headers(record))

    def receive(self, timeout_s: float) -> list[Any]:
        deadline = waits.monotonic() + timeout_s
        with self._broker.changed:
            while True:
                found = self.catch_up()
                remaining = deadline - waits.monotonic()
                if found or remaining <= 0:
                    return found
                self._broker.changed.wait(remaining)

    def reachable(self, timeout_s: float) -> bool:
        return True  # memory is never away

    def catch_up(self, timeout_s: float = 30.0) -> list[Any]:
        _, end = self._broker.bounds(self._key)
        messages, self._next = self._broker.read_committed(self._key, self._next, end)
        return self.wanted.select(messages)

    def close(self) -> None:
        pass


class MemoryBeats:
    """Heartbeats on the control log (the `BeatSender` port)."""

    def __init__(self, broker: MemoryBroker, topic: str) -> None:
        self._broker = broker
        self._key = (topic, 0)

    def send(self, beat: Heartbeat) -> None:
        self._broker.append(self._key, encode(beat), CONTROL_KEY, control_headers(beat))

    def close(self) -> None:
        pass


class MemorySourceLogs:
    """Offsets and committed markers of the source logs (the `SourceLogs` port)."""

    def __init__(self, broker: MemoryBroker, pipeline: str) -> None:
        self._broker = broker
        self._group = consumer_group(pipeline)

    def bounds(
        self, keys: Sequence[PartitionKey], timeout_s: float
    ) -> dict[PartitionKey, tuple[int, int]]:
        return {key: self._broker.bounds(key) for key in keys}

    def offsets_for_time(
        self, keys: Sequence[PartitionKey], ms: int, timeout_s: float
    ) -> dict[PartitionKey, int | None]:
        return {key: self._broker.offset_for_time(key, ms) for key in keys}

    def markers(self, keys: Sequence[PartitionKey]) -> Mapping[PartitionKey, OffsetMarker | None]:
        return {
            (tp.topic, tp.partition): parse_marker(tp.metadata) if tp.offset >= 0 else None
            for tp in self._broker.committed(self._group, keys)
        }


def memory_ports(spec: TaskSpec, broker: MemoryBroker) -> TaskPorts:
    """The ports of the task `spec` describes on `broker` (`kafka_ports`' in-memory twin);
    the checkpoint store and file sinks stay where the config puts them."""
    cfg, name = spec.config, spec.pipeline.name
    control = cfg.control_topic(name)
    files = file_transaction(spec.stage, name, spec.task, spec.generation)
    producer = MemoryTransaction(broker, transactional_id(name, spec.task))
    return TaskPorts(
        reader=MemoryReader(broker, name, messages_per_poll(spec.stage, cfg.batch_size)),
        control=MemoryControl(broker, control, name, spec.control_start_offset, Announcement),
        sinks=TaskSinks(producer, files, spec.task),
        store=cfg.checkpoint_store(name),
        logs=MemorySourceLogs(broker, name),
        beats=MemoryBeats(broker, control),
    )
