"""Fixtures shared by every test: one real Kafka broker per session, fresh topics per test.

The broker comes from `laminar_kafka.testing.session_bootstrap()`:
$LAMINAR_KAFKA_BOOTSTRAP if set (CI starts one), else a Kafka container when
Docker answers, else a local broker started for the session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from laminar_kafka.testing import TopicFactory, session_bootstrap

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


# -- Spark -------------------------------------------------------------------------
