"""Task liveness on a real broker and Spark local[4]: a task busy in a user function for
longer than the heartbeat timeout is left alone (its heartbeat thread runs on), and a task
whose heartbeats stop (SIGSTOP, as the chaos `pause` fault does) is replaced within the
heartbeat timeout, long before the checkpoint timeout; the output stays exact."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline, RuntimeConfig
from laminar_kafka.runtime.driver.events import CheckpointCommitted, GenerationStarted, WorkerLost
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import compare_ids, produce_orders, read_committed
from laminar_kafka.testing.run import BackgroundRun

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

HEARTBEAT_TIMEOUT_S = 3.0
SLEEP_S = 8.0
"""What the slow user function takes for one record: well past the heartbeat timeout."""

decode_json = JsonFormat().decode_one


def _config(bootstrap: str, tmp_path: Path, checkpoint_timeout_s: float) -> RuntimeConfig:
    return RuntimeConfig(
        bootstrap=bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=checkpoint_timeout_s,
        heartbeat_timeout_s=HEARTBEAT_TIMEOUT_S,
    )


def _ids(name: str, source: str, sink: str, slow_id: int | None = None) -> Pipeline:
    def passed(o: dict[str, Any]) -> dict[str, Any]:
        if o["id"] == slow_id:
            time.sleep(SLEEP_S)  # a user function that takes long over one record
        return {"id": o["id"]}

    p = Pipeline(name)
    p.source(source, value_format=AvroFormat.from_schema("order")).map(passed).sink(sink, key="id")
    return p


def _exact(bootstrap: str, sink: str, ids: range) -> None:
    report = compare_ids(list(ids), [o["id"] for o in read_committed(bootstrap, sink, decode_json)])
    assert (report.duplicates, report.losses) == (0, 0)


def test_a_task_long_in_a_user_function_is_not_taken_for_dead(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    config = _config(kafka_bootstrap, tmp_path, checkpoint_timeout_s=30.0)
    run = BackgroundRun(_ids("busy-" + source[-8:], source, sink, slow_id=7), config, spark_context)
    produce_orders(kafka_bootstrap, source, range(20))
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 20)
    stats = run.stop()

    _exact(kafka_bootstrap, sink, range(20))
    assert run.count(WorkerLost) == 0 and stats.restarts == 0 and stats.generations == 1
    # A checkpoint waited on the busy task for longer than the heartbeat timeout.
    waited = max(e.duration_s for e in run.events if isinstance(e, CheckpointCommitted))
    assert waited > HEARTBEAT_TIMEOUT_S + 1


def test_a_task_whose_heartbeats_stop_is_replaced_within_the_heartbeat_timeout(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    name = "stop-" + source[-8:]
    config = _config(kafka_bootstrap, tmp_path, checkpoint_timeout_s=60.0)
    run = BackgroundRun(_ids(name, source, sink), config, spark_context)
    produce_orders(kafka_bootstrap, source, range(500))
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 100)
    victim = int((pid_dir / f"{name}.g1.t0.pid").read_text())
    stopped_at = time.time()
    os.kill(victim, signal.SIGSTOP)
    try:
        produce_orders(kafka_bootstrap, source, range(500, 1000))
        run.wait_for(lambda: run.count(GenerationStarted) >= 2, 60, "a new generation")
        run.wait_for_output(kafka_bootstrap, sink, decode_json, 1000)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGCONT)
    stats = run.stop()

    _exact(kafka_bootstrap, sink, range(1000))
    lost = next(e for e in run.events if isinstance(e, WorkerLost))
    assert lost.generation == 1 and "task 0 sent no heartbeat" in lost.reason
    # Noticed a heartbeat timeout after the stop (give or take a beat), not a checkpoint
    # timeout (60 s) after it.
    assert HEARTBEAT_TIMEOUT_S - 1 < lost.at - stopped_at < HEARTBEAT_TIMEOUT_S + 4
    assert stats.restarts == 1
