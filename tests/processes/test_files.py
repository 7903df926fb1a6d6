"""Where the local daemons (broker, cluster, registry) keep their homes."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.local.broker.local import default_home as broker_home
from laminar_kafka.local.cluster.files import default_home as cluster_home
from laminar_kafka.local.registry.server import default_home as registry_home


def test_each_daemon_has_its_own_default_home(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("LAMINAR_KAFKA_HOME", "LAMINAR_CLUSTER_HOME", "LAMINAR_REGISTRY_HOME"):
        monkeypatch.delenv(variable, raising=False)
    cache = Path.home() / ".cache" / "laminar-kafka"
    assert (broker_home(), cluster_home(), registry_home()) == (
        cache / "broker",
        cache / "cluster",
        cache / "registry",
    )


def test_the_environment_names_a_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAMINAR_KAFKA_HOME", str(tmp_path / "b"))
    monkeypatch.setenv("LAMINAR_CLUSTER_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("LAMINAR_REGISTRY_HOME", "~/r")
    assert (broker_home(), cluster_home(), registry_home()) == (
        tmp_path / "b",
        tmp_path / "c",
        Path.home() / "r",
    )
