"""The local schema registry: a real Apicurio Registry started, used through its
Confluent-compatible API, and stopped; and a start that dies, reported with its log."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.errors import RegistryError
from laminar_kafka.local.processes.groups import wait_exit
from laminar_kafka.local.registry import LocalRegistry

SCHEMA = {"type": "record", "name": "P", "fields": [{"name": "x", "type": "long"}]}


def _call(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=10) as got:
        return json.loads(got.read())


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[LocalRegistry]:
    """A LocalRegistry in a fresh home (the build is shared); stopped even if a test fails."""
    local = LocalRegistry(tmp_path / "home")
    try:
        yield local
    finally:
        local.stop()


def test_start_register_read_stop(registry: LocalRegistry) -> None:
    info = registry.start()
    assert info.url.startswith("http://127.0.0.1:") and info.url.endswith("/apis/ccompat/v7")
    assert registry.status() == info
    assert registry.start().pid == info.pid  # already running: the same registry

    registered = _call(f"{info.url}/subjects/p-value/versions", {"schema": json.dumps(SCHEMA)})
    assert _call(f"{info.url}/subjects") == ["p-value"]
    fetched = _call(f"{info.url}/schemas/ids/{registered['id']}")
    assert json.loads(fetched["schema"]) == SCHEMA

    assert registry.stop() is True
    assert wait_exit(info.pid, 5.0)
    assert registry.status() is None and not registry.pid_file.exists()
    assert registry.stop() is False


def test_a_start_whose_process_dies_reports_the_log_tail(tmp_path: Path) -> None:
    broken = tmp_path / "broken-runner.jar"
    broken.write_bytes(b"not a jar")
    registry = LocalRegistry(tmp_path / "home", runner=broken)
    with pytest.raises(RegistryError) as info:
        registry.start(timeout_s=60)
    message = str(info.value)
    assert "local schema registry exited with code 1 while starting" in message
    assert "Invalid or corrupt jarfile" in message and str(registry.log_file) in message
    assert registry.status() is None
    assert not registry.pid_file.exists() and not registry.state_file.exists()
