"""A Spark standalone cluster on this machine: started, inspected and stopped from the CLI;
a pipeline runs on it exactly once, and rides out a worker machine that dies (kill -9)."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline, RuntimeConfig
from laminar_kafka.chaos import ChaosRun, KillKind, RecoveryPath
from laminar_kafka.chaos.app import ChaosApp
from laminar_kafka.cli.main import main
from laminar_kafka.errors import ClusterError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.local.broker import LocalCluster
from laminar_kafka.local.cluster import ClusterInfo, SparkCluster, master_state
from laminar_kafka.local.processes.table import descendants, group_alive
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.object_store import LocalS3
from laminar_kafka.testing.orders import (
    compare_totals,
    expected_totals,
    produce_orders,
    read_committed,
)
from tests.runtime.test_object_store_runs import s3_chaos_settings

pytestmark = [pytest.mark.integration, pytest.mark.spark]

decode_json = JsonFormat().decode_one
PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


START = ["cluster", "start", "--workers", "3", "--cores-per-worker", "1"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, local_s3: LocalS3) -> Iterator[ClusterInfo]:
    """One cluster for the file, started and stopped through the CLI: three workers of one
    core each, for a pipeline of two tasks and a spare machine.

    Started after `local_s3`: the workers, and so their executors, inherit its AWS
    variables. Its home is the default one while the module runs (no --home), so that a
    run finds the cluster (and its core count) from the master URL alone. The
    teardown checks that `cluster stop` leaves no process of any group behind.
    """
    home = tmp_path_factory.mktemp("spark-cluster")
    saved = os.environ.get("LAMINAR_CLUSTER_HOME")
    os.environ["LAMINAR_CLUSTER_HOME"] = str(home)
    groups: list[int] = []
    try:
        assert main(START) == 0
        info = SparkCluster().status()
        assert info is not None
        groups = [info.master_pid, *(w.pid for w in info.workers)]
        yield info
    finally:
        # The runs' drivers are processes of their own: nothing here holds the cluster.
        try:
            assert main(["cluster", "stop"]) == 0
            assert not [pid for pid in groups if group_alive(pid)]
            assert not (home / "cluster.json").exists()
            assert main(["cluster", "status"]) == 3
        finally:
            SparkCluster(home).stop()
            if saved is None:
                os.environ.pop("LAMINAR_CLUSTER_HOME", None)
            else:
                os.environ["LAMINAR_CLUSTER_HOME"] = saved


def customer_totals(name: str, source: str, sink: str) -> Pipeline:
    """Totals per customer, kept where the orders arrive: one stage."""
    p = Pipeline(name)
    (
        p.source(source, value_format=AvroFormat.from_schema("order"), partitioned_by="customer")
        .key_by("customer")
        .aggregate(
            initial=lambda: (0, 0),
            add=lambda t, o: (t[0] + 1, t[1] + o["amount"]),
            emit=lambda c, t: {"customer": c, "orders": t[0], "amount": t[1]},
        )
        .sink(sink, key="customer")
    )
    return p


def config(bootstrap: str, tmp_path: Path, master: str, parallelism: int = 2) -> RuntimeConfig:
    return RuntimeConfig(
        bootstrap=bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=parallelism,
        master=master,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=30.0,
        alignment_timeout_s=5.0,
    )


def test_the_started_cluster_is_recorded_and_reported(
    cluster: ClusterInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    state = json.loads((cluster.home / "cluster.json").read_text())
    assert state["master_url"] == cluster.master_url
    assert re.fullmatch(r"spark://127\.0\.0\.1:\d+", cluster.master_url)
    groups = [state["master"]["pid"], *(w["pid"] for w in state["workers"])]
    assert len(groups) == 4
    assert all(os.getpgid(pid) == pid for pid in groups)  # each leads its own group
    seen = master_state(state["ui_url"])
    assert seen.alive_ports() == {w["port"] for w in state["workers"]}
    assert seen.cores == 3

    capsys.readouterr()
    assert main(START) == 0  # already running: the same cluster, nothing started
    assert f"master={cluster.master_url}" in capsys.readouterr().out.splitlines()
    assert SparkCluster().status() == cluster
    assert main(["cluster", "status"]) == 0
    out = capsys.readouterr().out
    assert "3 alive workers, 3 cores" in out and out.count(" registered") == 3, out
    assert f"master={cluster.master_url}" in out.splitlines()


def test_a_run_needing_more_cores_than_the_cluster_has_is_refused_before_it_starts(
    cluster: ClusterInfo, kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=4)
    pipeline = customer_totals("cl-big-" + source[-8:], source, source + "-out")
    cfg = config(kafka_bootstrap, tmp_path, cluster.master_url, parallelism=4)
    with pytest.raises(ClusterError, match=r"has 3 cores .* runs 4 worker tasks"):
        PipelineRunner(pipeline, cfg).run()


_PIPELINE_FILE = """\
from laminar_kafka import AvroFormat, Pipeline

