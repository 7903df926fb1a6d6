"""A task's producer puts a keyed record where murmur2 of its key says, as the Java
clients, Kafka Streams and a join's table lookup expect (librdkafka's own default
is CRC32, which places about half the keys elsewhere)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from laminar_kafka.kafka.clients import KafkaConnection, transactional_producer_settings
from laminar_kafka.operators.partitioning import PARTITIONERS
from laminar_kafka.testing.broker import TopicFactory

PARTITIONS = 4
KEYS = [f"customer-{i}".encode() for i in range(40)]


def test_the_default_is_murmur2_and_a_user_setting_wins() -> None:
    settings = transactional_producer_settings(KafkaConnection("b:9092"), "t", 60_000)
    assert settings["partitioner"] == "murmur2_random"
    mine = KafkaConnection("b:9092", {"partitioner": "consistent_random"})
    assert transactional_producer_settings(mine, "t", 60_000)["partitioner"] == "consistent_random"


@pytest.mark.integration
def test_keyed_records_land_in_their_murmur2_partition(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("sink-partitioner", partitions=PARTITIONS)
    kafka = KafkaConnection(kafka_bootstrap)
    producer = Producer(transactional_producer_settings(kafka, f"{topic}-txn", 60_000))
    producer.init_transactions(30)
    producer.begin_transaction()
    for key in KEYS:
        producer.produce(topic, value=b"v", key=key)
    producer.commit_transaction(30)

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": f"{topic}-check",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    placed: dict[bytes, int] = {}
    while len(placed) < len(KEYS):
        message = consumer.poll(10)
        assert message is not None, f"only {len(placed)} of {len(KEYS)} records read"
        if message.error() is None:
            placed[message.key()] = message.partition()
    consumer.close()

    murmur2 = PARTITIONERS["murmur2"]
    assert placed == {key: murmur2(key, PARTITIONS) for key in KEYS}
    crc32 = PARTITIONERS["crc32"]  # the check could fail: CRC32 places these keys elsewhere
    assert placed != {key: crc32(key, PARTITIONS) for key in KEYS}
