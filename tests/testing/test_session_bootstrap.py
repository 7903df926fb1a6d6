"""session_bootstrap(): an existing broker when named, else Docker, else a local broker."""

from __future__ import annotations

import socket
import tempfile
import threading
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from laminar_kafka.testing import docker_available, session_bootstrap

pytestmark = pytest.mark.integration


def test_named_broker_is_used_and_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMINAR_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    bootstrap, release = session_bootstrap()
    assert bootstrap == "127.0.0.1:1"
    release()  # nothing was started, nothing to stop


def test_docker_probe_answers_only_for_a_live_engine(tmp_path: Path) -> None:
    assert docker_available() in (True, False)
    missing = tmp_path / "missing.sock"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_HOST", f"unix://{missing}")
        assert docker_available() is False

    # A socket that answers /_ping like an engine does.
    path = tmp_path / "engine.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")

        thread = threading.Thread(target=answer)
        thread.start()
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("DOCKER_HOST", f"unix://{path}")
            assert docker_available() is True
        thread.join(timeout=10)


def _answers(bootstrap: str) -> bool:
    """One metadata request; the client is gone when this returns (no reconnect noise later)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return bool(admin.list_topics(timeout=30).brokers)


def test_local_broker_when_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAMINAR_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the broker's home goes here

    bootstrap, release = session_bootstrap()
    try:
        assert _answers(bootstrap)
        (home,) = tmp_path.glob("laminar-kafka-broker-*")
        assert (home / "broker.pid").exists()
    finally:
        release()

    assert not home.exists()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            assert str(home) not in cmdline.read_text(errors="replace")
        except OSError:
            continue  # a process that ended while we looked
