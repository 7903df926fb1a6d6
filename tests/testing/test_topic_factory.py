"""TopicFactory: unique topics that exist when `create` returns and are gone after cleanup."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient

from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration


def test_create_and_cleanup(kafka_bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    factory = TopicFactory(kafka_bootstrap)
    first = factory.create("orders", partitions=3, config={"cleanup.policy": "compact"})
    second = factory.create("orders")
    assert first != second
    assert first.startswith("orders-")
    assert factory.created == (first, second)

    meta = admin.list_topics(timeout=10).topics
    assert len(meta[first].partitions) == 3
    assert len(meta[second].partitions) == 1

    factory.cleanup()
    assert not factory.created
    remaining = set(admin.list_topics(timeout=10).topics)
    assert first not in remaining and second not in remaining
    factory.cleanup()  # nothing left to delete: a no-op


def test_fixture_gives_usable_topics(topic_factory: TopicFactory) -> None:
    topic = topic_factory.create()
    assert topic in topic_factory.created
