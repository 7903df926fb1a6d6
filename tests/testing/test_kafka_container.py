"""The test container runs the Kafka the local broker and the compose files run.

No Docker engine here: the container's specification is checked against the
local broker's settings and docker-compose.yml, and `start_container` is driven
through a stand-in for testcontainers' `DockerContainer`.
"""

from __future__ import annotations

import io
import sys
import tarfile
import types
from typing import Any

import pytest

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.image_env import KAFKA_IMAGE, image_settings, local_broker_settings
from laminar_kafka.local.broker.local import DEFAULT_KAFKA_VERSION
from laminar_kafka.testing import kafka_container
from laminar_kafka.testing.kafka_container import CLIENT_PORT, START_SCRIPT, container_spec
from tests.broker.compose_files import SINGLE, cluster_id_problem, load_compose

# Where a node is and who it is: differ by design between compose and a test container.
_PER_NODE = {
    "node.id",
    "process.roles",
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "controller.listener.names",
    "controller.quorum.voters",
}


def test_the_image_is_apache_kafka_of_the_local_brokers_release() -> None:
    assert container_spec().image == KAFKA_IMAGE == f"apache/kafka:{DEFAULT_KAFKA_VERSION}"


def test_the_container_has_the_local_brokers_settings() -> None:
    spec = container_spec()
    settings = image_settings(spec.environment)
    local = local_broker_settings()
    assert {k: settings.get(k) for k in local} == local
    assert settings["transaction.state.log.replication.factor"] == "1"
    assert cluster_id_problem(spec.environment["CLUSTER_ID"]) is None


def test_compose_sets_nothing_the_container_sets_otherwise() -> None:
    env = load_compose(SINGLE)["services"]["kafka"]["environment"]
    compose = {k: v for k, v in image_settings(env).items() if k not in _PER_NODE}
    container = image_settings(container_spec().environment)
    assert {k: container.get(k) for k in compose} == compose


def test_the_start_script_advertises_the_hosts_address_and_runs_the_image_start() -> None:
    spec = container_spec()
    script = spec.start_script("localhost", 32771)
    assert 'KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://localhost:32771,BROKER://' in script
    assert script.rstrip().endswith("exec /etc/kafka/docker/run")
    assert START_SCRIPT in spec.command[-1]


class _FakeContainer:
    """Records what `start_container` asks of testcontainers' DockerContainer."""

    made: list[_FakeContainer] = []

    def __init__(self, image: str) -> None:
        self.image = image
        self.env: dict[str, str] = {}
        self.ports: tuple[int, ...] = ()
        self.command: Any = None
        self.files: dict[str, str] = {}
        self.started = self.stopped = False
        _FakeContainer.made.append(self)

    def with_exposed_ports(self, *ports: int) -> _FakeContainer:
        self.ports = ports
        return self

    def with_command(self, command: Any) -> _FakeContainer:
        self.command = command
        return self

    def with_env(self, key: str, value: str) -> _FakeContainer:
        self.env[key] = value
        return self

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def get_container_host_ip(self) -> str:
        return "localhost"

    def get_exposed_port(self, port: int) -> str:
        return "32771"

    def get_wrapped_container(self) -> _FakeContainer:
        return self

    def put_archive(self, path: str, data: bytes) -> None:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                extracted = tar.extractfile(member)
                assert extracted is not None
                self.files[path + member.name] = extracted.read().decode()

    def get_logs(self) -> tuple[bytes, bytes]:
        return b"Kafka Server started? no\n", b""


@pytest.fixture
def fake_testcontainers(monkeypatch: pytest.MonkeyPatch) -> list[_FakeContainer]:
    module = types.ModuleType("testcontainers.core.container")
    module.DockerContainer = _FakeContainer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "testcontainers.core.container", module)
    monkeypatch.setattr(_FakeContainer, "made", [])
    return _FakeContainer.made


def test_start_container_writes_the_start_script_once_the_port_is_known(
    fake_testcontainers: list[_FakeContainer], monkeypatch: pytest.MonkeyPatch
) -> None:
    awaited: list[tuple[str, int]] = []
    monkeypatch.setattr(kafka_container, "await_brokers", lambda b, n, t: awaited.append((b, n)))
    bootstrap, release = kafka_container.start_container(timeout_s=5)
    (made,) = fake_testcontainers
    assert (made.image, made.ports, made.started) == (KAFKA_IMAGE, (CLIENT_PORT,), True)
    assert made.env == dict(container_spec().environment) | {"CLUSTER_ID": made.env["CLUSTER_ID"]}
    assert made.files[START_SCRIPT] == container_spec().start_script("localhost", 32771)
    assert bootstrap == "localhost:32771" and awaited == [(bootstrap, 1)]
    release()
    assert made.stopped


def test_a_container_whose_kafka_never_answers_is_removed(
    fake_testcontainers: list[_FakeContainer], monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(bootstrap: str, count: int, timeout_s: float) -> None:
        raise BrokerError(f"the cluster at {bootstrap} has brokers [], not 1")

    monkeypatch.setattr(kafka_container, "await_brokers", never)
    with pytest.raises(BrokerError, match=r"(?s)brokers \[\].*container log:.*Kafka Server"):
        kafka_container.start_container(timeout_s=5)
    assert fake_testcontainers[0].stopped
