"""A co-partitioned interval join on a real broker and Spark local[4]: both topics keyed
by customer, joined in one stage without an internal topic, a joining task killed by
SIGKILL mid-run; every pair and every unpaid order comes out exactly once, equal to a
plain-Python batch interval join of the same input."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from laminar_kafka import JsonFormat, RuntimeConfig
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.runtime.driver.events import CheckpointCommitted, GenerationStarted
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.interval_workload import (
    WITHIN_S,
    batch_interval_join,
    interval_pipeline,
    order,
    payment,
    ticks,
)
from laminar_kafka.testing.orders import read_committed_records
from laminar_kafka.testing.run import BackgroundRun

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

JSON = JsonFormat()
PARTITIONS = 2


def _produce(bootstrap: str, records: list[tuple[str, dict[str, Any]]]) -> None:
    """Each record into the partition its customer maps to (murmur2), as a keyed producer."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for topic, value in records:
        partition = murmur2_partition(value["customer"].encode(), PARTITIONS)
        producer.produce(topic, JSON.encode_one(value), partition=partition)
    assert producer.flush(30) == 0


def _input(orders: str, payments: str, ids: range) -> list[tuple[str, dict[str, Any]]]:
    records: list[tuple[str, dict[str, Any]]] = []
    for i in ids:
        records.append((orders, order(i)))
        if (p := payment(i)) is not None:
            records.append((payments, p))
    return records


def _key(r: dict[str, Any]) -> tuple[int, int]:
    return r["id"], -1 if r["pay"] is None else r["pay"]


def test_a_co_partitioned_join_is_exactly_once_across_a_killed_worker_in_one_stage(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    orders = topic_factory.create("orders", partitions=PARTITIONS)
    payments = topic_factory.create("payments", partitions=PARTITIONS)
    sink = topic_factory.create(orders + "-paid", 2)
    name = "copaid-" + orders[-8:]
    n = 200
    expected = sorted(
        batch_interval_join(
            [order(i) for i in range(n)],
            [p for i in range(n) if (p := payment(i)) is not None],
            0,
            WITHIN_S * 1000,
            left=True,
        ),
        key=_key,
    )
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=PARTITIONS,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
    )
    pipeline = interval_pipeline("left", name, (orders, payments, sink), co_partitioned=True)
    run = BackgroundRun(pipeline, config, spark_context)
    _produce(kafka_bootstrap, _input(orders, payments, range(n // 2)))
    run.wait_for_output(kafka_bootstrap, sink, JSON.decode_one, 40)
    victim = pid_dir / f"{name}.g1.t1.pid"  # a joining task: the only stage's second
    os.kill(int(victim.read_text()), signal.SIGKILL)
    ends = [(topic, record) for topic in (orders, payments) for _, record in ticks(PARTITIONS, n)]
    _produce(kafka_bootstrap, _input(orders, payments, range(n // 2, n)) + ends)
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    run.wait_for_output(kafka_bootstrap, sink, JSON.decode_one, len(expected))
    stats = run.stop()

    got = [JSON.decode_one(r.value) for r in read_committed_records(kafka_bootstrap, sink)]
    assert sorted(got, key=_key) == expected
    assert any(r["pay"] is None for r in got)  # unpaid orders, emitted on the watermark
    assert stats.restarts == 1
    # One stage, no internal topic: the plan co-partitioned the two sides.
    committed = [e for e in run.events if isinstance(e, CheckpointCommitted)]
    assert committed and all(len(e.stages) == 1 for e in committed)
    assert pipeline.internal_topics == ()
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=20).topics
    assert not [t for t in topics if t.startswith(f"{name}.") and t.endswith(".repartition")]
