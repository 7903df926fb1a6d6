"""The in-memory transport behaves as Kafka does where the runtime relies on it.

Each test runs the same assertions against the real broker and against a
`MemoryBroker`, through the ports a task is given (runtime/task/ports.py): a
read_committed reader, a transactional producer, the control link.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from laminar_kafka.checkpoint.markers import marker, parse_marker
from laminar_kafka.control.records import Ack, Announcement, Heartbeat, Phase
from laminar_kafka.control.transport import ControlChannel
from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.ports import ControlLink, SourceReader
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction
from laminar_kafka.sinks.producer import TransactionalProducer
from laminar_kafka.sources.kafka_reader import PartitionReader
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryControl, MemoryReader
from laminar_kafka.testing.memory_transaction import MemoryTransaction


class Transport:
    """Topics, readers, producers and control links of one transport; closes them all."""

    def __init__(
        self,
        topic: Callable[[int], str],
        reader: Callable[[str], SourceReader],
        producer: Callable[[str], TransactionalProducer],
        control: Callable[[str, str], ControlLink],
        settle_s: float,
    ) -> None:
        self._topic, self._reader, self._producer, self._control = topic, reader, producer, control
        self.settle_s = settle_s
        """How long a record that could arrive takes to (a negative claim waits this long)."""
        self._open: list[Any] = []

    def topic(self, partitions: int = 1) -> str:
        return self._topic(partitions)

    def reader(self, pipeline: str) -> SourceReader:
        return self._keep(self._reader(pipeline))

    def producer(self, txn_id: str) -> TransactionalProducer:
        return self._keep(self._producer(txn_id))

    def control(self, topic: str, pipeline: str) -> ControlLink:
        return self._keep(self._control(topic, pipeline))

    def _keep(self, part: Any) -> Any:
        self._open.append(part)
        return part

    def close(self) -> None:
        for part in reversed(self._open):
            part.close()


def _kafka(bootstrap: str, topics: TopicFactory) -> Transport:
    kafka = KafkaConnection(bootstrap)
    return Transport(
        lambda n: topics.create("contract", n),
        lambda pipeline: PartitionReader(kafka, pipeline, 100),
        lambda txn_id: KafkaTransaction(kafka, txn_id, 60_000),
        lambda topic, pipeline: ControlChannel(kafka, topic, pipeline, 0, Announcement),
        settle_s=1.5,
    )


def _memory() -> Transport:
    broker = MemoryBroker()

    def topic(partitions: int) -> str:
        name = f"contract-{uuid.uuid4().hex[:12]}"
        broker.create(name, partitions)
        return name

    return Transport(
        topic,
        lambda pipeline: MemoryReader(broker, pipeline, 100),
        lambda txn_id: MemoryTransaction(broker, txn_id),
        lambda topic, pipeline: MemoryControl(broker, topic, pipeline, 0, Announcement),
        settle_s=0.05,
    )


@pytest.fixture(params=[pytest.param("kafka", marks=pytest.mark.integration), "memory"])
def transport(request: pytest.FixtureRequest) -> Iterator[Transport]:
    if request.param == "kafka":
        made = _kafka(
            request.getfixturevalue("kafka_bootstrap"), request.getfixturevalue("topic_factory")
        )
    else:
        made = _memory()
    try:
        yield made
    finally:
        made.close()


def _read(reader: SourceReader, count: int, timeout_s: float = 20.0) -> list[tuple[int, Any]]:
    """(offset, value) of the next `count` records, however many polls they take."""
    found: list[tuple[int, Any]] = []
    deadline = time.monotonic() + timeout_s
    while len(found) < count and time.monotonic() < deadline:
        found.extend((m.offset(), m.value()) for m in reader.poll(0.2))
    return found


def _quiet(reader: SourceReader, for_s: float) -> list[Any]:
    """What the reader returns within `for_s` (a negative claim needs a bound)."""
    found: list[Any] = []
    deadline = time.monotonic() + for_s
    while time.monotonic() < deadline:
        found.extend(m.value() for m in reader.poll(min(for_s, 0.1)))
    return found


def _committed_txn(producer: TransactionalProducer, topic: str, *values: bytes) -> None:
    producer.begin()
    for value in values:
        producer.produce(topic, value, None, None, 0)
    producer.prepare([], None, timeout_s=30)
    producer.commit(timeout_s=30)


def test_a_reader_sees_committed_records_only_and_a_commit_marker_takes_an_offset(
    transport: Transport,
) -> None:
    topic = transport.topic()
    producer = transport.producer(f"contract-{uuid.uuid4().hex[:8]}")
    producer.init(timeout_s=30)
    _committed_txn(producer, topic, b"a", b"b")  # offsets 0, 1; the commit marker 2
    producer.begin()
    producer.produce(topic, b"dropped", None, None, 0)  # 3; the abort marker 4
    producer.prepare([], None, timeout_s=30)
    producer.abort(timeout_s=30)
    _committed_txn(producer, topic, b"c")  # 5; marker 6
    producer.begin()
    producer.produce(topic, b"open", None, None, 0)  # 7, not committed yet
    producer.prepare([], None, timeout_s=30)

    reader = transport.reader("p-" + topic)
    reader.assign({(topic, 0): 0})
    assert _read(reader, 3) == [(0, b"a"), (1, b"b"), (5, b"c")]
    assert (
        _quiet(reader, transport.settle_s) == []
    )  # the open transaction holds everything behind it
    producer.commit(timeout_s=30)
    assert _read(reader, 1) == [(7, b"open")]


def test_a_readers_position_passes_the_markers_and_aborted_records_after_its_last_record(
    transport: Transport,
) -> None:
    # What tells a table's bootstrap that it reached the end taken at its start.
    topic = transport.topic()
    producer = transport.producer(f"contract-{uuid.uuid4().hex[:8]}")
    producer.init(timeout_s=30)
    _committed_txn(producer, topic, b"a", b"b")  # offsets 0, 1; the commit marker 2
    producer.begin()
    producer.produce(topic, b"dropped", None, None, 0)  # 3; the abort marker 4
    producer.prepare([], None, timeout_s=30)
    producer.abort(timeout_s=30)

    reader = transport.reader("p-" + topic)
    reader.assign({(topic, 0): 0})
    assert _read(reader, 2) == [(0, b"a"), (1, b"b")]
    deadline = time.monotonic() + 20
    while reader.position((topic, 0)) != 5 and time.monotonic() < deadline:
        assert reader.poll(0.2) == []
    assert reader.position((topic, 0)) == 5


def test_a_newer_producer_of_the_same_id_fences_the_older_and_aborts_its_transaction(
    transport: Transport,
) -> None:
    topic = transport.topic()
    txn_id = f"contract-{uuid.uuid4().hex[:8]}"
    old = transport.producer(txn_id)
    old.init(timeout_s=30)
    old.begin()
    old.produce(topic, b"zombie", None, None, 0)
    old.serve(0.5)

    new = transport.producer(txn_id)
    new.init(timeout_s=30)  # fences `old`, aborts its open transaction
    _committed_txn(new, topic, b"current")
    with pytest.raises(FencedError):
        old.prepare([], None, timeout_s=30)
        old.commit(timeout_s=30)

    reader = transport.reader("p-" + topic)
    reader.assign({(topic, 0): 0})
    assert [value for _, value in _read(reader, 1)] == [b"current"]
    assert _quiet(reader, transport.settle_s) == []


def test_offsets_commit_with_their_metadata_only_when_their_transaction_commits(
    transport: Transport,
) -> None:
    source, sink = transport.topic(2), transport.topic()
    pipeline = "p-" + source
    reader = transport.reader(pipeline)
    keys: list[PartitionKey] = [(source, 0), (source, 1)]
    assert [tp.offset for tp in reader.committed(keys, 30)] == [-1001, -1001]
    producer = transport.producer(f"contract-{uuid.uuid4().hex[:8]}")
    producer.init(timeout_s=30)

    def checkpoint(n: int, offset: int, commit: bool) -> None:
        producer.begin()
        producer.produce(sink, b"out", None, None, 0)
        offsets = [TopicPartition(source, 0, offset, metadata=marker(n, 1))]
        producer.prepare(offsets, reader.group_metadata, timeout_s=30, checkpoint_id=n)
        if commit:
            producer.commit(timeout_s=30)
        else:
            producer.abort(timeout_s=30)

    checkpoint(1, 17, commit=True)
    checkpoint(2, 25, commit=False)
    found = reader.committed(keys, 30)
    assert [(tp.offset, parse_marker(tp.metadata)) for tp in found] == [
        (17, parse_marker(marker(1, 1))),
        (-1001, None),
    ]


def test_a_control_link_reads_its_pipelines_announcements_in_order(
    transport: Transport,
) -> None:
    topic = transport.topic()
    ours, theirs = transport.control(topic, "ours"), transport.control(topic, "theirs")
    ours.send(Announcement("ours", 1, 1, Phase.PREPARE))
    theirs.send(Announcement("theirs", 1, 1, Phase.PREPARE))
    ours.send(Ack("ours", 1, 1, 0, ok=True))  # a kind this link does not read
    ours.send(Heartbeat("ours", 1, 0, 0, 0))
    ours.send(Announcement("ours", 1, 1, Phase.COMMIT))

    reader = transport.control(topic, "ours")
    assert [(a.checkpoint_id, a.phase) for a in reader.catch_up()] == [
        (1, Phase.PREPARE),
        (1, Phase.COMMIT),
    ]
    assert reader.receive(transport.settle_s) == []
    ours.send(Announcement("ours", 2, 1, Phase.PREPARE))
    arrived: list[Any] = []
    deadline = time.monotonic() + 20
    while not arrived and time.monotonic() < deadline:
        arrived = reader.receive(0.5)
    assert [(a.checkpoint_id, a.phase) for a in arrived] == [(2, Phase.PREPARE)]


def test_a_reader_pauses_continues_at_an_offset_and_repositions(transport: Transport) -> None:
    topic = transport.topic(2)
    producer = transport.producer(f"contract-{uuid.uuid4().hex[:8]}")
    producer.init(timeout_s=30)

    def commit(*values: bytes) -> None:  # each value into both partitions
        producer.begin()
        for value in values:
            for partition in (0, 1):
                producer.produce(topic, value, None, None, partition)
        producer.prepare([], None, timeout_s=30)
        producer.commit(timeout_s=30)

    def read(count: int) -> list[tuple[int, int, Any]]:
        found: list[tuple[int, int, Any]] = []
        deadline = time.monotonic() + 20
        while len(found) < count and time.monotonic() < deadline:
            found.extend((m.partition(), m.offset(), m.value()) for m in reader.poll(0.2))
        return sorted(found)

    commit(b"a", b"b", b"c")  # offsets 0-2 in each partition, the marker 3
    reader = transport.reader("p-" + topic)
    reader.assign({(topic, 0): 0, (topic, 1): 0})
    assert len(read(6)) == 6
    reader.pause((topic, 0))
    commit(b"d", b"e")  # 4-5
    assert read(2) == [(1, 4, b"d"), (1, 5, b"e")]
    assert _quiet(reader, transport.settle_s) == []  # nothing of the paused partition
    reader.continue_at({(topic, 0): 1})
    assert read(4) == [(0, 1, b"b"), (0, 2, b"c"), (0, 4, b"d"), (0, 5, b"e")]
    reader.reposition({(topic, 0): 4, (topic, 1): 5})
    assert read(3) == [(0, 4, b"d"), (0, 5, b"e"), (1, 5, b"e")]
