"""Signed checkpoints on a real broker and Spark local[4]: the key reaches the tasks, which
sign their state files; a restart over a tampered store stops at once, naming the file."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.checkpoint.signing import MAGIC, CheckpointKey
from laminar_kafka.errors import IncurableError
from laminar_kafka.runtime.config import RestartPolicy
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import produce_orders
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_pipeline_runs import config, decode_json, totals

pytestmark = [pytest.mark.integration, pytest.mark.spark]

KEY = CheckpointKey(b"a-key-of-32-characters-for-tests")


def test_a_restart_over_a_swapped_state_file_stops_naming_it(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "sg-" + source[-8:]
    cfg = dataclasses.replace(
        config(kafka_bootstrap, tmp_path, restart=RestartPolicy(max_restarts=3)),
        checkpoint_key=KEY,
    )
    pipeline = totals(name, source, sink, partitioned=True)
    produce_orders(kafka_bootstrap, source, range(400))
    first = BackgroundRun(pipeline, cfg, spark_context)
    first.wait_for_output(kafka_bootstrap, sink, decode_json, 400)
    first.stop()

    store = cfg.checkpoint_store(name)
    latest = store.latest_complete()  # the drain: every partition's marker names it
    assert latest is not None
    files = sorted(set(latest.snapshots.values()))
    assert len(files) == 2 and all(Path(f).read_bytes().startswith(MAGIC) for f in files)
    shutil.copyfile(files[1], files[0])  # task 1's genuine state in task 0's place

    produce_orders(kafka_bootstrap, source, range(400, 500))
    runner = PipelineRunner(pipeline, cfg, spark_context)
    with pytest.raises(IncurableError) as stopped:
        runner.run()
    message = str(stopped.value)
    assert f"state snapshot {files[0]}: refused, not read" in message, message
    assert "it is the genuine state file" in message and Path(files[1]).name in message
    assert runner.stats.restarts == 0, message
