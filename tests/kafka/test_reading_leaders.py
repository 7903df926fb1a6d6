"""A reader follows moving leaders only after a broker connection failed: a fake clock
and client for the rule, a real consumer for the error librdkafka reports."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException

from laminar_kafka import waits
from laminar_kafka.kafka.reading_leaders import EVERY_S, WINDOW_S, LeaderFollower


@dataclass
class Client:
    asked: list[str] = field(default_factory=list)
    answers: bool = True

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        assert topic is not None and timeout <= EVERY_S  # a reader never waits long here
        self.asked.append(topic)
        if not self.answers:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_reader_without_connection_failures_asks_nothing() -> None:
    clock, client = Clock(), Client()
    follower = LeaderFollower(clock)
    follower.on_error(KafkaError(KafkaError._PARTITION_EOF))  # not a connection's failure
    for _ in range(20):
        follower.follow(client, ["a"])
        clock.now += 0.1
    assert client.asked == [] and not follower.following


def test_after_a_connection_failed_it_asks_each_quarter_second_for_the_window() -> None:
    clock, client = Clock(), Client(answers=False)  # unanswered questions: asked again
    follower = LeaderFollower(clock)
    follower.on_error(KafkaError(KafkaError._TRANSPORT))
    failed = clock.now
    while clock.now - failed <= WINDOW_S + 1.0:
        follower.follow(client, ["b", "a"])
        clock.now += 0.0625  # exact in binary: a quarter second is four steps
    asked = len(client.asked) // 2
    assert client.asked[:4] == ["b", "a", "b", "a"]
    assert asked == pytest.approx(WINDOW_S / EVERY_S, abs=2)
    assert not follower.following


def test_every_new_failure_opens_the_window_again() -> None:
    clock, client = Clock(), Client()
    follower = LeaderFollower(clock)
    follower.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    clock.now += WINDOW_S - 1
    follower.on_error(KafkaError(KafkaError._TRANSPORT))
    clock.now += WINDOW_S - 1
    follower.follow(client, ["a"])
    assert client.asked == ["a"] and follower.following


def test_a_real_consumer_reports_a_refused_connection_to_the_follower() -> None:
    # Nothing listens on this port: librdkafka's connection attempts fail at once.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    follower = LeaderFollower()
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "group.id": "reading-leaders",
            "error_cb": follower.on_error,
            "log_level": 0,
        }
    )
    try:
        deadline = waits.monotonic() + 10
        while not follower.following and waits.monotonic() < deadline:
            consumer.consume(10, 0.1)
    finally:
        consumer.close()
    assert follower.following
