"""An interval join on a real broker and Spark local[4], with the joining task killed by
SIGKILL mid-run: every pair, and every unpaid order of the left join, comes out exactly
once, equal to a plain-Python batch interval join of the same input."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from laminar_kafka import JsonFormat, RuntimeConfig
from laminar_kafka.runtime.driver.events import GenerationStarted
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.interval_workload import (
    WITHIN_S,
    batch_interval_join,
    interval_pipeline,
    order,
    payment,
    tick,
)
from laminar_kafka.testing.orders import read_committed_records
from laminar_kafka.testing.run import BackgroundRun

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

JSON = JsonFormat()


def _produce(bootstrap: str, records: list[tuple[str, int, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for topic, partition, value in records:
        producer.produce(topic, JSON.encode_one(value), partition=partition)
    assert producer.flush(30) == 0


def _input(orders: str, payments: str, ids: range) -> list[tuple[str, int, Any]]:
    """Orders and payments of `ids`, each in partition id % 2 (both partitions advance)."""
    records: list[tuple[str, int, Any]] = []
    for i in ids:
        records.append((orders, i % 2, order(i)))
        if (p := payment(i)) is not None:
            records.append((payments, i % 2, p))
    return records


def _key(r: dict[str, Any]) -> tuple[int, int]:
    return r["id"], -1 if r["pay"] is None else r["pay"]


def test_interval_join_output_is_exactly_once_across_a_killed_worker(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    orders = topic_factory.create("orders", partitions=2)
    payments = topic_factory.create("payments", partitions=2)
    sink = topic_factory.create(orders + "-paid", 2)
    name = "paid-" + orders[-8:]
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
        parallelism=1,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
    )
    pipeline = interval_pipeline("left", name, (orders, payments, sink))
    run = BackgroundRun(pipeline, config, spark_context)
    _produce(kafka_bootstrap, _input(orders, payments, range(n // 2)))
    run.wait_for_output(kafka_bootstrap, sink, JSON.decode_one, 40)
    victim = pid_dir / f"{name}.g1.t1.pid"  # the joining stage's task
    os.kill(int(victim.read_text()), signal.SIGKILL)
    ends = [(topic, p, tick(p, n)) for topic in (orders, payments) for p in range(2)]
    _produce(kafka_bootstrap, _input(orders, payments, range(n // 2, n)) + ends)
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    run.wait_for_output(kafka_bootstrap, sink, JSON.decode_one, len(expected))
    stats = run.stop()

    got = [JSON.decode_one(r.value) for r in read_committed_records(kafka_bootstrap, sink)]
    assert sorted(got, key=_key) == expected
    assert any(r["pay"] is None for r in got)  # unpaid orders, emitted on the watermark
    assert stats.restarts == 1
