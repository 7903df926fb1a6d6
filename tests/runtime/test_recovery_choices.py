"""Starting when Kafka lost the offset markers: refuse, resume on request, or start over
(a file sink keeps the old run's files: checkpoint ids go on counting)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.admin import delete_committed_offsets
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.sinks import published_epochs, read_published
from laminar_kafka.storage.locations import files_under, store_path
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import (
    compare_totals,
    expected_totals,
    order,
    produce_orders,
    read_committed,
)
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_pipeline_runs import config, totals

pytestmark = [pytest.mark.integration, pytest.mark.spark]

decode_json = JsonFormat().decode_one


def test_lost_markers_refuse_then_resume_from_the_latest_checkpoint(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "lm-" + source[-8:]
    cfg = config(kafka_bootstrap, tmp_path)
    produce_orders(kafka_bootstrap, source, range(1000))
    first = BackgroundRun(totals(name, source, sink), cfg, spark_context)
    first.wait_for_output(kafka_bootstrap, sink, decode_json, 1000)
    first.stop()
    partitions = [(source, p) for p in range(4)]
    delete_committed_offsets(KafkaConnection(kafka_bootstrap), name, partitions)

    # Without markers a fresh start would replay all 1000 orders into the totals.
    with pytest.raises(CheckpointError, match="--from-checkpoint latest") as refused:
        PipelineRunner(totals(name, source, sink), cfg, spark_context).run()
    assert "expired" in str(refused.value) and "--reset" in str(refused.value)

    produce_orders(kafka_bootstrap, source, range(1000, 1500))
    resumed_cfg = replace(cfg, from_latest_checkpoint=True)
    second = BackgroundRun(totals(name, source, sink), resumed_cfg, spark_context)
    second.wait_for_output(kafka_bootstrap, sink, decode_json, 1500)
    second.stop()

    report = compare_totals(
        expected_totals(range(1500)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert (report.duplicates, report.losses) == (0, 0)


def test_reset_starts_over_on_purpose(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    name = "rz-" + source[-8:]
    cfg = config(kafka_bootstrap, tmp_path)
    produce_orders(kafka_bootstrap, source, range(300))
    first = BackgroundRun(totals(name, source, sink), cfg, spark_context)
    first.wait_for_output(kafka_bootstrap, sink, decode_json, 300)
    first.stop()
    store = CheckpointStore(cfg.checkpoint_dir, name)
    assert store.complete_ids()

    again = BackgroundRun(totals(name, source, sink), replace(cfg, reset=True), spark_context)
    again.wait_for_output(kafka_bootstrap, sink, decode_json, 600)
    stats = again.stop()

    outputs: list[dict[str, Any]] = read_committed(kafka_bootstrap, sink, decode_json)
    # The second run counted every order again from an empty state: each customer's
    # counts 1..n appear twice, once per run.
    assert len(outputs) == 600
    counts: dict[str, list[int]] = {}
    for o in outputs:
        counts.setdefault(o["customer"], []).append(o["orders"])
    per_customer = Counter(order(i)["customer"] for i in range(300))
    for customer, n in per_customer.items():
        assert sorted(counts[customer]) == sorted([*range(1, n + 1), *range(1, n + 1)])
    # Generations go on counting: the first run's barriers, read again from the
    # start of the source, belong to an older generation and are skipped.
    assert store.read_generation().generation == 2
    assert stats.restarts == 0


def ids_to_files(name: str, source: str, url: str) -> Pipeline:
    p = Pipeline(name)
    p.source(source, value_format=AvroFormat.from_schema("order")).map(
        lambda o: {"id": o["id"]}
    ).sink_files(url, format="jsonl")
    return p


def test_a_reset_publishes_new_files_beside_the_old_runs(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    url = str(tmp_path / "out")
    name = "rf-" + source[-8:]
    cfg = config(kafka_bootstrap, tmp_path)
    produce_orders(kafka_bootstrap, source, range(300))

    def published_by(first_generation: int) -> int:
        return sum(e.rows for e in published_epochs(url) if e.generation >= first_generation)

    first = BackgroundRun(ids_to_files(name, source, url), cfg, spark_context)
    first.wait_for(lambda: published_by(1) >= 300, 120, "run 1's 300 rows")
    first.stop()
    before = {str(f): (f.stat().st_ino, f.stat().st_mtime_ns) for f in files_under(store_path(url))}
    run_1 = {e.checkpoint_id for e in published_epochs(url)}

    # Run 2 starts over from the source's start and writes every id again.
    again = BackgroundRun(ids_to_files(name, source, url), replace(cfg, reset=True), spark_context)
    again.wait_for(lambda: published_by(2) >= 300, 120, "run 2's 300 rows")
    again.stop()

    after = {str(f): (f.stat().st_ino, f.stat().st_mtime_ns) for f in files_under(store_path(url))}
    rewritten = sorted(f for f, seen in before.items() if after.get(f) != seen)
    assert rewritten == [], f"run 2 rewrote {len(rewritten)} files of run 1: {rewritten[:3]}"
    assert sorted(r["id"] for r in read_published(url)) == sorted([*range(300), *range(300)])
    run_2 = {e.checkpoint_id for e in published_epochs(url)} - run_1
    assert run_2 and min(run_2) > max(run_1), (run_1, run_2)
