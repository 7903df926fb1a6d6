"""Barrier injection skips partitions that received nothing since the last barrier
(real broker): a barrier lands wherever a record arrived, and nowhere else."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from laminar_kafka.barriers.injector import BarrierInjector
from laminar_kafka.control import Barrier, BarrierFlags
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0


def _barrier(n: int) -> Barrier:
    return Barrier("p", n, 1, BarrierFlags.NONE, 0)


def test_only_partitions_that_moved_get_the_next_barrier(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("idle", partitions=3)
    parts = [(topic, p) for p in range(3)]
    injector = BarrierInjector(KafkaConnection(kafka_bootstrap), parts)
    always = BarrierInjector(KafkaConnection(kafka_bootstrap), parts, skip_idle=False)
    try:
        first = injector.inject(_barrier(1), TIMEOUT_S)
        assert sorted(first) == parts  # nothing known yet: every partition
        assert injector.inject(_barrier(2), TIMEOUT_S) == {}
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        producer.produce(topic, b"order", partition=1)
        assert producer.flush(TIMEOUT_S) == 0
        third = injector.inject(_barrier(3), TIMEOUT_S)
        assert third == {(topic, 1): first[(topic, 1)] + 2}  # after the barrier and the order
        assert injector.inject(_barrier(4), TIMEOUT_S) == {}
        # Another writer's barrier moved every partition: all get the next one.
        assert sorted(always.inject(_barrier(5), TIMEOUT_S)) == parts
        assert sorted(injector.inject(_barrier(6), TIMEOUT_S)) == parts
    finally:
        injector.close()
        always.close()
