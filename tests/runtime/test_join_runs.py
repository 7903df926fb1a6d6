"""A stream-table join on a real broker and Spark local[4], with a worker task killed by
SIGKILL mid-run: every order is joined exactly once, equal to a plain-Python batch join
of the same input (the compacted table is written before any order)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from laminar_kafka import JsonFormat, RuntimeConfig
from laminar_kafka.operators.partitioning import LIBRDKAFKA_PARTITIONER
from laminar_kafka.runtime.driver.events import GenerationStarted
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.join_workload import (
    batch_join,
    compare,
    customers,
    join_pipeline,
    order,
)
from laminar_kafka.testing.orders import read_committed_records
from laminar_kafka.testing.run import BackgroundRun

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

JSON = JsonFormat()


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, Any]]) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "partitioner": LIBRDKAFKA_PARTITIONER["murmur2"]}
    )
    for key, value in records:
        producer.produce(topic, JSON.encode_one(value), key)
    assert producer.flush(30) == 0


def _orders(bootstrap: str, topic: str, ids: range) -> None:
    _produce(bootstrap, topic, [(None, order(i)) for i in ids])


def test_joined_orders_are_exactly_once_across_a_killed_worker(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    orders = topic_factory.create("orders", partitions=2)
    table = topic_factory.create("customers", 2, {"cleanup.policy": "compact"})
    sink = topic_factory.create(orders + "-out", 2)
    name = "join-" + orders[-8:]
    _produce(kafka_bootstrap, table, [(k.encode(), row) for k, row in customers().items()])
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=1,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
    )
    run = BackgroundRun(join_pipeline(name, orders, table, sink), config, spark_context)
    _orders(kafka_bootstrap, orders, range(300))
    run.wait_for_output(kafka_bootstrap, sink, JSON.decode_one, 50)
    victim = pid_dir / f"{name}.g1.t1.pid"  # the joining stage's task
    os.kill(int(victim.read_text()), signal.SIGKILL)
    _orders(kafka_bootstrap, orders, range(300, 600))
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    run.wait_for_output(kafka_bootstrap, sink, JSON.decode_one, 600)
    stats = run.stop()

    got = [JSON.decode_one(r.value) for r in read_committed_records(kafka_bootstrap, sink)]
    assert compare(batch_join([order(i) for i in range(600)], customers()), got) == []
    assert stats.restarts == 1
