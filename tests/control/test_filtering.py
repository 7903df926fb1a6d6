"""Other consumers of a source topic skip control records by their header alone."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from laminar_kafka.control import (
    CONTROL_HEADER,
    CONTROL_KEY,
    Barrier,
    BarrierFlags,
    control_headers,
    encode,
    is_control_message,
    skip_control,
)
from laminar_kafka.testing import TopicFactory

BARRIER = Barrier("p", 3, 1, BarrierFlags.NONE, 0)


class FakeMessage:
    """A consumed message as far as the helpers look at it."""

    def __init__(self, value: bytes, key: bytes | None, headers: Any) -> None:
        self._value, self._key, self._headers = value, key, headers

    def headers(self) -> Any:
        return self._headers

    def value(self) -> bytes:
        return self._value


def test_control_messages_are_told_by_their_header() -> None:
    assert is_control_message(FakeMessage(b"", CONTROL_KEY, control_headers(BARRIER)))
    assert is_control_message(FakeMessage(b"", None, [("trace", b"x"), (CONTROL_HEADER, b"")]))
    assert not is_control_message(FakeMessage(b"", None, None))
    assert not is_control_message(FakeMessage(b"", None, [("trace", b"x")]))


def test_the_reserved_key_alone_does_not_make_a_record_control() -> None:
    assert not is_control_message(FakeMessage(b"data", CONTROL_KEY, None))
    assert not is_control_message(FakeMessage(b"data", CONTROL_KEY, [("trace", b"x")]))


def test_skip_control_keeps_data_in_order() -> None:
    messages = [
        FakeMessage(b"a", None, None),
        FakeMessage(encode(BARRIER), CONTROL_KEY, control_headers(BARRIER)),
        FakeMessage(b"b", CONTROL_KEY, None),
        FakeMessage(b"c", b"k", [("trace", b"x")]),
    ]
    assert [m.value() for m in skip_control(messages)] == [b"a", b"b", b"c"]
    assert list(skip_control([])) == []


@pytest.mark.integration
def test_a_plain_consumer_drops_barriers_with_one_call(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("shared")
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "log_level": 3})
    producer.produce(topic, b"first", b"k1", partition=0)
    producer.produce(
        topic, encode(BARRIER), CONTROL_KEY, partition=0, headers=control_headers(BARRIER)
    )
    producer.produce(topic, b"second", CONTROL_KEY, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"{topic}-other"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    received: list[Any] = []
    try:
        while len(received) < 3:
            batch = consumer.consume(3, 30)
            assert batch, "records did not arrive"
            received.extend(batch)
    finally:
        consumer.close()
    assert [m.value() for m in skip_control(received)] == [b"first", b"second"]
