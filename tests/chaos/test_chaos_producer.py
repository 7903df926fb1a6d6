"""A round's producer reports each delivery, and fails loudly; sinks must hold no control record."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from laminar_kafka.chaos.producer import InputRecord, PacedProducer, WaitAt
from laminar_kafka.chaos.tail_hold import TailHold
from laminar_kafka.control.headers import CONTROL_HEADER
from laminar_kafka.errors import LaminarError
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import read_committed, read_committed_records

pytestmark = pytest.mark.integration


def test_every_delivery_is_recorded_with_its_partition_and_offset(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("paced", partitions=2)
    records = [InputRecord(topic, i % 2, None, b"%d" % i) for i in range(30)]
    producer = PacedProducer(kafka_bootstrap, records, chunks=3, pause_s=0.01)
    producer.start()
    producer.wait_delivered(10, 30)
    assert producer.join(30) == 30
    delivered = producer.delivered()
    assert sorted((d.partition, d.offset) for d in delivered) == sorted(
        [(0, o) for o in range(15)] + [(1, o) for o in range(15)]
    )
    assert all(a.at <= b.at for a, b in itertools.pairwise(delivered))
    values = [r.value for r in read_committed_records(kafka_bootstrap, topic)]
    assert sorted(values, key=lambda v: int(v or b"0")) == [r.value for r in records]


def test_a_producer_failure_fails_the_round_with_its_own_error(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("paced", partitions=1)
    # Partition 7 does not exist: the broker can never take this record.
    records = [InputRecord(topic, 0, None, b"ok"), InputRecord(topic, 7, None, b"lost")]
    producer = PacedProducer(kafka_bootstrap, records, chunks=1, pause_s=0.0)
    producer.start()
    with pytest.raises(LaminarError, match=r"[Pp]artition") as failure:
        producer.join(90)
    assert "loss" not in str(failure.value)
    # Waiting for deliveries reports the same error, not a timeout.
    with pytest.raises(LaminarError, match=r"[Pp]artition"):
        producer.wait_delivered(2, 5)


def test_a_control_record_in_a_sink_is_an_error_not_a_skipped_record(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("sink", partitions=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, b"data", partition=0)
    producer.produce(topic, b"\x00barrier", partition=0, headers=[(CONTROL_HEADER, b"barrier")])
    assert producer.flush(30) == 0
    with pytest.raises(LaminarError, match=r"control record leaked into .* offset 1"):
        read_committed(kafka_bootstrap, topic, bytes)


def test_a_held_tail_trickles_until_released_then_comes_at_once(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory.create("paced", partitions=1)
    records = [InputRecord(topic, 0, None, b"%d" % i) for i in range(20)]
    gate = tmp_path / "gate"
    hold = TailHold(threading.Event(), share=0.5, pause_s=1.0, gate=gate)
    producer = PacedProducer(kafka_bootstrap, records, chunks=2, pause_s=0.0, hold=hold)
    producer.start()
    producer.wait_delivered(12, 30)
    assert gate.exists()  # the trickle opened the fault gate
    # The held half comes one record at a time, a trickle pause apart...
    first, second = producer.delivered()[10:12]
    assert second.at - first.at >= 0.9
    hold.released.set()
    # ...and once released, the rest at once: trickled, it would take 8 s more.
    assert producer.join(5) == 20


def test_a_held_tail_sends_five_steps_per_checkpoint_committed(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("paced", partitions=1)
    records = [InputRecord(topic, 0, None, b"%d" % i) for i in range(40)]
    committed, asked = [3], threading.Semaphore(0)

    def checkpoints() -> int:
        asked.release()
        return committed[0]

    hold = TailHold(threading.Event(), share=0.5, pause_s=0.01, step=2, checkpoints=checkpoints)
    producer = PacedProducer(kafka_bootstrap, records, chunks=2, pause_s=0.0, hold=hold)
    producer.start()
    producer.wait_delivered(30, 30)  # the free half, and five steps of two
    for _ in range(20):  # the trickle asks on: twenty times without a commit, nothing more
        assert asked.acquire(timeout=30)
    assert len(producer.delivered()) == 30
    committed[0] = 4  # a checkpoint committed: five steps more
    producer.wait_delivered(40, 30)
    hold.released.set()
    assert producer.join(5) == 40


def test_records_from_a_wait_come_only_once_it_is_over(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("paced", partitions=1)
    records = [InputRecord(topic, 0, None, b"%d" % i) for i in range(20)]
    seen: list[int] = []
    polled, over = threading.Event(), threading.Event()

    def ready() -> bool:
        seen.append(len(producer.delivered()))
        if len(seen) >= 3:
            polled.set()
        return over.is_set()

    wait = WaitAt(8, ready, "the test", timeout_s=60, poll_s=0.01)
    producer = PacedProducer(kafka_bootstrap, records, chunks=4, pause_s=0.0, wait=wait)
    producer.start()
    assert polled.wait(30)
    over.set()
    assert producer.join(30) == 20
    # Every record before the wait was in (the chunk of 5 to 10 stopped at 8), none after.
    assert seen[:3] == [8, 8, 8]
    values = [r.value for r in read_committed_records(kafka_bootstrap, topic)]
    assert values == [r.value for r in records]


def test_a_wait_that_never_ends_fails_the_round(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("paced", partitions=1)
    records = [InputRecord(topic, 0, None, b"%d" % i) for i in range(4)]
    wait = WaitAt(2, lambda: False, "a watermark", timeout_s=0.3, poll_s=0.01)
    producer = PacedProducer(kafka_bootstrap, records, chunks=1, pause_s=0.0, wait=wait)
    producer.start()
    with pytest.raises(LaminarError, match=r"record 2 of the input waited for a watermark"):
        producer.join(30)
    assert len(producer.delivered()) == 2


def test_settle_waits_for_the_reports_of_what_was_sent_before_a_moment(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("settled", partitions=2)
    records = [InputRecord(topic, i % 2, None, b"%d" % i) for i in range(100)]
    producer = PacedProducer(kafka_bootstrap, records, chunks=2, pause_s=30)
    producer.start()
    try:
        producer.wait_delivered(1, 30)  # the first chunk is all handed over by then
        at = time.time()
        producer.settle(at, 30)
        assert sum(1 for d in producer.delivered() if d.sent_at <= at) == 50
    finally:
        producer.close()


def test_settle_gives_up_after_its_timeout_when_no_report_comes() -> None:
    records = [InputRecord("nowhere", 0, None, b"x")]
    producer = PacedProducer("127.0.0.1:1", records, config={"message.timeout.ms": 2_000})
    producer.start()
    try:
        started = time.monotonic()
        producer.settle(time.time() + 1, 0.5)
        assert 0.5 <= time.monotonic() - started < 5 and producer.delivered() == []
    finally:
        producer.close()
