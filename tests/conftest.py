"""Fixtures shared by every test: one real Kafka broker per session, fresh topics per test.

The broker comes from `laminar_kafka.testing.session_bootstrap()`:
$LAMINAR_KAFKA_BOOTSTRAP if set (CI starts one), else a Kafka container when
Docker answers, else a local broker started for the session. The schema
registry, for the tests that ask for one, comes from `session_registry()`:
$LAMINAR_SCHEMA_REGISTRY_URL if set, else a local one started for the session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.testing import TopicFactory, session_bootstrap, session_registry
from laminar_kafka.testing.object_store import LocalS3

# -- Kafka -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap address of the session's broker; whatever was started is stopped at the end."""
    bootstrap, release = session_bootstrap()
    try:
        yield bootstrap
    finally:
        release()


@pytest.fixture
def topic_factory(kafka_bootstrap: str) -> Iterator[TopicFactory]:
    """Creates uniquely named topics for one test and deletes them after it."""
    factory = TopicFactory(kafka_bootstrap)
    try:
        yield factory
    finally:
        factory.cleanup()


# -- Schema registry ---------------------------------------------------------------


@pytest.fixture(scope="session")
def schema_registry_url() -> Iterator[str]:
    """The Confluent-compatible URL of the session's schema registry; stopped at the end
    if the session started it."""
    url, release = session_registry()
    try:
        yield url
    finally:
        release()


# -- Spark -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pid_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where worker tasks write their pid files (set before Spark starts its workers)."""
    path = tmp_path_factory.mktemp("pids")
    os.environ["LAMINAR_PID_DIR"] = str(path)
    return path


@pytest.fixture(scope="session")
def local_s3() -> Iterator[LocalS3]:
    """An S3 API on loopback (moto's server); its AWS variables go into the environment,
    so that every process started afterwards (Spark's workers too) finds it."""
    server = LocalS3()
    os.environ.update(server.environment())
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(request: pytest.FixtureRequest, local_s3: LocalS3) -> str:
    """A fresh bucket's URL, `s3://laminar-<random>`."""
    # A parameter that asks for a bucket at run time escapes the marking below.
    assert request.node.get_closest_marker("integration"), (
        f"{request.node.nodeid} starts an S3 server: mark it (or its parameter) integration"
    )
    return local_s3.bucket()


@pytest.fixture(scope="session")
def spark_context(pid_dir: Path, local_s3: LocalS3) -> Iterator[Any]:
    """One Spark local[4] context for the session's in-process pipeline runs."""
    from laminar_kafka.runtime.driver.spark_session import spark_context as make

    sc = make("local[4]", "laminar-tests")
    try:
        yield sc
    finally:
        sc.stop()


# Tests that start a JVM (Spark, the schema registry), an S3 server or need the broker
# take seconds each: they belong out of the fast tier (`-m "not integration"`), which
# runs without any of them.
_HEAVY_FIXTURES = {
    "schema_registry_url",
    "registry",
    "spark_context",
    "kafka_bootstrap",
    "local_s3",
    "s3_bucket",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("spark") or fixtures & _HEAVY_FIXTURES:
            item.add_marker(pytest.mark.integration)
