"""`session_registry()`: a registry named by the environment is used as it is, and left alone."""

from __future__ import annotations

import pytest

from laminar_kafka.testing import session_registry
from laminar_kafka.testing.registry import REGISTRY_URL_ENV


def test_the_environment_names_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REGISTRY_URL_ENV, "http://registry.example:8081/apis/ccompat/v7")
    url, release = session_registry()
    assert url == "http://registry.example:8081/apis/ccompat/v7"
    release()  # nothing was started: nothing to stop
