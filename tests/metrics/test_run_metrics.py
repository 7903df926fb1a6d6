"""`laminar-kafka run --metrics-port`: the endpoint answers while the pipeline runs.

The pipeline runs as its own application (the command installs signal handlers)
on a port the system picks (`--metrics-port 0`); the test reads the address from
the command's output, scrapes it over HTTP and stops the run with SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import produce_orders

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
_WRAPPER = """\
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.testing.retarget import retarget

pipeline = retarget(load_pipeline({source!r}), name={name!r}, topics={topics!r})
"""
_URL = re.compile(r"serving metrics at (http://\S+/metrics)")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    for (found, found_labels), value in samples.items():
        if found == name and set(labels.items()) <= found_labels:
            return value
    return None


def test_the_run_serves_its_metrics_while_it_runs(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    name = "metrics-" + source[-8:]
    wrapper = tmp_path / "pipeline.py"
    topics = {"orders": source, "orders-enriched": sink}
    wrapper.write_text(
        _WRAPPER.format(source=str(PIPELINES / "orders_enrich.py"), name=name, topics=topics)
    )
    produce_orders(kafka_bootstrap, source, range(2000))
    log = tmp_path / "app.log"
    with log.open("w") as app_log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "laminar_kafka", "run", str(wrapper), "--bootstrap",
             kafka_bootstrap, "--checkpoint-dir", str(tmp_path / "checkpoints"),
             "--parallelism", "2", "--checkpoint-interval", "0.5", "--metrics-port", "0",
             "--lag-interval", "1"],
            stdin=subprocess.DEVNULL, stdout=app_log, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
        try:
            samples = _scrape_until_ready(proc, log, name, timeout_s=180)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(90) == 0, log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert (sample(samples, "laminar_checkpoints_committed_total", pipeline=name) or 0) > 0
    assert sample(samples, "laminar_checkpoint_duration_seconds_count", pipeline=name)
    # Every order read at least once (a checkpoint that aborts rewinds and reads again).
    read = sample(samples, "laminar_stage_records_in_total", pipeline=name, stage="0")
    assert (read or 0) >= 2000
    assert sample(samples, "laminar_last_committed_checkpoint_id", pipeline=name)
    for partition in ("0", "1"):
        lag = sample(samples, "laminar_consumer_lag_records", topic=source, partition=partition)
        assert lag is not None and lag >= 0
    output = log.read_text()
    assert "records/s" in output, output[-3000:]


def _scrape_until_ready(
    proc: subprocess.Popen[str], log: Path, name: str, timeout_s: float
) -> Samples:
    """Scrape until every order was read and the lag was read once; the last scrape."""
    deadline = time.monotonic() + timeout_s
    url = None
    samples: Samples = {}
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the run exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        found = _URL.search(log.read_text())
        url = url or (found.group(1) if found else None)
        if url is not None:
            samples = scrape(url)
            read = sample(samples, "laminar_stage_records_in_total", pipeline=name, stage="0")
            lag = sample(samples, "laminar_consumer_lag_records", pipeline=name)
            if read is not None and read >= 2000 and lag is not None:
                return samples
        time.sleep(0.5)
    raise AssertionError(f"metrics not ready within {timeout_s:.0f}s (url {url}): {samples}")
