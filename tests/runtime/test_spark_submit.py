"""`spark-submit pipeline.py` runs the pipeline in the application spark-submit started, with
the configuration it was given (here: a UI the run would otherwise turn off locally, and
a master of more cores than the run asks for, which its start line names)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from laminar_kafka import JsonFormat
from laminar_kafka.local.cluster.launch import spark_class
from laminar_kafka.local.processes.ports import free_ports
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import read_committed

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]

PIPELINE_FILE = """\
from laminar_kafka import JsonFormat, Pipeline

pipeline = Pipeline({name!r})
(
    pipeline.source({source!r}, JsonFormat())
    .map(lambda order: {{**order, "doubled": order["amount"] * 2}})
    .sink({sink!r}, value_format=JsonFormat())
)


if __name__ == "__main__":
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
"""


def produce_json(bootstrap: str, topic: str, values: Iterable[dict[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, json.dumps(value).encode())
    assert producer.flush(30) == 0


def wait_for_output(
    proc: subprocess.Popen[bytes],
    bootstrap: str,
    sink: str,
    count: int,
    timeout_s: float,
    log: Path,
) -> list[Any]:
    """The sink's committed records once there are `count`; fails if the run exits first."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = read_committed(bootstrap, sink, JsonFormat().decode_one)
        if len(found) >= count:
            return found
        assert proc.poll() is None, f"exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{len(found)} outputs:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)  # polls a topic: no notification to await


def end_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the run's process group (spark-submit's JVM, the driver and its workers)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def application_names(ui_port: int) -> list[str]:
    url = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    with urllib.request.urlopen(url, timeout=30) as response:  # a loaded machine
        return [app["name"] for app in json.load(response)]


def test_spark_submit_runs_a_pipeline_file_in_the_submitted_application(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = topic_factory.create("submit", partitions=2)
    sink = source + "-out"
    name = "submit-" + source[-8:]
    pipeline_file = tmp_path / "submitted.py"
    pipeline_file.write_text(PIPELINE_FILE.format(name=name, source=source, sink=sink))
    produce_json(kafka_bootstrap, source, ({"id": i, "amount": i} for i in range(20)))
    (ui_port,) = free_ports(1)
    submit = spark_class().parent / "spark-submit"
    command = [
        *(str(submit), "--master", "local[3]", "--name", "submitted-app"),
        *("--conf", f"spark.pyspark.python={sys.executable}"),
        *("--conf", "spark.ui.enabled=true", "--conf", f"spark.ui.port={ui_port}"),
        *(str(pipeline_file), "--bootstrap", kafka_bootstrap, "--parallelism", "2"),
        *("--checkpoint-dir", str(tmp_path / "checkpoints"), "--checkpoint-interval", "0.5"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["PYTHONPATH"] = str(REPO)
    log = tmp_path / "submit.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        found = wait_for_output(proc, kafka_bootstrap, sink, 20, 120, log)
        assert sorted(r["doubled"] for r in found) == [2 * i for i in range(20)]
        # The application is spark-submit's, named and with the UI it was given.
        assert application_names(ui_port) == ["submitted-app"]
        # The start line names the submitted master, not local[--parallelism].
        start = next(x for x in log.read_text().splitlines() if x.startswith("running "))
        assert " master=local[3] " in start
    finally:
        end_group(proc)
