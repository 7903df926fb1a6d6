"""A local KRaft cluster of three (or more) combined broker+controller nodes, on loopback.

Everything lives under one home directory:

    cluster.json        the cluster id and every node's ports, kept across starts
    node-<id>/          one `LocalBroker` home per node (see `local.py`)

`start` launches the nodes that do not run, together (a controller quorum
forms only once a majority runs), and returns once the cluster has every
broker registered. `kill_node` and `start_node` crash and revive a single
node on its own ports and data, as chaos tests need.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.cluster_node import ClusterLayout, ClusterNode, NodePortTaken
from laminar_kafka.local.broker.local import DEFAULT_KAFKA_VERSION, BrokerInfo, default_home
from laminar_kafka.local.broker.processes import settle_child
from laminar_kafka.local.broker.settings import BrokerFiles, new_cluster_id
from laminar_kafka.local.processes.groups import signal_tree, wait_exit
from laminar_kafka.local.processes.lock import home_lock, home_lock_or_raise
from laminar_kafka.local.processes.ports import ports_free

__all__ = ["ClusterInfo", "LocalCluster", "await_brokers", "is_cluster_home"]

log = logging.getLogger("laminar_kafka.local.broker")

LAYOUT_FILE = "cluster.json"
_PROBE_TIMEOUT_S = 2.0
_POLL_S = 0.2
_T = TypeVar("_T")


def is_cluster_home(home: Path) -> bool:
    """Whether `home` is the home of a local cluster (not of a single broker)."""
    return (home.expanduser() / LAYOUT_FILE).exists()


@dataclass(frozen=True)
class ClusterInfo:
    """A local cluster's address, and which of its nodes run (None: down)."""

    bootstrap: str
    home: Path
    nodes: dict[int, BrokerInfo | None]

    @property
    def running(self) -> int:
        return sum(1 for info in self.nodes.values() if info is not None)


