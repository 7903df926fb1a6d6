"""`--from-checkpoint latest` picks the run's start once; a crash afterwards resumes from that.

The group's offsets are lost after a first run, and a second run resumes with
`--from-checkpoint latest` from checkpoint S. Its first checkpoint S+1 is
decided, then a task (or the whole application) is killed before the tasks
commit it: the killed transactions are aborted, their partitions have no offset
marker, and S+1, a decision and not a commit, must not be where they resume.
The application killed after it recorded S, before its first generation, resumes
from S too. A two-stage pipeline whose newest checkpoint is partial resumes each
stage from the newest checkpoint that decided it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat
from laminar_kafka.chaos.in_flight_read import committed_offsets
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.checkpoint.committed_markers import CommittedMarkers
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.admin import delete_committed_offsets
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import (
    committed_end_offsets,
    compare_totals,
    expected_totals,
    produce_orders,
    read_committed,
)
from tests.runtime.test_failed_prepare import _WRAPPER, PIPELINES, _await, _events

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

decode_json = JsonFormat().decode_one


class _App:
    """The example pipeline as its own application (fault settings only reach its
    Spark workers through the environment it starts with)."""

    def __init__(self, tmp_path: Path, bootstrap: str, wrapper: Path, label: str) -> None:
        self.tmp_path, self.bootstrap, self.wrapper = tmp_path, bootstrap, wrapper
        self.events = tmp_path / f"events-{label}.jsonl"
        self.log = tmp_path / f"app-{label}.log"
        self.proc: subprocess.Popen[str] | None = None

    def start(self, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("LAMINAR_FAULT")}
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "laminar_kafka", "run", str(self.wrapper), "--bootstrap",
                 self.bootstrap, "--checkpoint-dir", str(self.tmp_path / "checkpoints"),
                 "--checkpoint-interval", "0.5", "--parallelism", "2",
                 "--events-file", str(self.events), *extra],
                env={**clean, **(env or {})}, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, text=True, start_new_session=True,
            )  # fmt: skip
        return self.proc

    def wait(self, condition: Any, what: str, timeout_s: float = 180) -> None:
        assert self.proc is not None
        _await(condition, self.proc, self.log, timeout_s, what)

    def seen(self, event: str) -> list[dict[str, Any]]:
        return [e for e in _events(self.events) if e["event"] == event]

    def drain(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(120) == 0, self.log.read_text()[-2000:]

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


# A task killed after S+1's decision, and the application killed before its first
# generation. LAMINAR_CHAOS_FULL=1 adds the application killed after S+1's decision
# (three applications, about 35 s); the in-process engine meets that point in every
# example (tests/chaos/test_engine_examples.py).
POINTS = [FaultPoint.AFTER_DECISION_BEFORE_COMMIT, FaultPoint.RUN_START_RECORDED]
if os.environ.get("LAMINAR_CHAOS_FULL") == "1":
    POINTS.append(FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE)


@pytest.mark.parametrize("point", POINTS, ids=lambda p: p.value)
def test_a_crash_in_the_first_checkpoint_after_a_latest_start_loses_nothing(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path, point: FaultPoint
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "ls-" + source[-8:]
    wrapper = tmp_path / "pipeline.py"
    topics = {"orders": source, "customer-totals": sink}
    wrapper.write_text(
        _WRAPPER.format(source=str(PIPELINES / "customer_totals.py"), name=name, topics=topics)
    )
    partitions = [(source, p) for p in range(4)]
    apps = [_App(tmp_path, kafka_bootstrap, wrapper, label) for label in ("a", "b", "c")]
    try:
        produce_orders(kafka_bootstrap, source, range(400))
        first = apps[0]
        first.start()
        first.wait(lambda: len(read_committed(kafka_bootstrap, sink, decode_json)) >= 400,
                   "the first run's output")  # fmt: skip
        first.drain()
        delete_committed_offsets(KafkaConnection(kafka_bootstrap), name, partitions)
        latest = CheckpointStore(str(tmp_path / "checkpoints"), name).latest_complete()
        assert latest is not None
        start = latest.checkpoint_id

        # All of this run's input is there before it starts: the barriers of its first
        # checkpoint follow every record, so that checkpoint holds all of it.
        produce_orders(kafka_bootstrap, source, range(400, 1000))
        faults = tmp_path / "faults"
        faults.mkdir()
        fault_env = {
            "LAMINAR_FAULT": point.value,
            "LAMINAR_FAULT_DIR": str(faults),
            "LAMINAR_FAULT_MIN_CHECKPOINT": str(start + 1),
            "LAMINAR_FAULT_TASK": "1",
        }
        second = apps[1]
        second.start("--from-checkpoint", "latest", env=fault_env)
        fired = faults / f"fired-{point.value}"
        second.wait(fired.exists, f"the kill at {point.value}")
        if point.in_driver:
            assert second.proc is not None and second.proc.wait(60) == -signal.SIGKILL
            # The user starts it again the same way; the run's start must still hold.
            second = apps[2]
            second.start("--from-checkpoint", "latest")
        else:
            second.wait(lambda: second.seen("worker_lost"), "the restart of the killed task")
        ends = committed_end_offsets(kafka_bootstrap, source)

        def all_read() -> bool:
            found = committed_offsets(kafka_bootstrap, name, partitions)
            return all(found[(source, p)] >= end for p, end in ends.items())

        second.wait(all_read, "committed offsets at the end of the input")
        second.drain()
    finally:
        for app in apps:
            app.kill()

    decided = [e["checkpoint_id"] for e in apps[1].seen("checkpoint_committed")]
    if not point.in_driver:
        assert decided and decided[0] == start + 1, decided  # the kill hit the first one
    report = compare_totals(
        expected_totals(range(1000)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert report.exact, report


def test_a_partial_last_checkpoint_resumes_each_stage_from_its_newest_decided_cut(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    # Stage 0 committed checkpoint S+1, stage 1 did not (a task of stage 1 died before
    # its Ack), the application died, and then Kafka lost every offset. Resuming stage 0
    # from S too would write epoch S+1 into the internal topic a second time, and stage 1,
    # resuming at S's cut, would count those orders twice.
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "lp-" + source[-8:]
    wrapper = tmp_path / "pipeline.py"
    topics = {"orders": source, "product-totals": sink}
    wrapper.write_text(
        _WRAPPER.format(source=str(PIPELINES / "product_totals.py"), name=name, topics=topics)
    )
    store = CheckpointStore(str(tmp_path / "checkpoints"), name)
    apps = [_App(tmp_path, kafka_bootstrap, wrapper, label) for label in ("a", "b", "c")]
    try:
        produce_orders(kafka_bootstrap, source, range(400))
        apps[0].start()
        apps[0].wait(lambda: len(read_committed(kafka_bootstrap, sink, decode_json)) >= 400,
                     "the first run's output")  # fmt: skip
        apps[0].drain()
        start = store.highest_id()

        produce_orders(kafka_bootstrap, source, range(400, 1000))
        faults = tmp_path / "faults"
        faults.mkdir()
        fault_env = {
            "LAMINAR_FAULT": FaultPoint.AFTER_SNAPSHOT.value,
            "LAMINAR_FAULT_DIR": str(faults),
            "LAMINAR_FAULT_MIN_CHECKPOINT": str(start + 1),
            "LAMINAR_FAULT_TASK": "2",  # the first task of stage 1 (2 tasks a stage)
        }
        apps[1].start(env=fault_env)
        apps[1].wait((faults / "fired-after_snapshot").exists, "the kill of a stage 1 task")
        apps[1].kill()  # long before its restarted generation could commit again
    finally:
        for app in apps[:2]:
            app.kill()
    partial = store.read_manifest(start + 1)
    assert partial is not None and partial.decided_stages == (0,), partial
    assert store.complete_ids()[-1] == start
    internal = f"{name}.by-product.repartition"
    counts = {source: 4, internal: 2}
    partitions = [(t, p) for t, n in counts.items() for p in range(n)]
    reader = CommittedMarkers(KafkaConnection(kafka_bootstrap), name, partitions)
    try:
        markers = reader.read(timeout_s=30)
    finally:
        reader.close()
    assert {m.checkpoint_id for k, m in markers.items() if k[0] == source if m} == {start + 1}
    assert {m.checkpoint_id for k, m in markers.items() if k[0] == internal if m} == {start}
    delete_committed_offsets(KafkaConnection(kafka_bootstrap), name, partitions)

    try:
        apps[2].start("--from-checkpoint", "latest")
        apps[2].wait(lambda: len(read_committed(kafka_bootstrap, sink, decode_json)) >= 1000,
                     "all output")  # fmt: skip
        apps[2].drain()
    finally:
        apps[2].kill()
    report = compare_product_totals(range(1000), read_committed(kafka_bootstrap, sink, decode_json))
    assert report.exact, report
