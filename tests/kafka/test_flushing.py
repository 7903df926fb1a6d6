"""A flush that asks for its topics' metadata while records wait (a partition whose
leader moved can sit on no broker until the next refresh), on a fake clock."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError, KafkaException

from laminar_kafka import waits
from laminar_kafka.kafka.flushing import SLICE_S, flush_following_leaders


@dataclass
class Producer:
    """Delivers its records after `waiting` flush slices; each flush moves the clock."""

    waiting: int
    now: float = 0.0
    flushes: list[float] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    answers: bool = True

    def flush(self, timeout: float) -> int:
        self.flushes.append(timeout)
        self.now += timeout
        self.waiting = max(0, self.waiting - 1)
        return 3 if self.waiting else 0

    def list_topics(self, topic: str, timeout: float) -> None:
        self.asked.append(topic)
        if not self.answers:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))


@pytest.fixture
def producer(monkeypatch: pytest.MonkeyPatch) -> Producer:
    fake = Producer(waiting=0)
    monkeypatch.setattr(waits, "monotonic", lambda: fake.now)
    return fake


def test_records_delivered_at_once_cost_one_flush_and_no_question(producer: Producer) -> None:
    producer.waiting = 1
    assert flush_following_leaders(producer, ["a", "b"], 30.0) == 0  # type: ignore[arg-type]
    assert producer.flushes == [SLICE_S] and producer.asked == []


def test_records_that_wait_have_their_topics_asked_for_after_each_slice(
    producer: Producer,
) -> None:
    producer.waiting = 4
    assert flush_following_leaders(producer, ["b", "a", "b"], 30.0) == 0  # type: ignore[arg-type]
    assert producer.asked == ["a", "b"] * 3  # each topic once per slice that ended waiting
    assert len(producer.flushes) == 4


def test_what_is_still_waiting_at_the_timeout_is_returned(producer: Producer) -> None:
    producer.waiting, producer.answers = 1000, False  # no leader, no metadata answered
    assert flush_following_leaders(producer, ["a"], 1.0) == 3  # type: ignore[arg-type]
    assert producer.now == pytest.approx(1.0)
    assert all(0 <= t <= SLICE_S for t in producer.flushes)
