"""A schema registry for a test session, ours and our users'.

`session_registry()` picks where it comes from, in order:

1. `$LAMINAR_SCHEMA_REGISTRY_URL`, when set: an existing registry's
   Confluent-compatible API, left alone;
2. a `LocalRegistry` (Apicurio Registry, built from Maven Central on first
   use) in a temporary home, stopped and removed by the release callable.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from laminar_kafka.local.registry.server import LocalRegistry

__all__ = ["REGISTRY_URL_ENV", "session_registry"]

log = logging.getLogger("laminar_kafka.testing")

REGISTRY_URL_ENV = "LAMINAR_SCHEMA_REGISTRY_URL"


def session_registry() -> tuple[str, Callable[[], None]]:
    """A registry's Confluent-compatible URL, and a callable that releases what was started."""
    env = os.environ.get(REGISTRY_URL_ENV)
    if env:
        log.info("using the schema registry at $%s=%s", REGISTRY_URL_ENV, env)
        return env, _nothing_to_release
    home = Path(tempfile.mkdtemp(prefix="laminar-kafka-registry-"))
    registry = LocalRegistry(home)
    try:
        info = registry.start()
    except BaseException:
        shutil.rmtree(home, ignore_errors=True)
        raise

    def release() -> None:
        try:
            registry.stop()
        finally:
            shutil.rmtree(home, ignore_errors=True)

    return info.url, release


def _nothing_to_release() -> None:
    return None
