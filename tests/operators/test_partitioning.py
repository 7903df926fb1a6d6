"""Key → partition as Kafka's producers compute it: published vectors and a real broker.

Sources of the expected numbers:
- apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java,
  `testMurmur2`: `Utils.murmur2` of six inputs, as signed Java ints.
- dpkp/kafka-python test/test_partitioner.py, `test_murmur2_java_compatibility`:
  "compare with output from Kafka's org.apache.kafka.clients.producer.Partitioner",
  i.e. `Utils.toPositive(Utils.murmur2(key)) % 1000`.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from laminar_kafka.operators.partitioning import (
    LIBRDKAFKA_PARTITIONER,
    PARTITIONERS,
    crc32_partition,
    murmur2,
    murmur2_partition,
)
from laminar_kafka.testing import TopicFactory

KAFKA_UTILS_TEST_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}
JAVA_PARTITION_OF_1000 = {
    b"": 681,
    b"a": 524,
    b"ab": 434,
    b"abc": 107,
    b"123456789": 566,
    b"\x00 ": 742,
}
PARTITIONS = 6
KEYS = [
    *KAFKA_UTILS_TEST_MURMUR2,
    *(f"customer-{i}".encode() for i in range(40)),
    *(b"k" * n for n in range(1, 9)),  # every tail length of the 4-byte blocks
    "ключ-é".encode(),
    b"\xff\xfe\x80\x81\x7f",  # bytes with the high bit set (Java bytes are signed)
]
TIMEOUT_S = 30.0


@pytest.mark.parametrize(("data", "expected"), KAFKA_UTILS_TEST_MURMUR2.items())
def test_murmur2_matches_kafka_utils(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@pytest.mark.parametrize(("key", "expected"), JAVA_PARTITION_OF_1000.items())
def test_partition_matches_java_producer(key: bytes, expected: int) -> None:
    assert murmur2_partition(key, 1000) == expected


def test_negative_hash_is_made_positive_by_masking_not_abs() -> None:
    # murmur2("21") is negative: toPositive masks the sign bit, abs() would differ.
    h = KAFKA_UTILS_TEST_MURMUR2[b"21"]
    assert murmur2_partition(b"21", 7) == (h & 0x7FFFFFFF) % 7 != abs(h) % 7


def test_partitions_are_in_range_and_the_table_names_both() -> None:
    for key in KEYS:
        for n in (1, 2, 6, 13):
            assert 0 <= murmur2_partition(key, n) < n
            assert 0 <= crc32_partition(key, n) < n
    assert {"murmur2": murmur2_partition, "crc32": crc32_partition} == PARTITIONERS
    assert set(LIBRDKAFKA_PARTITIONER) == set(PARTITIONERS)


def _read_back(bootstrap: str, topic: str, count: int) -> list[Message]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-check"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: list[Message] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(got) < count:
            assert time.monotonic() < deadline, f"read {len(got)} of {count}"
            for m in consumer.consume(count, 0.5):
                assert m.error() is None, m.error()
                got.append(m)
    finally:
        consumer.close()
    return got


@pytest.mark.integration
@pytest.mark.parametrize("name", ["murmur2", "crc32"])
def test_librdkafka_producer_puts_each_key_where_we_compute(
    name: str, kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create(prefix=f"partitioner-{name}", partitions=PARTITIONS)
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "partitioner": LIBRDKAFKA_PARTITIONER[name]}
    )
    errors: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(err)

    for key in KEYS:
        producer.produce(topic, b"v", key=key, on_delivery=delivered)
    assert producer.flush(TIMEOUT_S) == 0
    assert not errors

    landed = {m.key(): m.partition() for m in _read_back(kafka_bootstrap, topic, len(KEYS))}
    expected = {key: PARTITIONERS[name](key, PARTITIONS) for key in KEYS}
    assert landed == expected
    assert len(set(expected.values())) == PARTITIONS  # the keys exercise every partition
