"""docker-compose.cluster.yml runs the local cluster's nodes with the local cluster's settings.

No Docker engine here: the file is parsed and compared with what a local
cluster node writes into its server.properties.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.local.broker.cluster_node import (
    CLUSTER_SETTINGS,
    ClusterLayout,
    cluster_replication,
)
from laminar_kafka.local.broker.image_env import env_name, parse_properties
from laminar_kafka.local.broker.settings import BrokerFiles, write_properties

yaml = pytest.importorskip("yaml")

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.cluster.yml"


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    parsed = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    found: dict[str, Any] = parsed["services"]
    return found


def test_three_combined_kraft_nodes_of_one_quorum(services: dict[str, Any]) -> None:
    assert sorted(services) == ["kafka-1", "kafka-2", "kafka-3"]
    envs = {name: svc["environment"] for name, svc in services.items()}
    assert {str(env["KAFKA_NODE_ID"]) for env in envs.values()} == {"1", "2", "3"}
    assert len({env["CLUSTER_ID"] for env in envs.values()}) == 1
    for name, svc in services.items():
        env = envs[name]
        assert svc["image"].startswith("apache/kafka:")
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        voters = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")
        assert [v.split("@")[0] for v in voters] == ["1", "2", "3"]
        assert f"{env['KAFKA_NODE_ID']}@{svc['hostname']}:9093" in voters


def test_same_replication_settings_as_the_local_cluster(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        env = svc["environment"]
        differs = {
            key: (env.get(env_name(key)), value)
            for key, value in CLUSTER_SETTINGS.items()
            if str(env.get(env_name(key))) != value
        }
        assert differs == {}, f"{name}: (compose, local) {differs}"


def test_each_node_is_reachable_from_the_host(services: dict[str, Any]) -> None:
    host_addresses = []
    for name, svc in services.items():
        env = svc["environment"]
        advertised = dict(
            entry.split("://", 1) for entry in env["KAFKA_ADVERTISED_LISTENERS"].split(",")
        )
        host, port = advertised["PLAINTEXT"].rsplit(":", 1)
        assert host == "localhost", name
        assert f"{port}:{port}" in svc["ports"], f"{name} does not publish {port}"
        assert f"PLAINTEXT://:{port}" in env["KAFKA_LISTENERS"]
        # The nodes reach each other by container name, not through the host.
        assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
        assert advertised["INTERNAL"].startswith(f"{svc['hostname']}:")
        host_addresses.append(f"{host}:{port}")
    bootstrap = ",".join(host_addresses)
    assert bootstrap in COMPOSE.read_text(encoding="utf-8")  # the export the header shows


def test_a_local_cluster_node_writes_those_settings(
    tmp_path: Path, services: dict[str, Any]
) -> None:
    layout = ClusterLayout.fresh(services["kafka-1"]["environment"]["CLUSTER_ID"], 3)
    files = BrokerFiles(tmp_path / "node-2")
    files.home.mkdir()
    node = layout.node(2)
    write_properties(
        files,
        2,
        node.port,
        node.controller_port,
        voters=layout.voters,
        replication=cluster_replication(),
    )
    written = parse_properties(files.properties.read_text(encoding="utf-8"))
    assert {k: written[k] for k in CLUSTER_SETTINGS} == CLUSTER_SETTINGS
    assert written["node.id"] == "2"
    assert written["process.roles"] == "broker,controller"
    assert written["controller.quorum.voters"] == ",".join(
        f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in layout.nodes
    )
    assert written["log.dirs"] == str(files.data)
    assert layout.bootstrap.count(",") == 2
    # The layout survives a save and a load (a node restarts on the same ports).
    layout.save(tmp_path / "cluster.json")
    assert ClusterLayout.load(tmp_path / "cluster.json") == layout
