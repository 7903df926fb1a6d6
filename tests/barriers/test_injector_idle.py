"""Barrier injection skips partitions that received nothing since the last barrier, or
since the generation started (real broker): a barrier lands wherever a record
arrived, and nowhere else."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import OFFSET_INVALID, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import ListOffsetsResultInfo  # type: ignore[attr-defined]

from laminar_kafka.barriers.injector import ENDS_TIMEOUT_S, BarrierInjector
from laminar_kafka.control import Barrier, BarrierFlags
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0


def _barrier(n: int) -> Barrier:
    return Barrier("p", n, 1, BarrierFlags.NONE, 0)


def _write(producer: Producer, topic: str, *partitions: int) -> None:
    """One record into each partition, delivered before the next barrier is asked for."""
    for partition in partitions:
        producer.produce(topic, b"order", partition=partition)
    assert producer.flush(TIMEOUT_S) == 0


def test_only_partitions_that_moved_get_the_next_barrier(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("idle", partitions=3)
    parts = [(topic, p) for p in range(3)]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    _write(producer, topic, 2)  # a backlog
    # A loaded machine may take longer than the default budget to list the ends.
    injector = BarrierInjector(KafkaConnection(kafka_bootstrap), parts, ends_timeout_s=TIMEOUT_S)
    always = BarrierInjector(KafkaConnection(kafka_bootstrap), parts, skip_idle=False)
    try:
        # Nothing arrived since the injector (the generation) started, backlog or not.
        assert injector.inject(_barrier(1), TIMEOUT_S).offsets == {}
        _write(producer, topic, 1)
        second = injector.inject(_barrier(2), TIMEOUT_S).offsets
        assert second == {(topic, 1): 1}  # right after the order
        assert injector.inject(_barrier(3), TIMEOUT_S).offsets == {}
        _write(producer, topic, 1)
        assert injector.inject(_barrier(4), TIMEOUT_S).offsets == {(topic, 1): 3}
        # Another writer's barrier moved every partition: all get the next one.
        assert sorted(always.inject(_barrier(5), TIMEOUT_S).offsets) == parts
        assert sorted(injector.inject(_barrier(6), TIMEOUT_S).offsets) == parts
    finally:
        injector.close()
        always.close()


def test_without_the_start_offsets_the_first_barrier_goes_everywhere(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("idle", partitions=2)
    parts = [(topic, p) for p in range(2)]
    injector = BarrierInjector(KafkaConnection(kafka_bootstrap), parts)
    injector._seen_end.clear()  # as when the end offsets could not be read at the start
    try:
        assert sorted(injector.inject(_barrier(1), TIMEOUT_S).offsets) == parts
        assert injector.inject(_barrier(2), TIMEOUT_S).offsets == {}
    finally:
        injector.close()


def test_past_the_fan_out_limit_no_partition_gets_a_barrier(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("wide", partitions=3)
    parts = [(topic, p) for p in range(3)]
    injector = BarrierInjector(
        KafkaConnection(kafka_bootstrap), parts, max_barrier_partitions=1, ends_timeout_s=TIMEOUT_S
    )
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    try:
        _write(producer, topic, 0, 2)
        assert injector.inject(_barrier(1), TIMEOUT_S).offsets == {}  # two moved, one allowed
        _write(producer, topic, 2)
        # Counted from the cut of checkpoint 1: only partition 2 moved since.
        assert injector.inject(_barrier(2), TIMEOUT_S).offsets == {(topic, 2): 2}
    finally:
        injector.close()


def test_end_offsets_are_asked_within_a_short_budget_and_their_absence_skips_nothing(
    kafka_bootstrap: str, topic_factory: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ListOffsets to a dead leader waits out its whole timeout: the injector asks with
    a short one, whatever the checkpoint's, and writes every barrier when no answer came."""
    topic = topic_factory.create("idle", partitions=2)
    parts = [(topic, p) for p in range(2)]
    injector = BarrierInjector(KafkaConnection(kafka_bootstrap), parts)
    asked: list[float] = []

    def unanswered(requests: object, request_timeout: float) -> object:
        asked.append(request_timeout)
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

    try:
        monkeypatch.setattr(injector._admin, "list_offsets", unanswered)
        assert sorted(injector.inject(_barrier(1), TIMEOUT_S).offsets) == parts
        assert asked and max(asked) <= ENDS_TIMEOUT_S
    finally:
        injector.close()


def test_an_end_left_unanswered_counts_as_moved_and_the_leaders_are_reloaded_each_time(
    kafka_bootstrap: str, topic_factory: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka answers a partition whose (cached) leader died with offset -1001 once
    the timeout passed: that partition gets its barrier. The admin client reloads the
    topic's leaders before each ask, or every ask after a leader died would wait on the
    dead one again."""
    topic = topic_factory.create("idle", partitions=2)
    parts = [(topic, p) for p in range(2)]
    injector = BarrierInjector(KafkaConnection(kafka_bootstrap), parts, ends_timeout_s=TIMEOUT_S)
    admin = injector._admin
    assert admin is not None
    asked = admin.list_offsets
    reload = admin.list_topics
    calls: list[str] = []

    def one_unanswered(requests: dict[TopicPartition, object], request_timeout: float) -> object:
        calls.append("ends")
        futures = asked(requests, request_timeout=request_timeout)
        lost = next(tp for tp in futures if tp.partition == 1)
        dead: Future[ListOffsetsResultInfo] = Future()
        dead.set_result(ListOffsetsResultInfo(OFFSET_INVALID, -1, -1))
        return {**futures, lost: dead}

    def reloading(name: str, timeout: float) -> object:
        calls.append(f"leaders of {name}")
        return reload(name, timeout=timeout)

    try:
        injector.inject(_barrier(1), TIMEOUT_S)  # (a new topic's ends may not be known yet)
        monkeypatch.setattr(admin, "list_offsets", one_unanswered)
        monkeypatch.setattr(admin, "list_topics", reloading)
        # Neither moved since Barrier(1), but nobody could tell of partition 1: it gets
        # Barrier(2).
        assert sorted(injector.inject(_barrier(2), TIMEOUT_S).offsets) == [(topic, 1)]
        assert calls == [f"leaders of {topic}", "ends"]
    finally:
        injector.close()
