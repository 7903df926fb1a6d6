"""`read_committed_records` reads a topic from its log start: after a purge
(`DeleteRecords`, as the runner does to internal topics) it returns what is left,
without the out-of-range fetch (and librdkafka's warning) a read from offset 0 meets."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from laminar_kafka.kafka.admin import delete_records_below
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import read_committed_records

pytestmark = pytest.mark.integration


def test_a_purged_topic_is_read_from_its_log_start_without_an_offset_reset(
    kafka_bootstrap: str, topic_factory: TopicFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    topic = topic_factory.create("purged", partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(6):
        producer.produce(topic, str(n).encode(), partition=n % 2)
    assert producer.flush(30) == 0
    delete_records_below(KafkaConnection(kafka_bootstrap), {(topic, 0): 2, (topic, 1): 3})
    capfd.readouterr()

    records = read_committed_records(kafka_bootstrap, topic)

    assert [(r.partition, r.offset, r.value) for r in records] == [(0, 2, b"4")]
    assert "Offset out of range" not in capfd.readouterr().err
