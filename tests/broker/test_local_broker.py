"""The local broker: a real JVM broker started, used transactionally, stopped, bounced."""

from __future__ import annotations

import os
import signal
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from laminar_kafka.cli.main import main
from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker import LocalBroker
from laminar_kafka.local.broker.jars import ensure_jars, render_pom, require_java, require_tool
from laminar_kafka.local.processes.groups import wait_exit
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """A LocalBroker in a fresh home (the jar cache is shared); stopped even if a test fails."""
    local = LocalBroker(tmp_path / "home")
    try:
        yield local
    finally:
        local.stop()


def _produce_transactions(bootstrap: str, topic: str) -> None:
    """Commit a, b, c; abort x; commit d."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"test-{uuid.uuid4().hex}"}
    )
    producer.init_transactions(30)
    for values, commit in (([b"a", b"b", b"c"], True), ([b"x"], False), ([b"d"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value)
        if commit:
            producer.commit_transaction(30)
        else:
            assert producer.flush(30) == 0  # in the log, and no abort racing AddPartitionsToTxn
            producer.abort_transaction(30)


def _read_committed_until(bootstrap: str, topic: str, last: bytes) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen: list[bytes] = []
    try:
        for _ in range(300):  # bounded: at most 300 polls of 0.1 s
            msg = consumer.poll(0.1)
            if msg is None or msg.error() is not None:
                continue
            value = msg.value()
            assert isinstance(value, bytes)
            seen.append(value)
            if value == last:
                break
    finally:
        consumer.close()
    return seen


def test_start_transact_stop_leaves_no_process(broker: LocalBroker) -> None:
    assert broker.status() is None

    info = broker.start()
    assert info.bootstrap.startswith("127.0.0.1:")
    assert info.home == broker.home
    assert broker.status() == info
    assert broker.start() == info  # idempotent: the same broker, not a second one
    assert LocalBroker(broker.home).status() == info  # the home, not the object, is the truth

    with TopicFactory(info.bootstrap) as topics:
        topic = topics.create("txn")
        _produce_transactions(info.bootstrap, topic)
        assert _read_committed_until(info.bootstrap, topic, b"d") == [b"a", b"b", b"c", b"d"]

    assert broker.stop() is True
    assert _process_gone(info.pid)
    assert broker.status() is None
    assert not (broker.home / "broker.pid").exists()
    assert broker.stop() is False
    assert info.log_file.stat().st_size > 0


def test_start_reports_a_broker_that_dies(broker: LocalBroker) -> None:
    # Storage that claims another node id: the broker refuses it and exits.
    data = broker.home / "data"
    data.mkdir(parents=True)
    (data / "meta.properties").write_text(
        "version=1\nnode.id=7\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n"
        "directory.id=AAAAAAAAAAAAAAAAAAAAAQ\n",
        encoding="utf-8",
    )
    with pytest.raises(BrokerError, match="exited with code") as caught:
        broker.start()
    assert "node" in str(caught.value).lower()
    assert broker.status() is None
    assert not (broker.home / "broker.pid").exists()


def test_cli_start_status_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "cli-home"
    monkeypatch.setenv("LAMINAR_KAFKA_HOME", str(home))
    try:
        assert main(["broker", "status"]) == 3
        assert "not running" in capsys.readouterr().out

        assert main(["broker", "start"]) == 0
        started = capsys.readouterr().out.strip().splitlines()
        assert started[-1].startswith("bootstrap=127.0.0.1:")

        assert main(["broker", "status"]) == 0
        status = capsys.readouterr().out
        assert "running" in status and str(home) in status
        assert status.strip().splitlines()[-1] == started[-1]
        info = LocalBroker(home).status()
        assert info is not None

        assert main(["broker", "stop"]) == 0
        assert "stopped" in capsys.readouterr().out
        assert _process_gone(info.pid)
        assert main(["broker", "status"]) == 3
    finally:
        LocalBroker(home).stop()


def test_missing_java_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no java, no mvn
    with pytest.raises(BrokerError, match="java") as caught:
        require_java()
    assert "install" in str(caught.value)
    with pytest.raises(BrokerError, match="mvn") as caught:
        require_tool("mvn")
    assert "Maven" in str(caught.value)


def test_missing_maven_fails_the_fetch_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("LAMINAR_KAFKA_CACHE", str(tmp_path / "cache"))
    with pytest.raises(BrokerError, match="mvn"):
        ensure_jars("4.1.1")
    assert not (tmp_path / "cache" / "kafka-4.1.1" / "lib").exists()

    # The CLI turns it into one `error:` line and exit code 1, no traceback.
    assert main(["broker", "fetch"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: `mvn` was not found")
    assert "Traceback" not in err


def test_pom_puts_slf4j_2_first() -> None:
    pom = render_pom("4.1.1")
    assert pom.index("slf4j-api") < pom.index("kafka_2.13")
    assert "<version>4.1.1</version></dependency>" in pom


def test_fetch_fills_a_fresh_cache_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMINAR_KAFKA_CACHE", str(tmp_path / "cache"))
    lib = ensure_jars("4.1.1")
    assert lib == tmp_path / "cache" / "kafka-4.1.1" / "lib"
    names = {jar.name for jar in lib.glob("*.jar")}
    assert "kafka_2.13-4.1.1.jar" in names
    assert {n for n in names if n.startswith("slf4j-api-")} == {"slf4j-api-2.0.17.jar"}
    assert not list(lib.parent.glob(".fetch-*"))  # the staging directory is gone
    assert ensure_jars("4.1.1") == lib  # cached: no second fetch


def _kill_hard(broker: LocalBroker) -> int:
    """SIGKILL the running broker of `broker`'s home, as a crash would; its pid."""
    info = broker.status()
    assert info is not None
    os.kill(info.pid, signal.SIGKILL)
    assert wait_exit(info.pid, 30), f"broker pid {info.pid} survived SIGKILL"
    assert broker.status() is None
    return info.pid


def test_a_broker_killed_hard_comes_back_on_its_address(broker: LocalBroker) -> None:
    first = broker.start()
    with TopicFactory(first.bootstrap) as topics:
        topic = topics.create("bounce")
        # A client connected at the kill, as a pipeline's would be: its connections
        # leave the broker's port in TIME_WAIT, which must not count as taken.
        producer = Producer({"bootstrap.servers": first.bootstrap, "acks": "all"})
        producer.produce(topic, b"before")
        assert producer.flush(30) == 0
        killed = _kill_hard(broker)

        again = broker.start()
        assert again.pid != killed
        assert again.bootstrap == first.bootstrap
        # The same client, never told of the restart, reaches the new process.
        producer.produce(topic, b"after")
        assert producer.flush(60) == 0
        assert _read_committed_until(first.bootstrap, topic, b"after") == [b"before", b"after"]


def test_a_taken_port_leads_to_fresh_ports(broker: LocalBroker) -> None:
    first = broker.start()
    assert broker.stop() is True
    port = int(first.bootstrap.rpartition(":")[2])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        again = broker.start()
        assert again.bootstrap != first.bootstrap
        assert again.bootstrap.startswith("127.0.0.1:")
        with TopicFactory(again.bootstrap) as topics:
            topics.create("fresh")  # it answers there
    # The fresh ports are the ones remembered: the next start reuses them.
    broker.stop()
    assert broker.start().bootstrap == again.bootstrap
