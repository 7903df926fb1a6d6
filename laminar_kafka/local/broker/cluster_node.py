"""One node of a local KRaft cluster: its settings, its ports, and the node itself.

A cluster home holds `cluster.json` (the cluster id and each node's two
loopback ports) and one `LocalBroker` home per node, `node-<id>/`. Every node
is a combined broker and controller; the controllers of all nodes form the
quorum. A node restarted on its own (after a crash) gets the ports and the
data directory it had, so the others take it back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.local import BrokerInfo, LocalBroker, PortTaken
from laminar_kafka.local.broker.settings import format_storage, write_properties
from laminar_kafka.local.processes.files import write_atomic
from laminar_kafka.local.processes.ports import free_ports

__all__ = [
    "CLUSTER_SETTINGS",
    "ClusterLayout",
    "ClusterNode",
    "NodeAddress",
    "NodePortTaken",
    "cluster_replication",
]

CLUSTER_SETTINGS: dict[str, str] = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    # A killed node is fenced after the session timeout: only then do the
    # leaders of its partitions (and its coordinators) move to the others. Kafka's
    # 9 s (and the 6 s this was) was most of a pipeline's recovery from a node's
    # death; heartbeats every 500 ms leave six to miss before a live node is fenced.
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    # When the node killed is the active controller, the others first elect a new
    # one (it then gives every broker a fresh session, so the fence comes a session
    # after the election). Kafka's defaults (2 s without the leader, then 1 to 2 s
    # per split vote) suit a network; on loopback a vote takes milliseconds. The
    # fetch timeout keeps twice the quorum's 500 ms long poll and a half second over.
    "controller.quorum.fetch.timeout.ms": "1500",
    "controller.quorum.election.timeout.ms": "300",
    "controller.quorum.election.backoff.max.ms": "300",
}
"""What a cluster node sets unlike a single node (docker-compose.cluster.yml sets the same)."""

NODE_HEAP = "-Xmx384m"


def cluster_replication() -> str:
    """The replication block of a cluster node's server.properties."""
    lines = [f"{key}={value}" for key, value in CLUSTER_SETTINGS.items()]
    head = "# Three replicas, two in sync: any one node may die without losing a write.\n"
    return head + "\n".join(lines) + "\n"


@dataclass(frozen=True)
class NodeAddress:
    """Where one node listens: clients on `port`, the controller quorum on `controller_port`."""

    node_id: int
    port: int
    controller_port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass(frozen=True)
class ClusterLayout:
    """A cluster's id and its nodes' addresses, kept in `cluster.json` across starts."""

    cluster_id: str
    nodes: tuple[NodeAddress, ...]

    @classmethod
    def fresh(cls, cluster_id: str, count: int) -> ClusterLayout:
        """`count` nodes (ids 1..count) on loopback ports that are free now."""
        ports = free_ports(2 * count)
        nodes = tuple(NodeAddress(i + 1, ports[2 * i], ports[2 * i + 1]) for i in range(count))
        return cls(cluster_id, nodes)

    @classmethod
    def load(cls, path: Path) -> ClusterLayout | None:
        """The layout saved at `path`, or None if there is none (or it is unreadable)."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            nodes = tuple(
                NodeAddress(int(n["node_id"]), int(n["port"]), int(n["controller_port"]))
                for n in raw["nodes"]
            )
            return cls(str(raw["cluster_id"]), nodes)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, path: Path) -> None:
        nodes = [
            {"node_id": n.node_id, "port": n.port, "controller_port": n.controller_port}
            for n in self.nodes
        ]
        text = json.dumps({"cluster_id": self.cluster_id, "nodes": nodes}, indent=2)
        write_atomic(path, text + "\n")

    @property
    def bootstrap(self) -> str:
        """Every node's client address, comma-separated."""
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def voters(self) -> str:
        """controller.quorum.voters: every node's controller."""
        return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)

    @property
    def ports(self) -> tuple[int, ...]:
        return tuple(p for n in self.nodes for p in (n.port, n.controller_port))

    def node(self, node_id: int) -> NodeAddress:
        for address in self.nodes:
            if address.node_id == node_id:
                return address
        known = ", ".join(str(n.node_id) for n in self.nodes)
        raise BrokerError(f"the cluster has no node {node_id} (its nodes: {known})")


class NodePortTaken(BrokerError):
    """A node lost the race for one of its ports (the whole cluster may take fresh ones)."""


class ClusterNode(LocalBroker):
    """A `LocalBroker` in `node-<id>/` that is one voter of a cluster's controller quorum.

    It always starts on its layout's ports (the other voters know it there) and
    formats its storage with the cluster's id. Its `start` returns once this
    node answers metadata requests, which it does only after the quorum formed:
    start the nodes of a new cluster together.
    """

    heap = NODE_HEAP

    def __init__(self, home: Path, layout: ClusterLayout, node_id: int, kafka_version: str) -> None:
        super().__init__(home, kafka_version=kafka_version)
        self.layout = layout
        self.node_id = node_id

    def _jvm_flags(self) -> list[str]:
        # Three JVMs share the machine: the serial collector runs no GC threads of its own.
        return [*super()._jvm_flags(), "-XX:+UseSerialGC"]

    @property
    def address(self) -> NodeAddress:
        return self.layout.node(self.node_id)

    def _start_fresh(self, java: str, lib: Path, timeout_s: float) -> BrokerInfo:
        """Write the properties on the layout's ports, format with its cluster id, launch."""
        address = self.address
        write_properties(
            self.files,
            self.node_id,
            address.port,
            address.controller_port,
            voters=self.layout.voters,
            replication=cluster_replication(),
        )
        flags = [java, *self._jvm_flags()]
        format_storage(flags, lib, self.files.properties, self.files.data, self.layout.cluster_id)
        try:
            return self._launch(java, lib, address.port, timeout_s)
        except PortTaken:
            raise NodePortTaken(
                f"node {self.node_id} could not bind 127.0.0.1:{address.port} or "
                f":{address.controller_port}: taken by another process"
            ) from None
