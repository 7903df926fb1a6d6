"""The compose files are valid Compose files, and their Kafka is the one tests run.

No Docker engine here: each file is validated against the Compose
Specification's schema, and what `docker compose up` depends on is checked in
the parsed file (cluster ids, image, volumes, listeners, the demo service).
tests/broker/test_compose_brokers.py starts the same broker settings with the
local jars.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from laminar_kafka.local.broker.image_env import KAFKA_IMAGE
from tests.broker.compose_brokers import compose_nodes
from tests.broker.compose_files import (
    CLUSTER,
    COMPOSE_FILES,
    SINGLE,
    cluster_id_problem,
    compose_errors,
    kafka_services,
    load_compose,
)


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_compose_file_follows_the_compose_specification(path: Path) -> None:
    assert compose_errors(load_compose(path)) == []


def test_the_schema_check_catches_a_broken_file() -> None:
    broken = copy.deepcopy(load_compose(SINGLE))
    broken["services"]["kafka"]["ports"] = {"9092": 9092}  # a list, in the specification
    broken["services"]["demo"]["depends_on"] = {"kafka": {"condition": "started_soon"}}
    errors = compose_errors(broken)
    assert any(e.startswith("services/kafka/ports") for e in errors), errors
    assert any(e.startswith("services/demo/depends_on") for e in errors), errors


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_every_cluster_id_is_a_16_byte_uuid(path: Path) -> None:
    services = kafka_services(load_compose(path))
    ids = {svc["environment"]["CLUSTER_ID"] for svc in services.values()}
    assert len(ids) == 1, f"one cluster, one id: {ids}"
    assert [cluster_id_problem(i) for i in ids] == [None]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("bGFtaW5hci1jbHVzdGVyLTE", "decodes to 17 bytes"),  # 'laminar-cluster-1'
        ("MkU3OEVBNTcwNTJENDM2Qk", None),  # testcontainers' default id
        ("S0yYoNY-TgO76Iwba5rfxA==", "not unpadded"),
        ("-0yYoNY-TgO76Iwba5rfxA", "starts with '-'"),
        ("S0yYoNY+TgO76Iwba5rfxA", "not unpadded url-safe"),
        (1234, "not unpadded"),
    ],
)
def test_cluster_id_check(value: object, problem: str | None) -> None:
    found = cluster_id_problem(value)
    assert found is None if problem is None else problem in str(found)


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_kafka_is_the_release_the_local_broker_runs(path: Path) -> None:
    services = kafka_services(load_compose(path))
    assert services
    assert {svc["image"] for svc in services.values()} == {KAFKA_IMAGE}


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_kafka_data_lives_in_named_volumes(path: Path) -> None:
    compose = load_compose(path)
    declared = set(compose.get("volumes") or {})
    used = []
    for name, svc in kafka_services(compose).items():
        log_dirs = svc["environment"]["KAFKA_LOG_DIRS"]
        mounts = dict(reversed(v.split(":", 1)) for v in svc.get("volumes", []))
        assert log_dirs in mounts, f"{name}: nothing mounted at {log_dirs}"
        used.append(mounts[log_dirs])
    assert len(set(used)) == len(used), "each node its own volume"
    assert set(used) <= declared, f"undeclared (so anonymous or bind) volumes: {used}"


def _listeners(value: str) -> dict[str, str]:
    return dict(entry.split("://", 1) for entry in value.split(","))


def test_containers_and_the_host_each_have_a_listener() -> None:
    compose = load_compose(SINGLE)
    kafka = compose["services"]["kafka"]
    env = kafka["environment"]
    advertised = _listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    bound = _listeners(env["KAFKA_LISTENERS"])
    # The host: the published port, advertised as localhost.
    assert advertised["PLAINTEXT"] == "localhost:9092"
    assert "9092:9092" in kafka["ports"]
    # Containers: the service's hostname on a port that is not published.
    internal_host, internal_port = advertised["INTERNAL"].rsplit(":", 1)
    assert internal_host == kafka["hostname"] == "kafka"
    assert bound["INTERNAL"] == f":{internal_port}"
    assert not any(p.endswith(f":{internal_port}") for p in kafka["ports"])
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
    names = {e.split(":")[0] for e in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")}
    assert names == set(bound)


def test_the_demo_service_runs_the_demo_against_the_internal_listener() -> None:
    compose = load_compose(SINGLE)
    demo = compose["services"]["demo"]
    internal = _listeners(compose["services"]["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"])
    assert demo["build"] == "."
    assert demo["depends_on"] == {"kafka": {"condition": "service_healthy"}}
    assert "healthcheck" in compose["services"]["kafka"]
    command = demo["command"]
    assert command[:2] == ["laminar-kafka", "demo"]
    assert command[command.index("--bootstrap") + 1] == internal["INTERNAL"]


def test_the_cluster_file_has_no_demo_to_build() -> None:
    services = load_compose(CLUSTER)["services"]
    assert set(services) == set(kafka_services(load_compose(CLUSTER)))


def test_on_loopback_each_voter_is_its_nodes_controller_listener() -> None:
    """What test_compose_brokers.py starts: the file's settings, only the addresses moved."""
    nodes = compose_nodes(load_compose(CLUSTER))
    controllers = {
        node.settings["node.id"]: _listeners(node.settings["listeners"])["CONTROLLER"]
        for node in nodes
    }
    for node in nodes:
        voters = dict(v.split("@") for v in node.settings["controller.quorum.voters"].split(","))
        assert voters == controllers
        assert _listeners(node.settings["advertised.listeners"]).keys() == {"INTERNAL", "PLAINTEXT"}
        assert node.cluster_id == load_compose(CLUSTER)["x-kafka-env"]["CLUSTER_ID"]
        assert node.settings["min.insync.replicas"] == "2"
    internal = [node.listener("INTERNAL") for node in nodes]
    assert len(set(internal)) == 3 and all(a.startswith("127.0.0.1:") for a in internal)
