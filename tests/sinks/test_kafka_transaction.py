"""KafkaTransaction against a real broker: visibility, fencing, offsets in the transaction."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from laminar_kafka.checkpoint.markers import marker
from laminar_kafka.errors import FencedError, TransactionError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import transactional_id
from laminar_kafka.sinks import KafkaTransaction, TxnState
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0
TXN_TIMEOUT_MS = 60_000


@pytest.fixture
def new_txn(kafka_bootstrap: str) -> Iterator[Callable[[str], KafkaTransaction]]:
    made: list[KafkaTransaction] = []

    def make(txn_id: str) -> KafkaTransaction:
        txn = KafkaTransaction(KafkaConnection(kafka_bootstrap), txn_id, TXN_TIMEOUT_MS)
        made.append(txn)
        return txn

    try:
        yield make
    finally:
        for txn in made:
            txn.close()


def _unique_id() -> str:
    return transactional_id(f"test-{uuid.uuid4().hex[:10]}", 0)


def _read(bootstrap: str, topic: str, until: bytes, committed_only: bool = True) -> list[bytes]:
    """Values of partition 0 from the start up to and including `until`.

    Seeing `until`, written after the transactions under test, proves those were
    resolved: read_committed delivers nothing past an open transaction.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed" if committed_only else "read_uncommitted",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while until not in values:
            assert time.monotonic() < deadline, f"{until!r} not seen; got {values}"
            for m in consumer.consume(100, 0.2):
                assert m.error() is None, m.error()
                values.append(m.value() or b"")
    finally:
        consumer.close()
    return values


def test_illegal_calls_are_refused_before_reaching_the_broker(
    new_txn: Callable[[str], KafkaTransaction],
) -> None:
    txn = new_txn(_unique_id())
    with pytest.raises(TransactionError, match="cannot begin a transaction that is new"):
        txn.begin()
    with pytest.raises(TransactionError, match="cannot produce a transaction that is new"):
        txn.produce("t", b"v")
    with pytest.raises(TransactionError, match="cannot prepare a transaction that is new"):
        txn.prepare([], None, TIMEOUT_S)
    assert txn.state is TxnState.NEW


def test_committed_output_is_visible_and_aborted_output_never(
    kafka_bootstrap: str, topic_factory: TopicFactory, new_txn: Callable[[str], KafkaTransaction]
) -> None:
    topic = topic_factory.create(prefix="txn-visibility")
    txn = new_txn(_unique_id())
    txn.init(TIMEOUT_S)
    with pytest.raises(TransactionError, match="cannot commit a transaction that is ready"):
        txn.commit(TIMEOUT_S)

    for epoch, values, decision in [
        (1, [b"a1", b"a2"], "commit"),
        (2, [b"b1", b"b2"], "abort"),  # prepared, on the broker, then aborted
        (3, [b"c1"], "commit"),
    ]:
        txn.begin()
        for value in values:
            txn.produce(topic, value, key=f"e{epoch}".encode())
        txn.prepare([], None, TIMEOUT_S)
        assert txn.state is TxnState.PREPARED
        if decision == "commit":
            txn.commit(TIMEOUT_S)
        else:
            txn.abort(TIMEOUT_S)
        assert txn.state is TxnState.READY

    assert txn.produced == 5
    assert _read(kafka_bootstrap, topic, until=b"c1") == [b"a1", b"a2", b"c1"]
    # The aborted records did reach the log: read_committed hid them.
    assert _read(kafka_bootstrap, topic, until=b"c1", committed_only=False) == [
        b"a1", b"a2", b"b1", b"b2", b"c1",
    ]  # fmt: skip


@pytest.mark.parametrize("prepared", [False, True], ids=["open", "prepared"])
def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction(
    prepared: bool,
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    new_txn: Callable[[str], KafkaTransaction],
) -> None:
    topic = topic_factory.create(prefix="txn-fencing")
    txn_id = _unique_id()
    group = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"g-{txn_id}"})
    offsets = [TopicPartition(topic, 0, 1, metadata=marker(1, 1))]
    zombie = new_txn(txn_id)
    zombie.init(TIMEOUT_S)
    zombie.begin()
    zombie.produce(topic, b"zombie")
    if prepared:  # the window "decided, not yet committed" of a task that then hangs
        zombie.prepare(offsets, group.consumer_group_metadata(), TIMEOUT_S)

    successor = new_txn(txn_id)
    successor.init(TIMEOUT_S)  # fences the zombie and aborts what it left open

    with pytest.raises(FencedError, match=f"producer {txn_id} was fenced by a newer one"):
        if prepared:
            zombie.commit(TIMEOUT_S)
        else:  # a checkpoint's prepare, as a task makes it
            zombie.prepare(offsets, group.consumer_group_metadata(), TIMEOUT_S)
    group.close()
    assert zombie.state is TxnState.FAILED
    with pytest.raises(FencedError):  # and it stays fenced: nothing it does gets through
        zombie.abort(TIMEOUT_S)
    with pytest.raises(FencedError):
        zombie.produce(topic, b"zombie-again")

    successor.begin()
    successor.produce(topic, b"fresh")
    successor.prepare([], None, TIMEOUT_S)
    successor.commit(TIMEOUT_S)
    assert _read(kafka_bootstrap, topic, until=b"fresh") == [b"fresh"]
    if prepared:  # flushed by prepare: in the log, and hidden by the abort
        assert b"zombie" in _read(kafka_bootstrap, topic, until=b"fresh", committed_only=False)


