"""`laminar-kafka broker start --sasl-scram`: a secured local broker a user can try.

Started, used and stopped through the command line: the client settings it
prints the path of let confluent-kafka in (create a topic, write, read back);
the same user with a wrong password is refused.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from laminar_kafka.cli.main import main

pytestmark = pytest.mark.integration


def read_properties(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key: value for key, value in pairs}


def printed(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The `key=value` lines a command printed."""
    lines = capsys.readouterr().out.splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and ": " not in line)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("scram-broker")
    try:
        yield path
    finally:
        main(["broker", "stop", "--home", str(path)])


def test_a_secured_broker_started_from_the_command_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["broker", "start", "--home", str(home), "--sasl-scram"]) == 0
    shown = printed(capsys)
    bootstrap, properties = shown["bootstrap"], Path(shown["client-config-file"])
    assert shown["sasl"].startswith("SASL_PLAINTEXT/SCRAM-SHA-512 user=admin")
    assert properties == home / "client.properties"
    assert properties.stat().st_mode & 0o077 == 0  # the password is the owner's only
    client = {"bootstrap.servers": bootstrap, **read_properties(properties)}
    assert client["sasl.username"] == "admin" and client["sasl.password"]

    topic = f"scram-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(client)
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    producer = Producer(client)
    producer.produce(topic, b"secured")
    assert producer.flush(30) == 0
    consumer = Consumer({**client, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        message = None
        while message is None or message.error() is not None:
            assert time.monotonic() < deadline, "the record was not read back"
            message = consumer.poll(1.0)
        assert message.value() == b"secured"
    finally:
        consumer.close()

    # status tells the same; a second start is the running broker
    assert main(["broker", "status", "--home", str(home)]) == 0
    assert printed(capsys)["client-config-file"] == str(properties)
    assert main(["broker", "start", "--home", str(home)]) == 0
    assert printed(capsys)["bootstrap"] == bootstrap


def test_a_wrong_password_is_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["broker", "status", "--home", str(home)]) == 0
    bootstrap = printed(capsys)["bootstrap"]
    errors: list[KafkaError] = []
    settings = read_properties(home / "client.properties")
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            **settings,
            "sasl.password": "wrong",
            "error_cb": errors.append,
        }
    )
    deadline = time.monotonic() + 30
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        assert time.monotonic() < deadline, f"no authentication error: {errors}"
        producer.poll(0.5)


def test_a_plain_home_cannot_become_secured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.properties").write_text("version=1\n")
    assert main(["broker", "start", "--home", str(tmp_path), "--sasl-scram"]) == 1
    assert "formatted without SASL" in capsys.readouterr().err
