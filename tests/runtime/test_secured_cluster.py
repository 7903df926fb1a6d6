"""A run on a broker with a SASL/SCRAM listener and ACLs, as a secured cluster has them.

One broker for the module (`LocalBroker` with `ScramSecurity`): the admin (a
super user) creates the topics and grants the ACLs that `acl_needs` lists; the
pipeline runs as another user with those and nothing else. Tasks run on
threads (`ThreadExecutor` with the Kafka ports a Spark worker uses): every
request to Kafka is the one a run on Spark makes, from the user's principal.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.cimpl import NewTopic

from laminar_kafka import JsonFormat, Pipeline, RuntimeConfig
from laminar_kafka.errors import IncurableError
from laminar_kafka.kafka.acl_needs import Need, acl_bindings
from laminar_kafka.kafka.clients import KafkaConnection, admin_client
from laminar_kafka.kafka.names import control_topic
from laminar_kafka.local.broker.local import LocalBroker
from laminar_kafka.local.broker.security import ScramSecurity
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.driver.permissions import needs_of
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.runtime.driver.thread_executor import ThreadExecutor
from laminar_kafka.runtime.task.kafka_ports import kafka_ports

pytestmark = pytest.mark.integration

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
RECORDS = 30


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ScramSecurity]]:
    security = ScramSecurity(USERS)
    broker = LocalBroker(tmp_path_factory.mktemp("secured-broker"), security=security)
    info = broker.start()
    try:
        yield info.bootstrap, security
    finally:
        broker.stop()


def doubling(name: str) -> Pipeline:
    p = Pipeline(name)
    (
        p.source(f"{name}-in", value_format=JsonFormat())
        .map(lambda r: {"id": r["id"], "double": r["id"] * 2})
        .sink(f"{name}-out", key="id", value_format=JsonFormat())
    )
    return p


def prepare(
    bootstrap: str,
    security: ScramSecurity,
    pipeline: Pipeline,
    config: RuntimeConfig,
    user: str,
    withheld: tuple[str, str] | None = None,
) -> tuple[Need, ...]:
    """As the admin: the source topic with its records; `user` granted what a run needs
    but the `withheld` (name, operation)."""
    admin = admin_client(KafkaConnection(bootstrap, security.client_config()))
    source = pipeline.source_topics[0]
    for future in admin.create_topics([NewTopic(source, 2, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, **security.client_config()})
    for i in range(RECORDS):
        producer.produce(source, json.dumps({"id": i}).encode(), key=str(i).encode())
    assert producer.flush(30) == 0
    needs = needs_of(config, pipeline, plan_stages(pipeline))
    granted = [
        replace(n, operations=tuple(op for op in n.operations if (n.name, op) != withheld))
        for n in needs
    ]
    for future in admin.create_acls(acl_bindings(granted, f"User:{user}")).values():
        future.result(30)
    return needs


def committed(bootstrap: str, security: ScramSecurity, topic: str) -> list[dict[str, int]]:
    """The committed records of `topic`'s two partitions, read as the admin."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            **security.client_config(),
            "group.id": "verify",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
    out, ended = [], set()
    deadline = time.monotonic() + 60
    try:
        while len(ended) < 2:
            assert time.monotonic() < deadline, f"no end of {topic} within 60 s"
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error():
                ended.add(message.partition())
            else:
                out.append(json.loads(message.value() or b"null"))
    finally:
        consumer.close()
    return out


def test_a_user_with_the_listed_acls_runs_exactly_once(
    secured: tuple[str, ScramSecurity], tmp_path: Path
) -> None:
    bootstrap, security = secured
    pipeline = doubling("granted")
    # The user's settings as a Java client.properties has them: translated for librdkafka.
    java = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="alice" password="alice-secret";',
    }
    config = RuntimeConfig(bootstrap, str(tmp_path), checkpoint_interval_s=0.5, client_config=java)
    prepare(bootstrap, security, pipeline, config, "alice")
    runner = PipelineRunner(pipeline, config, executor=ThreadExecutor(kafka_ports))
    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: _run(runner, errors), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and thread.is_alive():
        if len(committed(bootstrap, security, "granted-out")) >= RECORDS:
            break
        thread.join(0.5)  # the run's own end ends the wait at once
    runner.stop()
    thread.join(120)
    assert not errors, errors
    assert not thread.is_alive()
    out = committed(bootstrap, security, "granted-out")
    assert sorted(r["id"] for r in out) == list(range(RECORDS))  # each once
    assert all(r["double"] == 2 * r["id"] for r in out)


def _run(runner: PipelineRunner, errors: list[BaseException]) -> None:
    try:
        runner.run()
    except BaseException as exc:
        errors.append(exc)


def test_a_user_without_write_on_the_source_is_refused_at_start(
    secured: tuple[str, ScramSecurity], tmp_path: Path
) -> None:
    bootstrap, security = secured
    pipeline = doubling("refused")
    config = RuntimeConfig(bootstrap, str(tmp_path), client_config=security.client_config("bob"))
    source = pipeline.source_topics[0]
    # Everything but WRITE on the source: the barriers could not be written.
    needs = prepare(bootstrap, security, pipeline, config, "bob", withheld=(source, "WRITE"))
    assert any(n.name == source and "WRITE" in n.operations for n in needs)
    runner = PipelineRunner(pipeline, config, executor=ThreadExecutor(kafka_ports))
    with pytest.raises(IncurableError) as refused:
        runner.run()
    message = str(refused.value)
    assert f"WRITE on topic '{source}'" in message
    assert f"--allow-principal User:bob --operation Write --topic '{source}'" in message
    assert message.count(" on topic ") + message.count(" on group ") == 1  # only that
    # Refused before anything was touched: not even the control topic exists.
    admin = admin_client(KafkaConnection(bootstrap, security.client_config()))
    assert control_topic("refused") not in admin.list_topics(timeout=30).topics


def test_a_topic_the_run_creates_is_checked_once_it_exists(
    secured: tuple[str, ScramSecurity], tmp_path: Path
) -> None:
    """CREATE is all that can be asked of a topic before it exists; the rest after."""
    bootstrap, security = secured
    pipeline = doubling("created")
    config = RuntimeConfig(bootstrap, str(tmp_path), client_config=security.client_config("bob"))
    prepare(bootstrap, security, pipeline, config, "bob", withheld=("created-out", "WRITE"))
    runner = PipelineRunner(pipeline, config, executor=ThreadExecutor(kafka_ports))
    with pytest.raises(IncurableError, match="WRITE on topic 'created-out'"):
        runner.run()
    admin = admin_client(KafkaConnection(bootstrap, security.client_config()))
    assert "created-out" in admin.list_topics(timeout=30).topics  # created, then refused
