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


class _FakeEngine:
    """A unix socket that answers one request with `reply` (None: reads it, stays silent)."""

    def __init__(self, path: Path, reply: bytes | None) -> None:
        self.request = b""
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(1)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._answer, args=(reply,), daemon=True)
        self._thread.start()

    def _answer(self, reply: bytes | None) -> None:
        conn, _ = self._server.accept()
        with conn:
            self.request = conn.recv(1024)
            if reply is not None:
                conn.sendall(reply)
            else:
                self._done.wait(10)  # silent until the probe gave up

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)
        self._server.close()


def _probe(path: Path, reply: bytes | None) -> tuple[bool, bytes]:
    engine = _FakeEngine(path, reply)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("DOCKER_HOST", f"unix://{path}")
            answer = docker_available(timeout_s=0.5)
    finally:
        engine.close()
    return answer, engine.request


def test_docker_probe_answers_only_for_a_live_engine(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sock"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_HOST", f"unix://{missing}")
        assert docker_available() is False

    # A socket that answers /_ping like an engine does.
    pong = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK"
    ok, request = _probe(tmp_path / "engine.sock", pong)
    assert ok is True
    assert request.startswith(b"GET /_ping HTTP/")

    # Something listens, but it is no healthy engine: an error status, or silence.
    failing, _ = _probe(tmp_path / "error.sock", b"HTTP/1.1 500 Internal Server Error\r\n\r\n")
    assert failing is False
    silent, request = _probe(tmp_path / "silent.sock", None)
    assert silent is False and request.startswith(b"GET /_ping")


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
