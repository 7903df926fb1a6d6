"""The compose files' broker settings form a cluster and serve transactions.

No Docker engine here: each compose file's Kafka services are started with
the local Kafka jars, with their own `KAFKA_*` settings and `CLUSTER_ID`, only
moved onto loopback ports (tests/broker/compose_brokers.py). The host's
listener and the containers' listener both answer, each advertising its own
addresses; a transaction commits and an aborted one stays invisible to
read_committed readers.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from laminar_kafka.local.broker.cluster import await_brokers
from laminar_kafka.testing.broker import TopicFactory
from laminar_kafka.testing.orders import read_committed
from tests.broker.compose_brokers import ComposeBroker, compose_nodes, start_together
from tests.broker.compose_files import COMPOSE_FILES, load_compose

pytestmark = pytest.mark.integration

HOST_LISTENER = "PLAINTEXT"
"""The listener both compose files publish to the host."""
CONTAINER_LISTENER = "INTERNAL"
"""The listener both compose files give containers of their network."""


def _advertised(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    brokers = admin.list_topics(timeout=20).brokers.values()
    return {f"{b.host}:{b.port}" for b in brokers}


def _replicas(bootstrap: str, topic: str, timeout_s: float = 20.0) -> list[int]:
    """Partition 0's replicas, once the broker asked knows the new topic's partitions
    (metadata right after a create may list the topic with none yet)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while True:
        found = admin.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if found is not None and 0 in found.partitions:
            return list(found.partitions[0].replicas)
        assert time.monotonic() < deadline, f"{topic} has no partition 0 after {timeout_s} s"
        time.sleep(0.05)  # the poll's pace, not a guess at when it holds


def _transactions(bootstrap: str, topic: str) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx", "log_level": 3}
    )
    producer.init_transactions(30)
    for values, commit in ((["a0", "a1"], False), (["c0", "c1", "c2"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value.encode())
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            producer.abort_transaction(30)


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_compose_brokers_form_a_cluster_and_serve_transactions(path: Path, tmp_path: Path) -> None:
    nodes = compose_nodes(load_compose(path))
    brokers = [ComposeBroker(tmp_path / node.service, node) for node in nodes]
    host = ",".join(node.listener(HOST_LISTENER) for node in nodes)
    internal = {node.listener(CONTAINER_LISTENER) for node in nodes}
    with start_together(brokers, timeout_s=90):
        await_brokers(host, len(nodes), 60)
        # Each listener advertises its own addresses: a client on the host is sent to
        # the host's, a container to the compose network's.
        assert _advertised(host) == set(host.split(","))
        assert _advertised(sorted(internal)[0]) == internal
        with TopicFactory(host) as topics:
            topic = topics.create(prefix="compose")  # replication: the file's default
            assert len(_replicas(host, topic)) == len(nodes)
            _transactions(host, topic)
            assert read_committed(host, topic, bytes, timeout_s=30) == [b"c0", b"c1", b"c2"]
