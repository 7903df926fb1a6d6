"""An as-of join on a real broker and Spark local[4], with the joining task killed by
SIGKILL while trades wait for the table: every trade is joined exactly once with the
price its product had at its time, equal to a plain-Python batch as-of join, though
most price changes are produced after the trades they price."""

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
from laminar_kafka.testing.asof_workload import (
    PriceChange,
    asof_pipeline,
    batch_asof_join,
    price_change,
    ticks,
    trade,
)
from laminar_kafka.testing.join_workload import compare
from laminar_kafka.testing.orders import read_committed_records
from laminar_kafka.testing.run import BackgroundRun

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

JSON = JsonFormat()


def _produce(
    bootstrap: str, trades: tuple[str, range], prices: tuple[str, list[PriceChange]]
) -> None:
    """Trades in partition id % 2, then price changes keyed by product (murmur2, where the
    join looks them up) and stamped with their time."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "partitioner": LIBRDKAFKA_PARTITIONER["murmur2"]}
    )
    topic, ids = trades
    for i in ids:
        producer.produce(topic, JSON.encode_one(trade(i)), partition=i % 2)
    topic, changes = prices
    for key, row, ts in changes:
        value = None if row is None else JSON.encode_one(row)
        producer.produce(topic, value, key.encode(), timestamp=ts)
    assert producer.flush(30) == 0


def test_as_of_join_output_is_exactly_once_across_a_killed_worker(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    trades = topic_factory.create("trades", partitions=2)
    prices = topic_factory.create("prices", 2, {"cleanup.policy": "compact"})
    sink = topic_factory.create(trades + "-priced", 2)
    name = "asof-" + trades[-8:]
    n = 300
    changes = [price_change(j) for j in range(n // 3 + 1)]
    first = [c for c in changes if c[2] <= trade(n // 4)["ts"]]  # up to a quarter of trades
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=1,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
    )
    run = BackgroundRun(asof_pipeline(name, (trades, prices, sink)), config, spark_context)
    # Half the trades, but the table only as far as a quarter of them: the rest wait.
    _produce(kafka_bootstrap, (trades, range(n // 2)), (prices, first))
    run.wait_for_output(kafka_bootstrap, sink, JSON.decode_one, 40)
    victim = pid_dir / f"{name}.g1.t1.pid"  # the joining stage's task
    os.kill(int(victim.read_text()), signal.SIGKILL)
    rest = changes[len(first) :] + ticks(2, n)
    _produce(kafka_bootstrap, (trades, range(n // 2, n)), (prices, rest))
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    run.wait_for_output(kafka_bootstrap, sink, JSON.decode_one, n)
    stats = run.stop()

    got = [JSON.decode_one(r.value) for r in read_committed_records(kafka_bootstrap, sink)]
    assert compare(batch_asof_join([trade(i) for i in range(n)], changes), got) == []
    assert stats.restarts == 1
