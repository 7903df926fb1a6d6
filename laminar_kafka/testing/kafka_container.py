"""A Kafka container for tests, when a Docker engine answers: the Kafka the local broker runs.

The image is `KAFKA_IMAGE` (apache/kafka of the local broker's release, as the
compose files run), configured as the local single-node broker is
(`local_broker_settings`). testcontainers' own `KafkaContainer` cannot start it:
its start script is written for Confluent's image. So the container is a plain
`DockerContainer`, started the way testcontainers' Kafka modules start theirs:
the host port of the client listener is known only once the container runs, so
the container waits for a start script that advertises that address and then
runs the image's own start, `/etc/kafka/docker/run`.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import tarfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.cluster import await_brokers
from laminar_kafka.local.broker.image_env import KAFKA_IMAGE, env_name, local_broker_settings
from laminar_kafka.local.broker.settings import new_cluster_id

__all__ = ["CLIENT_PORT", "ContainerSpec", "container_spec", "start_container"]

log = logging.getLogger("laminar_kafka.testing")

CLIENT_PORT = 9092
"""The client listener inside the container; Docker publishes it on a free host port."""
BROKER_PORT = 19092
CONTROLLER_PORT = 9093
START_SCRIPT = "/tmp/laminar-kafka-start.sh"
_IMAGE_START = "/etc/kafka/docker/run"


@dataclass(frozen=True)
class ContainerSpec:
    """What the container is started with: image, environment, and the command that waits."""

    image: str
    environment: Mapping[str, str]

    @property
    def command(self) -> list[str]:
        wait = f"while [ ! -f {START_SCRIPT} ]; do sleep 0.1; done; exec sh {START_SCRIPT}"
        return ["sh", "-c", wait]

    def start_script(self, host: str, port: int) -> str:
        """Advertise the client listener at the host's address, then start Kafka."""
        advertised = f"PLAINTEXT://{host}:{port},BROKER://$(hostname):{BROKER_PORT}"
        return f'#!/bin/sh\nexport KAFKA_ADVERTISED_LISTENERS="{advertised}"\nexec {_IMAGE_START}\n'


def container_spec() -> ContainerSpec:
    """A single KRaft node of `KAFKA_IMAGE` with the local broker's settings."""
    node = {
        "CLUSTER_ID": new_cluster_id(),
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": (
            f"PLAINTEXT://:{CLIENT_PORT},BROKER://:{BROKER_PORT},CONTROLLER://:{CONTROLLER_PORT}"
        ),
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
            "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT"
        ),
        "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@localhost:{CONTROLLER_PORT}",
        "KAFKA_LOG_DIRS": "/var/lib/kafka/data",  # the image's data volume, as in compose
    }
    shared = {env_name(key): value for key, value in local_broker_settings().items()}
    return ContainerSpec(image=KAFKA_IMAGE, environment={**shared, **node})


def start_container(timeout_s: float = 180.0) -> tuple[str, Callable[[], None]]:
    """Start the container; return its bootstrap address and a callable that removes it."""
    spec = container_spec()
    core: Any = importlib.import_module("testcontainers.core.container")
    container: Any = core.DockerContainer(spec.image)
    container.with_exposed_ports(CLIENT_PORT).with_command(spec.command)
    for key, value in spec.environment.items():
        container.with_env(key, value)
    log.info("starting a %s container", spec.image)
    started = time.monotonic()
    container.start()
    try:
        host = str(container.get_container_host_ip())
        port = int(container.get_exposed_port(CLIENT_PORT))
        _put_file(container.get_wrapped_container(), START_SCRIPT, spec.start_script(host, port))
        bootstrap = f"{host}:{port}"
        remaining = max(1.0, timeout_s - (time.monotonic() - started))
        try:
            await_brokers(bootstrap, 1, remaining)
        except BrokerError as exc:
            raise BrokerError(f"{exc}\ncontainer log:\n{_log_tail(container)}") from exc
    except BaseException:
        with contextlib.suppress(Exception):
            container.stop()
        raise
    return bootstrap, container.stop


def _put_file(wrapped: Any, path: str, text: str) -> None:
    """Copy `text` into the running container as `path` (Docker takes a tar archive)."""
    data = text.encode("utf-8")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo(name=path.lstrip("/"))
        info.size = len(data)
        info.mode = 0o755
        info.mtime = int(time.time())
        tar.addfile(info, io.BytesIO(data))
    wrapped.put_archive("/", archive.getvalue())


def _log_tail(container: Any, lines: int = 40) -> str:
    with contextlib.suppress(Exception):
        out, err = container.get_logs()
        text = (out or b"").decode("utf-8", "replace") + (err or b"").decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])
    return "(no log)"
