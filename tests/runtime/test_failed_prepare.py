"""A pre-commit that fails takes the designed path: Ack(ok=false), Abort, rollback, go on.

The pipeline runs as its own application with LAMINAR_FAIL=prepare_fails, so one
task's pre-commit raises while orders are still being produced.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import (
    compare_totals,
    expected_totals,
    produce_orders,
    read_committed,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
_WRAPPER = """\
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.testing.retarget import retarget

pipeline = retarget(load_pipeline({source!r}), name={name!r}, topics={topics!r})
"""


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _await(
    condition: Any, proc: subprocess.Popen[str], log: Path, timeout_s: float, what: str
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None:
            tail = log.read_text()[-2000:]
            raise AssertionError(f"the pipeline exited ({proc.returncode}) before {what}:\n{tail}")
        assert time.monotonic() < deadline, f"no {what} within {timeout_s:.0f}s"
        time.sleep(0.2)


def test_a_failed_pre_commit_aborts_rolls_back_and_the_pipeline_goes_on(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "fp-" + source[-8:]
    wrapper = tmp_path / "pipeline.py"
    topics = {"orders": source, "customer-totals": sink}
    wrapper.write_text(
        _WRAPPER.format(source=str(PIPELINES / "customer_totals.py"), name=name, topics=topics)
    )
    events = tmp_path / "events.jsonl"
    env = {
        **os.environ,
        "LAMINAR_FAIL": "prepare_fails",
        "LAMINAR_FAULT_DIR": str(tmp_path),
        "LAMINAR_FAULT_MIN_CHECKPOINT": "3",
    }
    env.pop("LAMINAR_FAULT", None)
    log = tmp_path / "app.log"
    app_log = log.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "laminar_kafka", "run", str(wrapper), "--bootstrap",
         kafka_bootstrap, "--checkpoint-dir", str(tmp_path / "checkpoints"),
         "--checkpoint-interval", "0.5", "--events-file", str(events)],
        env=env, stdin=subprocess.DEVNULL, stdout=app_log, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        _await(lambda: any(e["event"] == "generation_started" for e in _events(events)),
               proc, log, 120, "start")  # fmt: skip
        # Orders keep arriving while the failure happens: the task has input to
        # read while it waits for the Abort of the failed checkpoint.
        fired = tmp_path / "fired-prepare_fails"
        produced = [0]

        def produce() -> None:
            while not fired.exists() or produced[0] < 3000:
                start = produced[0]
                produce_orders(kafka_bootstrap, source, range(start, start + 100))
                produced[0] = start + 100

        producer = threading.Thread(target=produce)
        producer.start()
        _await(fired.exists, proc, log, 120, "the failure")
        producer.join()
        decode = JsonFormat().decode_one
        _await(lambda: len(read_committed(kafka_bootstrap, sink, decode)) >= produced[0],
               proc, log, 120, "all output")  # fmt: skip
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        app_log.close()

    seen = _events(events)
    aborted = [e for e in seen if e["event"] == "checkpoint_aborted"]
    assert any("injected failure: prepare_fails" in e["reason"] for e in aborted), aborted
    failed_at = min(e["checkpoint_id"] for e in aborted)
    assert any(
        e["event"] == "checkpoint_committed" and e["checkpoint_id"] > failed_at for e in seen
    )
    assert not [e for e in seen if e["event"] == "worker_lost"]  # no task crashed
    outputs = read_committed(kafka_bootstrap, sink, JsonFormat().decode_one)
    report = compare_totals(expected_totals(range(produced[0])), outputs)
    assert report.exact, report
