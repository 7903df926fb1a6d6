"""A pipeline runs on a standalone cluster whose workers share nothing with the driver's
environment or folders, as on machines of their own: the `LAMINAR_*` settings and the object
store's credentials reach the executors through Spark's configuration, and a module next to
the pipeline file travels with it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from laminar_kafka import JsonFormat
from laminar_kafka.chaos.app import ChaosApp
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.local.cluster import ClusterInfo, SparkCluster
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import produce_orders, read_committed
from tests.cluster.test_cluster import wait_for_totals

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

HELPER = """\
import os


def tagged(customer, total):
    return {"customer": customer, "total": total, "tag": os.environ.get("LAMINAR_EXAMPLE_TAG")}
"""

PIPELINE_FILE = """\
import tagging

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline({name!r})
(
    pipeline.source(
        {source!r}, value_format=AvroFormat.from_schema("order"), partitioned_by="customer"
    )
    .key_by("customer")
    .aggregate(initial=lambda: 0, add=lambda n, o: n + o["amount"], emit=tagging.tagged)
    .sink({sink!r}, value_format=JsonFormat(), key="customer")
)
"""


@pytest.fixture(scope="module")
def clean_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterInfo]:
    """One worker of two cores, started from an empty environment (`env -i`): PATH and
    HOME, and the path to this checkout (where the workers' laminar-kafka is installed)."""
    home = tmp_path_factory.mktemp("clean-cluster")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/"),
        "PYTHONPATH": str(REPO),
        "LAMINAR_CLUSTER_HOME": str(home),
    }
    start = ["cluster", "start", "--workers", "1", "--cores-per-worker", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "laminar_kafka", *start],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    info = SparkCluster(home).status()
    assert info is not None
    try:
        yield info
    finally:
        SparkCluster(home).stop()


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_settings_credentials_and_modules_reach_workers_of_a_clean_environment(
    clean_cluster: ClusterInfo,
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    s3_bucket: str,
    tmp_path: Path,
) -> None:
    source = topic_factory.create("clean", partitions=2)
    sink = source + "-out"
    name = "clean-" + source[-8:]
    project, pids = tmp_path / "project", tmp_path / "pids"
    project.mkdir()
    pids.mkdir()
    (project / "tagging.py").write_text(HELPER)
    pipeline_file = project / "pipeline.py"
    pipeline_file.write_text(PIPELINE_FILE.format(name=name, source=source, sink=sink))
    produce_orders(kafka_bootstrap, source, range(40))

    env = dict(os.environ)  # with the local S3's AWS variables (the s3_bucket fixture)
    env.update(
        PYTHONPATH=str(REPO),
        LAMINAR_PID_DIR=str(pids),
        LAMINAR_EXAMPLE_TAG="from-the-driver",
        DRIVER_ONLY="not for executors",
    )
    args = [
        *("run", str(pipeline_file), "--bootstrap", kafka_bootstrap),
        *("--master", clean_cluster.master_url, "--parallelism", "2"),
        *("--checkpoint-dir", f"{s3_bucket}/checkpoints", "--checkpoint-interval", "0.5"),
    ]
    app = ChaosApp(args, env, tmp_path / "events.jsonl", tmp_path / "app.log")
    try:
        wait_for_totals(app, kafka_bootstrap, sink, 40, 120)
        tasks = sorted(pids.glob(f"{name}.g*.t*.pid"))
        assert len(tasks) == 2, tasks
        seen = environ_of(int(tasks[0].read_text()))
        assert seen["LAMINAR_EXAMPLE_TAG"] == "from-the-driver"
        assert seen["AWS_ENDPOINT_URL"] == os.environ["AWS_ENDPOINT_URL"]
        assert "DRIVER_ONLY" not in seen  # nothing came by inheritance
        assert app.stop(120) == 0
    finally:
        app.cleanup()
    totals = read_committed(kafka_bootstrap, sink, JsonFormat().decode_one)
    assert {t["tag"] for t in totals} == {"from-the-driver"}
    # The tasks wrote their state snapshots to the store, with the credentials given.
    latest = CheckpointStore(f"{s3_bucket}/checkpoints", name).latest_complete()
    assert latest is not None and latest.snapshots
