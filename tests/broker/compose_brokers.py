"""The Kafka services of a compose file, run with the local jars on loopback.

Each service's `KAFKA_*` environment becomes its server.properties as the
apache/kafka image writes it (`image_settings`), and its storage is formatted
with the file's `CLUSTER_ID`. Only addresses and paths change: every
(service, container port) gets a free loopback port, a service name or
`localhost` in a listener or a voter becomes 127.0.0.1, and `log.dirs` a folder
of the node's own home. So the broker settings of the compose file are the ones
known to form a cluster and serve transactions.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laminar_kafka.local.broker.cluster_node import NODE_HEAP
from laminar_kafka.local.broker.image_env import image_settings
from laminar_kafka.local.broker.local import BrokerInfo, LocalBroker
from laminar_kafka.local.broker.settings import format_storage
from laminar_kafka.local.processes.files import write_atomic
from laminar_kafka.local.processes.ports import free_ports
from tests.broker.compose_files import kafka_services

_LISTENER = re.compile(r"(?P<name>[A-Za-z_]+)://(?P<host>[^:,]*):(?P<port>\d+)")
_VOTER = re.compile(r"(?P<id>\d+)@(?P<host>[^:,]+):(?P<port>\d+)")
_LOCAL_HOSTS = {"", "localhost", "0.0.0.0"}


@dataclass(frozen=True)
class ComposeNode:
    """One Kafka service of a compose file, rewritten onto loopback ports."""

    service: str
    cluster_id: str
    settings: dict[str, str]

    def listener(self, name: str) -> str:
        """host:port at which this node advertises listener `name`."""
        for m in _LISTENER.finditer(self.settings["advertised.listeners"]):
            if m["name"] == name:
                return f"{m['host']}:{m['port']}"
        raise KeyError(f"{self.service} advertises no {name} listener")


def compose_nodes(compose: dict[str, Any]) -> list[ComposeNode]:
    """The Kafka services of `compose`, each with its settings moved onto loopback ports."""
    services = kafka_services(compose)
    by_host = {str(svc.get("hostname", name)): name for name, svc in services.items()}
    pool = iter(free_ports(4 * len(services)))
    ports: dict[tuple[str, int], int] = {}

    def loopback(service: str, host: str, port: str) -> str:
        target = service if host in _LOCAL_HOSTS else by_host[host]
        key = (target, int(port))
        if key not in ports:
            ports[key] = next(pool)
        return f"127.0.0.1:{ports[key]}"

    nodes = []
    for name, svc in services.items():
        env = svc["environment"]
        settings = image_settings(env)
        for key in ("listeners", "advertised.listeners"):
            settings[key] = _LISTENER.sub(
                lambda m, s=name: f"{m['name']}://{loopback(s, m['host'], m['port'])}",
                settings[key],
            )
        settings["controller.quorum.voters"] = _VOTER.sub(
            lambda m, s=name: f"{m['id']}@{loopback(s, m['host'], m['port'])}",
            settings["controller.quorum.voters"],
        )
        nodes.append(ComposeNode(name, str(env["CLUSTER_ID"]), settings))
    return nodes


class ComposeBroker(LocalBroker):
    """A local broker home that runs one `ComposeNode`'s settings."""

    heap = NODE_HEAP

    def __init__(self, home: Path, node: ComposeNode, host_listener: str = "PLAINTEXT") -> None:
        super().__init__(home)
        self.node = node
        self.host_listener = host_listener

    def _jvm_flags(self) -> list[str]:
        return [*super()._jvm_flags(), "-XX:+UseSerialGC"]

    def _start_fresh(self, java: str, lib: Path, timeout_s: float) -> BrokerInfo:
        settings = {**self.node.settings, "log.dirs": str(self.files.data)}
        lines = [f"# {self.node.service} of a compose file, on loopback ports"]
        lines += [f"{key}={value}" for key, value in sorted(settings.items())]
        self.home.mkdir(parents=True, exist_ok=True)
        write_atomic(self.files.properties, "\n".join(lines) + "\n")
        flags = [java, *self._jvm_flags()]
        format_storage(flags, lib, self.files.properties, self.files.data, self.node.cluster_id)
        port = int(self.node.listener(self.host_listener).rsplit(":", 1)[1])
        return self._launch(java, lib, port, timeout_s)


@contextlib.contextmanager
def start_together(brokers: list[ComposeBroker], timeout_s: float) -> Iterator[None]:
    """Start every broker at once (a quorum forms only with a majority); stop them after."""
    try:
        with ThreadPoolExecutor(max_workers=len(brokers)) as pool:
            futures = [pool.submit(b.start, timeout_s) for b in brokers]
        for future in futures:
            future.result()
        yield
    finally:
        with ThreadPoolExecutor(max_workers=len(brokers)) as pool:
            # Nothing to keep: no need for a controlled shutdown of a throwaway cluster.
            list(pool.map(lambda b: b.stop(timeout_s=3), brokers))
