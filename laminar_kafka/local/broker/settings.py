"""What the local broker is given: its properties, its log settings, a cluster id."""

from __future__ import annotations

import base64
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.security import override_properties
from laminar_kafka.local.processes.files import tail_text, write_atomic


@dataclass(frozen=True)
class BrokerFiles:
    """Where a local broker keeps what it owns, under one home directory."""

    home: Path

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "server.log"

    @property
    def properties(self) -> Path:
        return self.home / "server.properties"

    @property
    def pid_file(self) -> Path:
        return self.home / "broker.pid"

    @property
    def state_file(self) -> Path:
        return self.home / "broker.json"

    @property
    def ports(self) -> Path:
        """The ports of the last start, reused by the next when free."""
        return self.home / "ports.json"

    @property
    def console(self) -> Path:
        return self.home / "console.log"

    @property
    def data(self) -> Path:
        return self.home / "data"


def new_cluster_id() -> str:
    """A Kafka cluster id: url-safe base64 of 16 random bytes, unpadded, not starting with '-'."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


PROPERTIES_TEMPLATE = """\
# Written by laminar-kafka on every start of the local broker; edits are lost.
process.roles=broker,controller
node.id={node_id}
controller.quorum.voters={voters}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs={data}

{replication}
# Fast to start and to test against.
num.partitions=1
auto.create.topics.enable=true
offsets.topic.num.partitions=5
transaction.state.log.num.partitions=5
group.initial.rebalance.delay.ms=0
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
num.network.threads=2
num.io.threads=4
background.threads=4
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=16777216
"""

SINGLE_NODE_REPLICATION = """\
# One node: every internal topic has one replica, or transactions cannot start.
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
"""

LOG4J2_TEMPLATE = """\
# Written by laminar-kafka: the broker logs to a file in its home, never to stdout.
status = warn
name = laminar-kafka-broker
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {log_file}
appender.file.filePattern = {log_file}.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 20MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def format_storage(
    java: list[str],
    lib: Path,
    properties: Path,
    data: Path,
    cluster_id: str | None = None,
    extra: tuple[str, ...] = (),
) -> None:
    """Format KRaft storage with `cluster_id` (else a new one), unless it already is.

    `extra`: more arguments of `kafka-storage format` (`--add-scram ...`).
    """
    if (data / "meta.properties").exists():
        return
    if data.exists():  # an interrupted format: start over
        shutil.rmtree(data)
    cmd = [*java, "-cp", f"{lib}/*", "kafka.tools.StorageTool", "format"]
    cmd += ["-t", cluster_id or new_cluster_id(), "-c", str(properties), *extra]
    try:
        done = subprocess.run(
            cmd,
            cwd=data.parent,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BrokerError(f"cannot format the broker storage in {data}: {exc}") from exc
    if done.returncode != 0:
        tail = tail_text(done.stdout + done.stderr)
        raise BrokerError(f"formatting the broker storage in {data} failed:\n{tail}")


def write_log_config(files: BrokerFiles) -> None:
    """The broker logs to a file in its home, never to stdout."""
    files.log_file.parent.mkdir(parents=True, exist_ok=True)
    (files.home / "log4j2.properties").write_text(
        LOG4J2_TEMPLATE.format(log_file=files.log_file), encoding="utf-8"
    )


def write_properties(
    files: BrokerFiles,
    node_id: int,
    port: int,
    controller_port: int,
    voters: str | None = None,
    replication: str = SINGLE_NODE_REPLICATION,
    overrides: Mapping[str, str] | None = None,
) -> None:
    """The node's server.properties; `voters` defaults to this node alone.

    `overrides` replace (or add) settings: a secured listener (`broker/security.py`).
    """
    text = PROPERTIES_TEMPLATE.format(
        node_id=node_id,
        voters=voters or f"{node_id}@127.0.0.1:{controller_port}",
        port=port,
        controller_port=controller_port,
        data=str(files.data).replace("\\", "\\\\"),
        replication=replication,
    )
    write_atomic(files.properties, override_properties(text, overrides or {}))
