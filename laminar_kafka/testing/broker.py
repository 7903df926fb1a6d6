"""A Kafka broker and throwaway topics for tests, ours and our users'.

`session_bootstrap()` picks where a test session's broker comes from, in order:

1. `$LAMINAR_KAFKA_BOOTSTRAP`, when set: an existing broker, left alone;
2. a Kafka container (`kafka_container.py`: apache/kafka of the local broker's
   release, with its settings), when a Docker engine answers;
3. a `LocalBroker` (Kafka jars on the machine's Java) in a temporary home.

Either way the broker must run transactions on one node, so the
transaction-log replication settings are 1 wherever we start it.

`TopicFactory` creates uniquely named topics, waits until they are usable and
deletes them afterwards, so tests never share or reuse a topic.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.local import LocalBroker
from laminar_kafka.testing.kafka_container import start_container

__all__ = ["TopicFactory", "docker_available", "session_bootstrap"]

log = logging.getLogger("laminar_kafka.testing")

_POLL_INTERVAL_S = 0.05
_DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock"


def session_bootstrap() -> tuple[str, Callable[[], None]]:
    """Return a bootstrap address and a callable that releases whatever was started for it."""
    env = os.environ.get("LAMINAR_KAFKA_BOOTSTRAP")
    if env:
        log.info("using the Kafka broker at $LAMINAR_KAFKA_BOOTSTRAP=%s", env)
        return env, _nothing_to_release
    if docker_available():
        return start_container()
    return _local_bootstrap()


def docker_available(timeout_s: float = 3.0) -> bool:
    """Whether a Docker engine answers a ping.

    A unix socket (the usual case) is pinged directly; other hosts (`tcp://`,
    `ssh://`) are asked through the docker package that testcontainers brings.
    """
    host = os.environ.get("DOCKER_HOST") or f"unix://{_DEFAULT_DOCKER_SOCKET}"
    if host.startswith("unix://"):
        return _ping_unix_socket(host.removeprefix("unix://"), timeout_s)
    try:
        docker: Any = importlib.import_module("docker")
        client = docker.DockerClient(base_url=host, timeout=int(timeout_s))
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no package, refused, timed out, bad URL: all mean "no Docker"
        return False


def _ping_unix_socket(path: str, timeout_s: float) -> bool:
    if not os.path.exists(path):
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout_s)
            sock.connect(path)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            status_line = sock.recv(256).split(b"\r\n", 1)[0]
    except OSError:
        return False
    return status_line.startswith(b"HTTP/") and b" 200" in status_line


def _nothing_to_release() -> None:
    return None


def _local_bootstrap() -> tuple[str, Callable[[], None]]:
    home = Path(tempfile.mkdtemp(prefix="laminar-kafka-broker-"))
    broker = LocalBroker(home)
    try:
        info = broker.start()
    except BaseException:
        shutil.rmtree(home, ignore_errors=True)
        raise

    def release() -> None:
        try:
            broker.stop()
        finally:
            shutil.rmtree(home, ignore_errors=True)

    return info.bootstrap, release


KEEP_EVERY_RECORD = {"retention.ms": "-1", "min.compaction.lag.ms": str(2**63 - 1)}
"""A test topic's defaults. Test records often carry event times years past, and a
broker judges retention and compaction lag by record timestamps: with its defaults
it would delete (or compact) them within minutes, mid-test."""


class TopicFactory:
    """Creates uniquely named topics on a broker and deletes them in `cleanup()`.

    Topics keep every record (`KEEP_EVERY_RECORD`) unless `config` says otherwise.
    `client_config` adds settings to the admin client (security, timeouts) for
    a broker that needs them.
    """

    def __init__(
        self,
        bootstrap: str,
        timeout_s: float = 30.0,
        client_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        # log_level 3: an admin client logs an info line each time it is closed.
        self._config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "log_level": 3,
            **(client_config or {}),
        }
        self._admin_client: AdminClient | None = None
        self._created: list[str] = []

    @property
    def created(self) -> tuple[str, ...]:
        """Names of the topics created so far and not yet cleaned up."""
        return tuple(self._created)

    def create(
        self,
        prefix: str = "t",
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
    ) -> str:
        """Create topic `<prefix>-<random>`; return its name once every partition has a leader."""
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        settings = {**KEEP_EVERY_RECORD, **(config or {})}
        topic = NewTopic(name, num_partitions=partitions, config=settings)
        futures = self._admin.create_topics([topic], request_timeout=self.timeout_s)
        self._result(futures[name], f"create topic {name}")
        self._created.append(name)
        self._await_leaders(name, partitions)
        return name

    def track(self, *names: str) -> None:
        """Delete these topics too at cleanup: topics that the code under test creates."""
        self._created.extend(n for n in names if n not in self._created)

    def cleanup(self) -> None:
        """Delete every topic this factory created; topics already gone are fine.

        The admin client is released too (a later `create` makes a new one), so
        it does not keep reconnecting to a broker that a session stops next.
        """
        if not self._created:
            self._admin_client = None
            return
        names, self._created = self._created, []
        futures = self._admin.delete_topics(names, request_timeout=self.timeout_s)
        failures = []
        for name, future in futures.items():
            try:
                future.result(timeout=self.timeout_s)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    failures.append(f"{name}: {exc}")
            except TimeoutError:
                failures.append(f"{name}: no answer within {self.timeout_s:.0f} s")
        self._admin_client = None
        if failures:
            raise BrokerError("could not delete test topics: " + "; ".join(failures))

    def __enter__(self) -> TopicFactory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cleanup()

    @property
    def _admin(self) -> AdminClient:
        if self._admin_client is None:
            self._admin_client = AdminClient(self._config)
        return self._admin_client

    def _await_leaders(self, name: str, partitions: int) -> None:
        """Metadata can lag the CreateTopics answer; wait until the broker serves the topic."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                meta = self._admin.list_topics(topic=name, timeout=self.timeout_s).topics.get(name)
            except KafkaException:
                meta = None
            if (
                meta is not None
                and meta.error is None
                and len(meta.partitions) == partitions
                and all(p.leader >= 0 for p in meta.partitions.values())
            ):
                return
            if time.monotonic() >= deadline:
                raise BrokerError(f"topic {name} has no leader for every partition yet")
            time.sleep(_POLL_INTERVAL_S)  # metadata has no push notification: poll it

    def _result(self, future: Future[None], what: str) -> None:
        try:
            future.result(timeout=self.timeout_s)
        except (KafkaException, TimeoutError) as exc:
            raise BrokerError(f"could not {what}: {exc}") from exc
