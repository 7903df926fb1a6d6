"""Consumer lag: the arithmetic alone, then the poller against the real broker (no Spark)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from laminar_kafka import AvroFormat, Pipeline
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey, consumer_group
from laminar_kafka.metrics import LagPoller, partition_lag
from laminar_kafka.runtime.driver.events import CheckpointCommitted, GenerationStarted
from laminar_kafka.testing import TopicFactory


@pytest.mark.parametrize(
    ("low", "high", "committed", "start_from", "lag"),
    [
        (0, 100, 60, "earliest", 40),
        (0, 100, 100, "earliest", 0),
        (80, 100, 60, "earliest", 20),  # retention deleted records below the committed offset
        (0, 100, None, "earliest", 100),  # nothing committed yet: everything retained is ahead
        (10, 100, None, "earliest", 90),
        (0, 100, None, "latest", None),  # starts at the end: unknown until the first checkpoint
        (0, 100, 120, "earliest", 0),  # never negative
    ],
)
def test_partition_lag(
    low: int, high: int, committed: int | None, start_from: str, lag: int | None
) -> None:
    assert partition_lag(low, high, committed, start_from) == lag


def _produce(bootstrap: str, topic: str, per_partition: Mapping[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, n in per_partition.items():
        for i in range(n):
            producer.produce(topic, f"r{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def _commit(bootstrap: str, pipeline: str, offsets: Mapping[PartitionKey, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": consumer_group(pipeline)})
    try:
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        consumer.commit(offsets=tps, asynchronous=False)
    finally:
        consumer.close()


@pytest.mark.integration
def test_the_poller_reads_end_offsets_less_committed_offsets(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    source = topic_factory.create("lag", partitions=2)
    name = "lag-" + source[-8:]
    pipeline = Pipeline(name)
    pipeline.source(source, value_format=AvroFormat.from_schema("order")).sink(source + "-out")
    readings: list[Mapping[PartitionKey, int]] = []
    poller = LagPoller.for_pipeline(
        pipeline,
        KafkaConnection(kafka_bootstrap),
        on_update=lambda lags, _at: readings.append(lags),
    )
    try:
        _produce(kafka_bootstrap, source, {0: 30, 1: 12})
        assert poller.poll_once() == {(source, 0): 30, (source, 1): 12}
        assert poller.total == 42
        _commit(kafka_bootstrap, name, {(source, 0): 25, (source, 1): 12})
        assert poller.poll_once() == {(source, 0): 5, (source, 1): 0}
        assert poller.total == 5
        assert readings[-1] == {(source, 0): 5, (source, 1): 0}
    finally:
        poller.close()


@pytest.mark.integration
def test_a_missing_source_topic_is_logged_once_and_leaves_the_lag_unknown(
    kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    poller = LagPoller(KafkaConnection(kafka_bootstrap), "nope", {"no-such-topic-4c1e": "earliest"})
    poller.total = 3
    with caplog.at_level(logging.WARNING, logger="laminar_kafka.metrics"):
        assert poller.poll_once() is None
        assert poller.poll_once() is None
    poller.close()
    assert poller.total is None
    assert caplog.text.count("cannot read the consumer lag") == 1
    assert "no-such-topic-4c1e" in caplog.text


@pytest.mark.integration
def test_the_background_thread_starts_with_the_first_generation_and_stops(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    source = topic_factory.create("lag", partitions=1)
    _produce(kafka_bootstrap, source, {0: 4})
    poller = LagPoller(KafkaConnection(kafka_bootstrap), "bg-" + source[-8:], {source: "earliest"})
    poller.on_event(CheckpointCommitted(1, 1, 0.1))
    assert poller.total is None
    poller.on_event(GenerationStarted(1, 1, 1.0))
    poller.on_event(GenerationStarted(2, 1, 1.0))  # started once
    try:
        deadline = time.monotonic() + 30
        while poller.total is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert poller.total == 4
    finally:
        poller.close()


@pytest.mark.integration
def test_internal_topics_are_read_too_and_left_out_of_the_total(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    source = topic_factory.create("lag", partitions=1)
    name = "lag2-" + source[-8:]
    pipeline = Pipeline(name)
    pipeline.source(source).key_by("c", name="by-c", partitions=2).count().sink(source + "-out")
    (internal,) = {f.source.topic for f in pipeline.flows if f.source.internal}
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(internal, num_partitions=2)])[internal].result(30)
    poller = LagPoller.for_pipeline(pipeline, KafkaConnection(kafka_bootstrap))
    try:
        _produce(kafka_bootstrap, source, {0: 6})
        _produce(kafka_bootstrap, internal, {0: 5})
        _commit(kafka_bootstrap, name, {(internal, 0): 2})
        assert poller.poll_once() == {(source, 0): 6, (internal, 0): 3, (internal, 1): 0}
        assert poller.total == 6  # what the pipeline has yet to read from its sources
    finally:
        poller.close()
        admin.delete_topics([internal])[internal].result(30)