pipeline = Pipeline({name!r})
(
    pipeline.source(
        {source!r}, value_format=AvroFormat.from_schema("order"), partitioned_by="customer"
    )
    .key_by("customer")
    .aggregate(
        initial=lambda: (0, 0),
        add=lambda t, o: (t[0] + 1, t[1] + o["amount"]),
        emit=lambda c, t: {{"customer": c, "orders": t[0], "amount": t[1]}},
    )
    .sink({sink!r}, key="customer")
)
"""


def start_app(
    bootstrap: str, tmp_path: Path, master: str, name: str, source: str, sink: str
) -> ChaosApp:
    """`laminar-kafka run` on the cluster, as a user starts it: its own driver process
    (the test process may already hold a local Spark context, and a process has one)."""
    pipeline_file = tmp_path / "pipeline.py"
    pipeline_file.write_text(_PIPELINE_FILE.format(name=name, source=source, sink=sink))
    args = [
        *("run", str(pipeline_file), "--bootstrap", bootstrap, "--master", master),
        *("--checkpoint-dir", str(tmp_path / "checkpoints"), "--parallelism", "2"),
        *("--checkpoint-interval", "0.5", "--checkpoint-timeout", "30"),
        *("--alignment-timeout", "5"),
    ]
    return ChaosApp(args, dict(os.environ), tmp_path / "events.jsonl", tmp_path / "app.log")


def wait_for_totals(app: ChaosApp, bootstrap: str, sink: str, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while len(read_committed(bootstrap, sink, decode_json)) < count:
        assert app.proc.poll() is None, f"the application exited with {app.proc.returncode}"
        assert time.monotonic() < deadline, f"fewer than {count} totals within {timeout_s}s"
        time.sleep(0.5)  # polls a topic: no notification to await


def test_a_pipeline_runs_exactly_once_on_the_cluster(
    cluster: ClusterInfo, kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    produce_orders(kafka_bootstrap, source, range(1000))
    app = start_app(
        kafka_bootstrap, tmp_path, cluster.master_url, "cl-" + source[-8:], source, sink
    )
    try:
        wait_for_totals(app, kafka_bootstrap, sink, 1000, 180)
        # The tasks run in the cluster's executors: one application holding two cores.
        seen = master_state(cluster.ui_url)
        assert seen.active_apps == 1 and seen.cores - seen.cores_free == 2, seen
        produce_orders(kafka_bootstrap, source, range(1000, 1500))
        wait_for_totals(app, kafka_bootstrap, sink, 1500, 120)
        assert app.stop(120) == 0
    finally:
        app.cleanup()
    report = compare_totals(
        expected_totals(range(1500)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert (report.duplicates, report.losses, report.wrong) == (0, 0, 0), report
    names = [e["event"] for e in app.events()]
    assert "worker_lost" not in names and names.count("checkpoint_committed") >= 2


def _kill_machine(worker_pid: int) -> int:
    """SIGKILL a worker JVM with everything below it (executor, its Python daemon and
    workers, which lead groups of their own): as if its machine died. The groups killed."""
    groups = {os.getpgid(pid) for pid in [worker_pid, *descendants(worker_pid)]}
    for group in groups:
        os.killpg(group, signal.SIGKILL)
    return len(groups)


def test_a_worker_machine_that_dies_is_recovered_exactly_once(
    cluster: ClusterInfo,
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    tmp_path: Path,
    record_property: Any,
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    produce_orders(kafka_bootstrap, source, range(2000))
    name = "cl-kill-" + source[-8:]
    app = start_app(kafka_bootstrap, tmp_path, cluster.master_url, name, source, sink)
    try:
        wait_for_totals(app, kafka_bootstrap, sink, 2000, 180)
        busy = {w.port for w in master_state(cluster.ui_url).alive_workers if w.cores_used}
        victim = next(w for w in cluster.workers if w.port in busy)
        groups = _kill_machine(victim.pid)
        killed_at = time.monotonic()
        assert groups >= 2  # the worker's group, and the executor's Python daemon's
        produce_orders(kafka_bootstrap, source, range(2000, 3000))
        app.wait_event(
            "a new generation",
            lambda events: next(
                (e for e in events if e["event"] == "generation_started" and e["generation"] >= 2),
                None,
            ),
            180,
        )
        recovered_s = time.monotonic() - killed_at
        wait_for_totals(app, kafka_bootstrap, sink, 3000, 180)
        assert app.stop(120) == 0
    finally:
        app.cleanup()

    report = compare_totals(
        expected_totals(range(3000)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert (report.duplicates, report.losses, report.wrong) == (0, 0, 0), report
    assert any(e["event"] == "worker_lost" for e in app.events())
    # The spare worker took the dead one's place.
    seen = master_state(cluster.ui_url)
    assert victim.port not in seen.alive_ports() and len(seen.alive_workers) == 2
    record_property("recovery_s", round(recovered_s, 1))
    print(f"\nworker killed -> new generation running: {recovered_s:.1f}s")


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Three KRaft nodes of their own (RF 3, min.insync.replicas 2); their bootstrap."""
    brokers = LocalCluster(tmp_path_factory.mktemp("kafka-cluster") / "home")
    try:
        yield brokers.start().bootstrap
    finally:
        brokers.stop()


