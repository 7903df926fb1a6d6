"""Helpers for testing pipelines against a real Kafka broker.

`session_bootstrap()` gives a test session a broker (an existing one, a
container, or a local one it starts); `TopicFactory` gives each test its own
topics and deletes them afterwards.
"""

from laminar_kafka.testing.broker import TopicFactory, docker_available, session_bootstrap

__all__ = ["TopicFactory", "docker_available", "session_bootstrap"]