def test_offsets_and_marker_commit_atomically_with_the_output(
    kafka_bootstrap: str, topic_factory: TopicFactory, new_txn: Callable[[str], KafkaTransaction]
) -> None:
    source = topic_factory.create(prefix="txn-source", partitions=2)
    out = topic_factory.create(prefix="txn-out")
    group = f"laminar-test-{uuid.uuid4().hex[:8]}"
    member = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
    checker = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
        }
    )
    partitions = [TopicPartition(source, 0), TopicPartition(source, 1)]

    def committed() -> list[tuple[int, str | None]]:
        return [(tp.offset, tp.metadata) for tp in checker.committed(partitions, TIMEOUT_S)]

    txn = new_txn(_unique_id())
    txn.init(TIMEOUT_S)
    waits_seen = _WaitsSeen(txn)
    try:
        for checkpoint_id, (p0, p1), decision in [
            (1, (42, 7), "commit"),
            (2, (50, 9), "abort"),
            (3, (61, 12), "commit"),
        ]:
            txn.begin()
            txn.produce(out, f"out-{checkpoint_id}".encode())
            offsets = [
                TopicPartition(source, 0, p0, metadata=marker(checkpoint_id, 1)),
                TopicPartition(source, 1, p1, metadata=marker(checkpoint_id, 1)),
            ]
            txn.prepare(offsets, member.consumer_group_metadata(), TIMEOUT_S)
            if decision == "commit":
                txn.commit(TIMEOUT_S)
            else:
                txn.abort(TIMEOUT_S)
                # The aborted checkpoint's offsets never replace the committed ones.
                assert committed() == [(42, marker(1, 1)), (7, marker(1, 1))]

        assert committed() == [(61, marker(3, 1)), (12, marker(3, 1))]
        assert _read(kafka_bootstrap, out, until=b"out-3") == [b"out-1", b"out-3"]
        # The heartbeat saw each wait for the group coordinator while it lasted.
        assert len(waits_seen.during) == 3 and all(w is not None for w in waits_seen.during)
        assert txn.offsets_since is None
    finally:
        member.close()
        checker.close()


class _WaitsSeen:
    """The producer of `txn`, noting `txn.offsets_since` as each call to the group
    coordinator begins (what a heartbeat taken then would report)."""

    def __init__(self, txn: KafkaTransaction) -> None:
        self._txn, self._producer = txn, txn._producer
        self.during: list[float | None] = []
        txn._producer = self  # type: ignore[assignment]

    def send_offsets_to_transaction(self, *args: object) -> None:
        self.during.append(self._txn.offsets_since)
        self._producer.send_offsets_to_transaction(*args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._producer, name)


def test_an_abortable_failure_is_aborted_and_the_next_transaction_commits(
    kafka_bootstrap: str, topic_factory: TopicFactory, new_txn: Callable[[str], KafkaTransaction]
) -> None:
    # The broker refuses a record above the topic's size limit: an abortable error.
    topic = topic_factory.create(prefix="txn-abortable", config={"max.message.bytes": "2000"})
    txn = new_txn(_unique_id())
    txn.init(TIMEOUT_S)
    txn.begin()
    txn.produce(topic, b"small-but-doomed")
    txn.produce(topic, os.urandom(20_000))
    with pytest.raises(TransactionError, match="a record was not delivered"):
        txn.prepare([], None, TIMEOUT_S)
    assert txn.state is TxnState.FAILED

    txn.abort(TIMEOUT_S)
    assert txn.state is TxnState.READY

    # librdkafka fails one more transaction after a broker-rejected record (its
    # sequence numbers skip: "Purged in queue" / OUT_OF_ORDER_SEQUENCE_NUMBER, as in
    # karafka/waterdrop#501). Abort-and-retry gets past it, as a checkpoint does.
    failures = 0
    for attempt in range(3):
        txn.begin()
        txn.produce(topic, f"after-{attempt}".encode())
        try:
            txn.prepare([], None, TIMEOUT_S)
            txn.commit(TIMEOUT_S)
            break
        except TransactionError:
            failures += 1
            txn.abort(TIMEOUT_S)
    assert failures <= 1
    last = f"after-{failures}".encode()
    assert _read(kafka_bootstrap, topic, until=last) == [last]


def test_output_staged_while_prepared_goes_in_order_into_the_next_transaction(
    kafka_bootstrap: str, topic_factory: TopicFactory, new_txn: Callable[[str], KafkaTransaction]
) -> None:
    topic = topic_factory.create(prefix="txn-staged")
    txn = new_txn(_unique_id())
    txn.init(TIMEOUT_S)
    txn.begin()
    txn.produce(topic, b"a1")
    txn.prepare([], None, TIMEOUT_S)
    values = [b"s1", b"s2"]
    txn.produce_batch(topic, values, [b"k1", b"k2"])
    values[0] = b"changed"  # the caller's list is its own again once the call returned
    txn.produce(topic, b"s3", b"k3", [("h", b"1")], 0)
    txn.produce_batch(topic, [b"s4"], None, [0], [1_700_000_000_000])
    assert txn.staged == 4 and txn.produced == 1
    txn.commit(TIMEOUT_S)
    txn.begin()  # the staged records go into this transaction
    assert txn.staged == 0 and txn.produced == 5
    txn.prepare([], None, TIMEOUT_S)
    txn.produce_batch(topic, [b"dropped"], None)  # staged for a transaction never begun
    txn.commit(TIMEOUT_S)
    txn.abort(TIMEOUT_S)
    assert txn.staged == 0
    txn.begin()
    txn.produce(topic, b"end")
    txn.prepare([], None, TIMEOUT_S)
    txn.commit(TIMEOUT_S)

    expected = [b"a1", b"s1", b"s2", b"s3", b"s4", b"end"]
    assert _read(kafka_bootstrap, topic, until=b"end") == expected
