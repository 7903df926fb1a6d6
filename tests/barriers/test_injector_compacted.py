"""Barrier injection into a compacted source topic, on a real broker.

A compacted topic refuses records without a key, so every barrier carries the
reserved key CONTROL_KEY; the header, not the key, is what makes it control.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from laminar_kafka.barriers.injector import BarrierInjector
from laminar_kafka.control import (
    CONTROL_HEADER,
    CONTROL_KEY,
    Barrier,
    BarrierFlags,
    decode_as,
    is_control_message,
)
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration

COMPACTED = {"cleanup.policy": "compact"}
TIMEOUT_S = 30.0


def _read(bootstrap: str, topic: str, partition: int, count: int) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    out: list[Any] = []
    try:
        while len(out) < count:
            batch = consumer.consume(count - len(out), TIMEOUT_S)
            assert batch, f"only {len(out)} of {count} records arrived"
            out.extend(m for m in batch if m.error() is None)
    finally:
        consumer.close()
    return out


def test_a_compacted_topic_refuses_a_record_without_a_key(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("compacted", config=COMPACTED)
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "log_level": 3})
    producer.produce(topic, b"v", partition=0, on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(TIMEOUT_S) == 0
    assert errors and errors[0] is not None  # why barriers need a key there


def test_barriers_land_in_a_compacted_topic_with_the_reserved_key(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("compacted", partitions=2, config=COMPACTED)
    parts = [(topic, 0), (topic, 1)]
    injector = BarrierInjector(KafkaConnection(kafka_bootstrap), parts, skip_idle=False)
    barrier = Barrier("compacted-it", 4, 1, BarrierFlags.NONE, 1_700_000_000_000)
    try:
        offsets = injector.inject(barrier, TIMEOUT_S).offsets
    finally:
        injector.close()
    assert offsets == {(topic, 0): 0, (topic, 1): 0}
    for partition in (0, 1):
        (msg,) = _read(kafka_bootstrap, topic, partition, 1)
        assert msg.key() == CONTROL_KEY
        assert msg.headers() == [(CONTROL_HEADER, b"barrier")]
        assert is_control_message(msg)
        assert decode_as(msg.value(), Barrier) == barrier


def test_a_data_record_with_the_reserved_key_is_still_data(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("compacted", config=COMPACTED)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "log_level": 3})
    producer.produce(topic, b"user value", CONTROL_KEY, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    (msg,) = _read(kafka_bootstrap, topic, 0, 1)
    assert msg.key() == CONTROL_KEY
    assert not is_control_message(msg)