def test_a_chaos_round_on_the_spark_cluster_with_three_brokers_and_an_s3_store(
    cluster: ClusterInfo,
    kafka_cluster: str,
    s3_bucket: str,
    tmp_path: Path,
    record_property: Any,
) -> None:
    settings = s3_chaos_settings(
        kafka_cluster,
        tmp_path,
        s3_bucket,
        parallelism=1,  # two stages of one task: two of the three one-core workers
        checkpoint_timeout_s=30.0,
        master=cluster.master_url,
    )
    with ChaosRun(str(PIPELINES / "product_totals.py"), settings) as run:
        # A task killed in an executor of the cluster after its snapshot reached S3.
        worker = run.run_round(1, FaultPoint.AFTER_SNAPSHOT, None)
        # The driver killed once a decided stage's manifest is on S3, before its Commit.
        driver = run.run_round(2, FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE, None)
    for result, kind in ((worker, KillKind.WORKER), (driver, KillKind.APPLICATION)):
        assert result.report.exact, result.line()
        assert result.kill.kind is kind, result.line()
        assert result.in_flight.records > 0, result.line()
    assert worker.recovery is RecoveryPath.IN_PLACE, worker.line()
    assert driver.recovery is RecoveryPath.NEW_APPLICATION, driver.line()
    record_property("recovery_s", {"worker": worker.recovery_s, "driver": driver.recovery_s})
