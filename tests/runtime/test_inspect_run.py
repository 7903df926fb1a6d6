"""`inspect` on the store of a real run: every committed marker names a checkpoint still there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.checkpoint.inspection import inspect_store, kafka_marker_reader
from laminar_kafka.cli.main import main
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import produce_orders
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_pipeline_runs import config, decode_json, totals

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_every_committed_marker_names_a_checkpoint_in_the_store(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "insp-" + source[-8:]
    pipeline = totals(name, source, sink)
    cfg = config(kafka_bootstrap, tmp_path, retained_checkpoints=2)
    produce_orders(kafka_bootstrap, source, range(1000))
    run = BackgroundRun(pipeline, cfg, spark_context)
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 1000)

    # While it runs: checkpoints commit and retention deletes old ones as it reads.
    live = inspect_store(
        cfg.checkpoint_dir, name, kafka_marker_reader(cfg.kafka), kafka_bootstrap, True
    )
    assert live.problems == ()
    run.stop()

    command = ["inspect", cfg.checkpoint_dir, "--pipeline", name, "--bootstrap", kafka_bootstrap]
    assert main([*command, "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)["pipelines"]
    kept = {c["checkpoint_id"] for c in report["checkpoints"]}
    markers = report["markers"]
    # The totals are kept after a repartition: the internal topic's partitions
    # (one per task of the second stage) carry markers too.
    (internal,) = pipeline.internal_topics
    expected = [f"{source}:{p}" for p in range(4)] + [f"{internal}:{p}" for p in range(2)]
    assert sorted(m["partition"] for m in markers) == sorted(expected)
    assert all(m["checkpoint_id"] in kept and m["in_store"] for m in markers), (kept, markers)
    assert report["problems"] == []

    newest = report["newest"]
    assert newest["checkpoint_id"] == max(kept)
    assert newest["topology"] == [
        {"step": step, "signature": signature}
        for step, signature in sorted(pipeline.topology().items())
    ]
    # Each of the 10 customers is a key of exactly one partition's table.
    keys = [s["keys"] for f in newest["state_files"] for s in f["steps"]]
    assert sum(keys) == 10, newest["state_files"]

    assert main(command) == 0
    text = capsys.readouterr().out
    assert f"  committed markers ({kafka_bootstrap})" in text and text.endswith("no problems\n")
