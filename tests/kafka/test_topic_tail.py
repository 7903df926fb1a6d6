"""Reading a topic's newest committed records backwards, on the broker: aborted records
and transaction markers are skipped, partitions merge by time, nothing joins a group."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PROBE_GROUP
from laminar_kafka.kafka.topic_tail import Keep, read_tail
from laminar_kafka.testing import TopicFactory


def transactions(
    bootstrap: str, topic: str, batches: list[tuple[list[tuple[int, int]], bool]]
) -> None:
    """Write each batch of (partition, number) in a transaction, committed or aborted;
    each record's timestamp is its number, its value the number's text."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"tail-{uuid.uuid4()}"}
    )
    producer.init_transactions(30)
    for records, commit in batches:
        producer.begin_transaction()
        for partition, n in records:
            producer.produce(topic, str(n).encode(), partition=partition, timestamp=1_000 + n)
        if commit:
            producer.commit_transaction(30)
        else:
            # Delivered first: an abort racing the records' AddPartitionsToTxn can end
            # in INVALID_TXN_STATE (librdkafka issue 4849), and the aborted records
            # are to take offsets in the log, as the reads below rely on.
            assert producer.flush(30) == 0
            producer.abort_transaction(30)
    producer.flush(30)
    _await_markers(bootstrap, topic, {p for records, _ in batches for p, _ in records})


def _await_markers(bootstrap: str, topic: str, partitions: set[int]) -> None:
    """Until each partition's last stable offset is its end: a transaction's commit
    returns before the broker has written its markers, and until then a read_committed
    reader (as `read_tail`'s) sees the partition end where the transaction began."""
    settings = {"bootstrap.servers": bootstrap, "group.id": f"tail-check-{uuid.uuid4()}"}
    stable = Consumer({**settings, "isolation.level": "read_committed"})
    written = Consumer({**settings, "isolation.level": "read_uncommitted"})
    deadline = time.monotonic() + 30
    try:
        for p in partitions:
            tp = TopicPartition(topic, p)
            while (
                stable.get_watermark_offsets(tp, 10)[1] < written.get_watermark_offsets(tp, 10)[1]
            ):
                assert time.monotonic() < deadline, f"{topic}[{p}]: markers not written in 30 s"
                time.sleep(0.05)
    finally:
        stable.close()
        written.close()


def values(bootstrap: str, topic: str, limit: int, keep: Keep | None = None) -> list[int]:
    tail = read_tail(KafkaConnection(bootstrap), topic, limit, 10.0, keep)
    assert tail.exists and tail.complete
    return [int(r.value or b"-1") for r in tail.records]


def test_the_newest_committed_records_come_first_across_partitions(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("tail", partitions=2)
    # One record per transaction: every other offset is a commit marker.
    batches = [([(n % 2, n)], True) for n in range(12)]
    batches.insert(5, ([(0, 100), (1, 101)], False))  # aborted: never shown
    transactions(kafka_bootstrap, topic, batches)
    assert values(kafka_bootstrap, topic, 5) == [11, 10, 9, 8, 7]
    assert values(kafka_bootstrap, topic, 50) == list(range(11, -1, -1))
    odd = values(kafka_bootstrap, topic, 3, keep=lambda r: int(r.value or b"0") % 2 == 1)
    assert odd == [11, 9, 7]
    # Windows widen back past a run of aborted records (many offsets, no record).
    transactions(kafka_bootstrap, topic, [([(0, 200 + i) for i in range(40)], False)])
    assert values(kafka_bootstrap, topic, 2) == [11, 10]


def test_a_missing_or_empty_topic_has_no_records(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    kafka = KafkaConnection(kafka_bootstrap)
    missing = read_tail(kafka, f"no-such-topic-{uuid.uuid4().hex[:8]}", 10, 10.0)
    assert (missing.records, missing.exists, missing.complete) == ((), False, True)
    empty = read_tail(kafka, topic_factory.create("tail-empty", partitions=3), 10, 10.0)
    assert (empty.records, empty.exists, empty.complete) == ((), True, True)


def test_the_reader_commits_nothing_for_any_group(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("tail-group", partitions=1)
    transactions(kafka_bootstrap, topic, [([(0, 1)], True)])
    assert values(kafka_bootstrap, topic, 1) == [1]
    probe = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": PROBE_GROUP})
    try:
        [committed] = probe.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed.offset < 0  # no offset stored for the group
    finally:
        probe.close()