class LocalCluster:
    """Start, stop, inspect and crash the local cluster that lives in `home`."""

    def __init__(
        self,
        home: Path | None = None,
        brokers: int = 3,
        kafka_version: str = DEFAULT_KAFKA_VERSION,
    ) -> None:
        if brokers < 3:
            raise BrokerError(
                f"a local cluster needs at least 3 nodes, not {brokers}: with replication "
                "factor 3 and min.insync.replicas 2, fewer could not lose one"
            )
        self.home = (home if home is not None else default_home()).expanduser().resolve()
        self.brokers = brokers
        self.kafka_version = kafka_version
        self.layout_file = self.home / LAYOUT_FILE

    def start(self, timeout_s: float = 180.0) -> ClusterInfo:
        """Start every node that does not run; return once all brokers are registered.

        Raises BrokerError if a node exits or the cluster does not form in
        `timeout_s`; the nodes this call started are stopped again then.
        """
        message = f"cannot start the local cluster in {self.home}"
        with home_lock_or_raise(self.home, BrokerError, message):
            return self._start_locked(timeout_s)

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop every node (SIGTERM together, SIGKILL after `timeout_s`). Whether one ran."""
        layout = ClusterLayout.load(self.layout_file)
        if layout is None:
            return False
        with home_lock(self.home):
            stopped = _each(lambda n: n.stop(timeout_s), self._nodes(layout))
        return any(stopped)

    def status(self) -> ClusterInfo | None:
        """The cluster's address and nodes, or None if none of its nodes runs."""
        layout = ClusterLayout.load(self.layout_file)
        if layout is None:
            return None
        nodes = {n.node_id: n.status() for n in self._nodes(layout)}
        if all(info is None for info in nodes.values()):
            return None
        return ClusterInfo(layout.bootstrap, self.home, nodes)

    def node_ids(self) -> list[int]:
        """The ids of the saved layout's nodes (1..n, as their Kafka broker ids)."""
        return [n.node_id for n in self._layout().nodes]

    def node(self, node_id: int) -> ClusterNode:
        """Node `node_id` (1-based, as its Kafka broker id) of the saved layout."""
        layout = self._layout()
        layout.node(node_id)  # raises for an unknown id
        return ClusterNode(self._node_home(node_id), layout, node_id, self.kafka_version)

    def kill_node(self, node_id: int) -> int:
        """SIGKILL node `node_id`, as a crash would, and wait until it is gone; its pid."""
        info = self.node(node_id).status()
        if info is None:
            raise BrokerError(f"node {node_id} of the cluster in {self.home} does not run")
        signal_tree(info.pid, signal.SIGKILL)
        if not wait_exit(info.pid, 30.0):
            raise BrokerError(f"node {node_id} (pid {info.pid}) survived SIGKILL")
        settle_child(info.pid)
        log.info("killed node %d of the local cluster (pid %d)", node_id, info.pid)
        return info.pid

    def start_node(self, node_id: int, timeout_s: float = 180.0) -> BrokerInfo:
        """Start node `node_id` again on its ports and data; return once it answers."""
        with home_lock(self.home):
            return self.node(node_id).start(timeout_s)

    def _start_locked(self, timeout_s: float) -> ClusterInfo:
        if (self.home / "data").exists() or (self.home / "broker.pid").exists():
            raise BrokerError(f"{self.home} is the home of a single broker, not of a cluster")
        layout = ClusterLayout.load(self.layout_file)
        if layout is not None and len(layout.nodes) != self.brokers:
            raise BrokerError(
                f"{self.home} holds a {len(layout.nodes)}-node cluster, not {self.brokers}"
            )
        cluster_id = layout.cluster_id if layout is not None else new_cluster_id()
        # Fresh ports are possible only while no node runs: the others know its ports.
        for attempt in range(3):
            nodes = self._nodes(layout) if layout is not None else []
            down = [n for n in nodes if n.status() is None]
            if layout is None or (len(down) == len(nodes) and not ports_free(layout.ports)):
                layout = ClusterLayout.fresh(cluster_id, self.brokers)
                self.home.mkdir(parents=True, exist_ok=True)
                layout.save(self.layout_file)
                nodes = down = self._nodes(layout)
            started_all = len(down) == len(nodes)
            try:
                self._start_together(down, timeout_s)
            except NodePortTaken:
                if not started_all or attempt == 2:
                    raise
                log.info("a node's port was taken before it bound it, retrying (%d)", attempt + 1)
                layout = None
                continue
            try:
                await_brokers(layout.bootstrap, self.brokers, timeout_s)
            except BrokerError:
                _each(lambda n: n.stop(), down)
                raise
            info = self.status()
            assert info is not None
            return info
        raise BrokerError("could not bind the local cluster to free loopback ports")

    def _start_together(self, nodes: list[ClusterNode], timeout_s: float) -> None:
        """Start `nodes` at once; if one fails, stop the others again and raise its error."""
        if not nodes:
            return
        log.info(
            "starting nodes %s of the local cluster in %s", [n.node_id for n in nodes], self.home
        )
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            futures = [pool.submit(n.start, timeout_s) for n in nodes]
        errors = [e for f in futures if (e := f.exception()) is not None]
        if errors:
            _each(lambda n: n.stop(), nodes)
            taken = [e for e in errors if isinstance(e, NodePortTaken)]
            raise (taken or errors)[0]

    def _layout(self) -> ClusterLayout:
        layout = ClusterLayout.load(self.layout_file)
        if layout is None:
            raise BrokerError(f"no local cluster in {self.home} ({self.layout_file} is missing)")
        return layout

    def _nodes(self, layout: ClusterLayout) -> list[ClusterNode]:
        return [
            ClusterNode(self._node_home(n.node_id), layout, n.node_id, self.kafka_version)
            for n in layout.nodes
        ]

    def _node_home(self, node_id: int) -> Path:
        return self.home / f"node-{node_id}"

    def node_files(self, node_id: int) -> BrokerFiles:
        """Where node `node_id` keeps its properties, data and logs."""
        return BrokerFiles(self._node_home(node_id))


def _each(action: Callable[[ClusterNode], _T], nodes: list[ClusterNode]) -> list[_T]:
    """`action` on every node at once (a node's stop must not wait for the next one's)."""
    if not nodes:
        return []
    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        return list(pool.map(action, nodes))


def await_brokers(bootstrap: str, count: int, timeout_s: float) -> None:
    """Wait until the cluster at `bootstrap` has `count` registered (unfenced) brokers."""
    errors: list[str] = []
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.connection.setup.timeout.ms": 1000,
        "log_level": 0,  # a node still starting refuses connections
        "error_cb": lambda err: errors.append(str(err)),
    }
    admin = AdminClient(config)
    deadline = time.monotonic() + timeout_s
    seen: list[int] = []
    while True:
        try:
            seen = sorted(admin.list_topics(timeout=_PROBE_TIMEOUT_S).brokers)
        except KafkaException as exc:
            errors.append(str(exc))
        if len(seen) >= count:
            return
        if time.monotonic() > deadline:
            raise BrokerError(
                f"the cluster at {bootstrap} has brokers {seen}, not {count}, after "
                f"{timeout_s:.0f} s; last error: {errors[-1] if errors else 'none'}"
            )
        time.sleep(_POLL_S)  # metadata has no push notification: poll it
