"""A local three-node KRaft cluster: it forms, replicates, and an exactly-once pipeline on
it survives a SIGKILL of the node that leads its control topic or coordinates its
transactions, and that node's return; a task's producer hands a checkpoint's offsets
to the group coordinator that replaced a dead one."""

from __future__ import annotations

import contextlib
import io
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from laminar_kafka import JsonFormat, RuntimeConfig
from laminar_kafka.chaos.broker import BounceableBroker
from laminar_kafka.cli.main import main
from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import consumer_group, transactional_id
from laminar_kafka.local.broker import LocalCluster
from laminar_kafka.runtime.driver.events import CheckpointCommitted
from laminar_kafka.runtime.driver.preflight import (
    broker_max_transaction_timeout_ms,
    check_transaction_timeout,
)
from laminar_kafka.sinks import KafkaTransaction
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import (
    compare_totals,
    expected_totals,
    produce_orders,
    read_committed,
)
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_pipeline_runs import totals

pytestmark = pytest.mark.integration

decode_json = JsonFormat().decode_one
INTERNAL_PARTITIONS = 5  # offsets and transaction-state partitions the nodes are given


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A three-node cluster in a home of its own, started by the CLI, always stopped."""
    local = LocalCluster(tmp_path_factory.mktemp("cluster") / "home")
    out = io.StringIO()
    try:
        started = time.monotonic()
        with contextlib.redirect_stdout(out):
            assert main(["broker", "start", "--brokers", "3", "--home", str(local.home)]) == 0
        print(f"\ncluster started in {time.monotonic() - started:.1f}s")
        info = local.status()
        assert info is not None
        assert out.getvalue().strip().splitlines()[-1] == f"bootstrap={info.bootstrap}"
        yield local
    finally:
        with contextlib.redirect_stdout(out):
            main(["broker", "stop", "--home", str(local.home)])
        local.stop()  # a no-op unless the command failed
        assert local.status() is None


def _bootstrap(cluster: LocalCluster) -> str:
    info = cluster.status()
    assert info is not None
    return info.bootstrap


def _partition(admin: AdminClient, topic: str, partition: int = 0) -> Any:
    def listed() -> Any:
        return admin.list_topics(topic=topic, timeout=10).topics[topic].partitions

    # A topic just created can be listed before every node's metadata has its partitions.
    _await(lambda: partition in listed(), 30, f"{topic}[{partition}] in the metadata")
    return listed()[partition]


def _await(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout_s:.0f}s"
        time.sleep(0.2)  # metadata and events give no notification: poll them


def _coordinator_partition(key: str) -> int:
    """Which internal partition coordinates `key`: abs(Java String.hashCode) mod count."""
    h, units = 0, key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % INTERNAL_PARTITIONS


def test_three_brokers_form_and_replicate_to_all(
    cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = _bootstrap(cluster)
    assert len(bootstrap.split(",")) == 3
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3]
    with TopicFactory(bootstrap) as topics:
        topic = topics.create("rf3", partitions=3)  # no replication factor: the default
        for p in range(3):
            meta = _partition(admin, topic, p)
            assert sorted(meta.replicas) == [1, 2, 3]
            assert sorted(meta.isrs) == [1, 2, 3]

    assert main(["broker", "status", "--home", str(cluster.home)]) == 0
    status = capsys.readouterr().out
    assert "3/3 nodes" in status and status.strip().splitlines()[-1] == f"bootstrap={bootstrap}"


def test_a_twenty_minute_checkpoint_interval_is_refused_by_three_brokers(
    cluster: LocalCluster, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    bootstrap = _bootstrap(cluster)
    assert broker_max_transaction_timeout_ms(AdminClient({"bootstrap.servers": bootstrap})) == (
        900_000
    )
    cfg = RuntimeConfig(bootstrap, str(tmp_path / "checkpoints"), checkpoint_interval_s=1200)
    with caplog.at_level(logging.WARNING), pytest.raises(ConfigError, match="at most 900000 ms"):
        check_transaction_timeout(cfg)
    assert "cannot read" not in caplog.text


def test_pipeline_stays_exactly_once_across_a_killed_broker(
    cluster: LocalCluster, spark_context: Any, tmp_path: Path
) -> None:
    bootstrap = _bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    with TopicFactory(bootstrap) as topics:
        source = topics.create("orders", partitions=4)
        sink = source + "-out"
        name = "cl-" + source[-8:]
        cfg = RuntimeConfig(
            bootstrap=bootstrap,
            checkpoint_dir=str(tmp_path / "checkpoints"),
            parallelism=2,
            checkpoint_interval_s=0.5,
            checkpoint_timeout_s=20.0,
            alignment_timeout_s=5.0,
        )
        produce_orders(bootstrap, source, range(1500))
        run = BackgroundRun(totals(name, source, sink, partitioned=True), cfg, spark_context)
        run.wait_for_output(bootstrap, sink, decode_json, 500, timeout_s=180)

        # The victim: the control topic's leader, or a transaction coordinator of the
        # pipeline's (a leader of __transaction_state), whichever holds more roles.
        control_leader = _partition(admin, cfg.control_topic(name)).leader
        roles: dict[int, list[str]] = {control_leader: ["control leader"]}
        for task in range(cfg.parallelism):
            txn_id = transactional_id(name, task)
            txn = _partition(admin, "__transaction_state", _coordinator_partition(txn_id))
            roles.setdefault(txn.leader, []).append(f"coordinator of {txn_id}")
        group = _partition(
            admin, "__consumer_offsets", _coordinator_partition(consumer_group(name))
        )
        roles.setdefault(group.leader, []).append("group coordinator")
        victim = max(roles, key=lambda b: (len(roles[b]), b == control_leader))
        print(f"\nroles {roles}; killing node {victim}")

        killed_at = time.time()
        cluster.kill_node(victim)
        produce_orders(bootstrap, source, range(1500, 3000))  # while the node is down
        _await(
            lambda: any(
                isinstance(e, CheckpointCommitted) and e.at > killed_at for e in list(run.events)
            ),
            180,
            "checkpoint committed after the kill",
        )
        recovered_at = min(
            e.at
            for e in list(run.events)
            if isinstance(e, CheckpointCommitted) and e.at > killed_at
        )
        run.wait_for_output(bootstrap, sink, decode_json, 3000, timeout_s=180)
        on_two_s = time.time() - killed_at
        moved = _partition(admin, cfg.control_topic(name)).leader
        assert moved != victim

        restart_at = time.monotonic()
        cluster.start_node(victim)
        rejoined_s = time.monotonic() - restart_at
        produce_orders(bootstrap, source, range(3000, 4000))
        run.wait_for_output(bootstrap, sink, decode_json, 4000, timeout_s=180)
        _await(lambda: sorted(_partition(admin, source).isrs) == [1, 2, 3], 120, "ISR of 3")
        stats = run.stop()
        print(
            f"first checkpoint after the kill: {recovered_at - killed_at:.1f}s; "
            f"3000 outputs committed on two nodes {on_two_s:.1f}s after the kill; node back in "
            f"{rejoined_s:.1f}s; committed={stats.committed} restarts={stats.restarts}"
        )

        report = compare_totals(
            expected_totals(range(4000)), read_committed(bootstrap, sink, decode_json)
        )
        assert (report.duplicates, report.losses) == (0, 0), report
        after = cluster.status()
        assert after is not None and after.running == 3


def test_broker_bounce_of_a_cluster_home_kills_one_node_at_a_time(cluster: LocalCluster) -> None:
    bouncer = BounceableBroker(cluster.home)
    assert bouncer.cluster is not None
    bootstrap = bouncer.start()  # handed over running: not started, so never stopped by it
    assert bootstrap == _bootstrap(cluster)
    before = cluster.status()
    assert before is not None
    node_1 = before.nodes[1]
    assert node_1 is not None

    bounce = bouncer.bounce(lambda: True, max_down_s=0.0)
    assert (bounce.pid, bounce.bootstrap) == (node_1.pid, node_1.bootstrap)
    bouncer.close()
    after = cluster.status()
    assert after is not None and after.running == 3
    assert after.nodes[1] is not None and after.nodes[1].pid != node_1.pid
    assert after.nodes[2] == before.nodes[2] and after.nodes[3] == before.nodes[3]
    print(f"\nnode 1 bounced: back in {bounce.down_s:.1f}s")


@pytest.mark.parametrize("idle_ms", [None, 0], ids=["task-settings", "idle-connections-kept"])
def test_offsets_reach_the_group_coordinator_that_replaced_a_dead_one(
    cluster: LocalCluster, idle_ms: int | None
) -> None:
    """librdkafka #5511: once the fence drops the group coordinator's node from the
    producer's metadata, send_offsets_to_transaction waits on it for good, unless a
    connection of the producer goes down. A task's producer closes idle ones."""
    bootstrap = _bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic, group = f"coord-{uuid.uuid4().hex[:8]}", f"coord-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    _partition(admin, topic, 2)
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    settings = {} if idle_ms is None else {"connections.max.idle.ms": str(idle_ms)}
    txn = KafkaTransaction(KafkaConnection(bootstrap, settings), f"t-{group}", 60_000)
    offsets = [TopicPartition(topic, 0, 5)]

    def transaction(prepare: Any) -> None:
        txn.begin()
        for partition in range(3):
            txn.produce(topic, b"x", partition=partition)
        txn._producer.flush(30)  # delivered: the producer knows the partitions' leaders now
        prepare()

    txn.init(30)
    transaction(lambda: txn.prepare(offsets, member.consumer_group_metadata(), 10))
    txn.commit(10)
    victim = _partition(admin, "__consumer_offsets", _coordinator_partition(group)).leader
    cluster.kill_node(victim)
    returned = threading.Event()
    try:
        _await(lambda: len(_live_brokers(admin)) == 2, 60, "the dead node fenced")

        def prepare() -> None:
            txn.prepare(offsets, member.consumer_group_metadata(), 10)
            returned.set()

        began = time.monotonic()
        waiter = threading.Thread(
            target=transaction, args=(prepare,), name="send-offsets", daemon=True
        )
        waiter.start()
        waiter.join(15)
        waited_s = time.monotonic() - began
    finally:
        cluster.start_node(victim)
    if idle_ms is None:
        assert returned.is_set(), f"send_offsets_to_transaction still waits after {waited_s:.0f}s"
        txn.commit(10)
        checker = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        assert checker.committed(offsets, 10)[0].offset == 5
        checker.close()
        print(f"\noffsets taken by the new coordinator {waited_s:.1f}s after the fence")
    else:  # the bug itself: the same call, with idle connections kept, waits on
        assert not returned.is_set(), "the dead coordinator no longer holds the call"
        waiter.join(60)  # the node's return is a state change: the call goes on
    member.close()
    txn.close()
    _await(lambda: sorted(_partition(admin, topic).isrs) == [1, 2, 3], 120, "ISR of 3")


def _live_brokers(admin: AdminClient) -> list[int]:
    """The nodes in the cluster's metadata (a fenced node is not); [all] when unanswered."""
    try:
        return list(admin.list_topics(timeout=2).brokers)
    except Exception:
        return [0, 0, 0]  # the request went to the dead node: ask again
