"""End-to-end runs on a real broker and Spark local[4]: exactly-once output, dead letters,
unaligned checkpoints, aborts, restarts of the application and of a changed parallelism."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from laminar_kafka import AvroFormat, JsonFormat, Pipeline, RuntimeConfig
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.runtime.driver.events import GenerationStarted
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import (
    compare_ids,
    compare_totals,
    expected_totals,
    produce_orders,
    read_committed,
    read_committed_records,
)
from laminar_kafka.testing.run import BackgroundRun

pytestmark = [pytest.mark.integration, pytest.mark.spark]

decode_json = JsonFormat().decode_one


def config(bootstrap: str, tmp_path: Path, **overrides: Any) -> RuntimeConfig:
    settings: dict[str, Any] = dict(
        bootstrap=bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
        alignment_timeout_s=5.0,
    )
    settings.update(overrides)
    return RuntimeConfig(**settings)


def stateless(name: str, source: str, sink: str) -> Pipeline:
    p = Pipeline(name)
    (
        p.source(source, value_format=AvroFormat.from_schema("order"))
        .filter(lambda o: o["id"] % 5 != 0)
        .map(lambda o: {"id": o["id"], "double": o["amount"] * 2})
        .sink(sink, key="id")
    )
    return p


def totals(
    name: str, source: str, sink: str, barriers: bool = True, partitioned: bool = False
) -> Pipeline:
    """Totals per customer: kept after a repartition (two stages), or where the orders
    arrive when the source is declared partitioned by customer (one stage)."""
    p = Pipeline(name)
    by = "customer" if partitioned else None
    (
        p.source(
            source,
            value_format=AvroFormat.from_schema("order"),
            barriers=barriers,
            partitioned_by=by,
        )
        .key_by("customer")
        .aggregate(
            initial=lambda: (0, 0),
            add=lambda t, o: (t[0] + 1, t[1] + o["amount"]),
            emit=lambda c, t: {"customer": c, "orders": t[0], "amount": t[1]},
        )
        .sink(sink, key="customer")
    )
    return p


def test_stateless_pipeline_outputs_each_kept_input_once(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    produce_orders(kafka_bootstrap, source, range(3000))
    run = BackgroundRun(
        stateless("st-" + source[-8:], source, sink),
        config(kafka_bootstrap, tmp_path),
        spark_context,
    )
    kept = [i for i in range(3000) if i % 5 != 0]
    run.wait_for_output(kafka_bootstrap, sink, decode_json, len(kept))
    produce_orders(kafka_bootstrap, source, range(3000, 4000))
    kept += [i for i in range(3000, 4000) if i % 5 != 0]
    run.wait_for_output(kafka_bootstrap, sink, decode_json, len(kept))
    stats = run.stop()

    out = read_committed(kafka_bootstrap, sink, decode_json)
    report = compare_ids(kept, [o["id"] for o in out])
    assert (report.duplicates, report.losses) == (0, 0)
    assert all(o["double"] % 2 == 0 for o in out)
    assert stats.committed >= 2 and stats.restarts == 0


def test_bad_records_go_to_the_dead_letter_topic_with_reason_and_offset(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    name = "dlq-" + source[-8:]
    produce_orders(kafka_bootstrap, source, range(100))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(source, b"\x00not avro", b"c1", partition=0)
    producer.produce(
        source,
        AvroFormat.from_schema("order").encode_one(
            {"id": 999, "customer": "c3", "amount": 5, "ts_ms": 0}
        ),
        b"c3",
        partition=0,
    )
    producer.flush(10)
    run = BackgroundRun(
        totals(name, source, sink, partitioned=True),
        config(kafka_bootstrap, tmp_path),
        spark_context,
    )
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 100)
    dlq = name + ".dlq"
    run.wait_for(lambda: len(read_committed_records(kafka_bootstrap, dlq)) >= 2, 60, "dead letters")
    run.stop()  # drained: every letter the run writes is committed now
    # Exactly the two bad records, in their order, once each, with the original bytes.
    letters = read_committed_records(kafka_bootstrap, dlq)
    misplaced = AvroFormat.from_schema("order").encode_one(
        {"id": 999, "customer": "c3", "amount": 5, "ts_ms": 0}
    )
    assert [(r.header("laminar.source.partition"), r.value) for r in letters] == [
        ("0", b"\x00not avro"),
        ("0", misplaced),
    ]
    reasons = [r.header("laminar.error") or "" for r in letters]
    assert "undecodable value" in reasons[0] and "belongs to partition 1" in reasons[1], reasons
    offsets = [int(r.header("laminar.source.offset") or -1) for r in letters]
    assert offsets[0] >= 0 and offsets[1] == offsets[0] + 1, offsets
    report = compare_totals(
        expected_totals(range(100)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert (report.duplicates, report.losses) == (0, 0)


def test_application_restart_resumes_from_the_last_checkpoint(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "rs-" + source[-8:]
    cfg = config(kafka_bootstrap, tmp_path)
    produce_orders(kafka_bootstrap, source, range(1500))
    first = BackgroundRun(totals(name, source, sink), cfg, spark_context)
    first.wait_for_output(kafka_bootstrap, sink, decode_json, 1500)
    first.stop()

    produce_orders(kafka_bootstrap, source, range(1500, 2500))
    # A smaller parallelism: task 1's partitions move to task 0 with their state.
    second = BackgroundRun(totals(name, source, sink), cfg.with_parallelism(1), spark_context)
    second.wait_for_output(kafka_bootstrap, sink, decode_json, 2500)
    stats = second.stop()

    report = compare_totals(
        expected_totals(range(2500)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert (report.duplicates, report.losses) == (0, 0)
    assert stats.generations == 1
    assert CheckpointStore(cfg.checkpoint_dir, name).read_generation().generation == 2


def test_unaligned_checkpoints_stay_exactly_once(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=8)
    sink = source + "-out"
    name = "ua-" + source[-8:]
    # 8 partitions on one task and an alignment timeout shorter than a batch:
    # most checkpoints fall back to unaligned snapshots.
    cfg = config(
        kafka_bootstrap,
        tmp_path,
        parallelism=1,
        alignment_timeout_s=0.001,
        checkpoint_interval_s=0.2,
        batch_size=50,
    )
    run = BackgroundRun(totals(name, source, sink), cfg, spark_context)
    run.wait_for(lambda: run.count(GenerationStarted) >= 1, 120, "start")
    produce_orders(kafka_bootstrap, source, range(4000))
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 4000, timeout_s=180)
    stats = run.stop()

    report = compare_totals(
        expected_totals(range(4000)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert (report.duplicates, report.losses) == (0, 0)
    assert stats.committed >= 3
    # Unaligned Acks of committed checkpoints: the fallback really ran.
    assert stats.unaligned_acks > 0, stats


def _slow_once(marker: Path) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Stalls the first pass over order 700, once per run (the marker file says so)."""

    def slow(order: dict[str, Any]) -> dict[str, Any]:
        if order["id"] == 700 and not marker.exists():
            marker.touch()
            time.sleep(4.0)
        return order

    return slow


def test_a_stalled_task_aborts_the_checkpoint_and_is_replaced_without_loss(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    p = Pipeline("ab-" + source[-8:])
    (
        p.source(source, value_format=AvroFormat.from_schema("order"))
        .map(_slow_once(tmp_path / "stalled-once"))
        .map(lambda o: {"id": o["id"]})
        .sink(sink)
    )
    cfg = config(
        kafka_bootstrap,
        tmp_path,
        checkpoint_timeout_s=2.0,
        alignment_timeout_s=1.0,
        transaction_timeout_ms=60_000,
    )
    run = BackgroundRun(p, cfg, spark_context)
    run.wait_for(lambda: run.count(GenerationStarted) >= 1, 120, "start")
    produce_orders(kafka_bootstrap, source, range(2000))
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 2000)
    stats = run.stop()

    report = compare_ids(
        range(2000), [o["id"] for o in read_committed(kafka_bootstrap, sink, decode_json)]
    )
    assert (report.duplicates, report.losses) == (0, 0)
    assert stats.aborted >= 1 and stats.restarts >= 1  # timed out, then replaced


@pytest.mark.parametrize(
    "state",
    [{}, {"state_store": "disk", "full_snapshot_every": 3}],
    ids=["memory", "disk-incremental"],
)
def test_a_killed_worker_task_is_restarted_without_loss_or_duplicate(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
    state: dict[str, Any],
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "kw-" + source[-8:]
    cfg = config(kafka_bootstrap, tmp_path, **state)
    run = BackgroundRun(totals(name, source, sink), cfg, spark_context)
    produce_orders(kafka_bootstrap, source, range(2000))
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 500)
    if state:  # killed once a delta is written: recovery reads a base and its deltas
        deltas = lambda: any((tmp_path / "checkpoints").rglob("*.delta"))  # noqa: E731
        run.wait_for(deltas, 60, "a delta checkpoint")
    victim = pid_dir / f"{name}.g1.t0.pid"
    os.kill(int(victim.read_text()), signal.SIGKILL)
    produce_orders(kafka_bootstrap, source, range(2000, 3000))
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 3000)
    stats = run.stop()

    report = compare_totals(
        expected_totals(range(3000)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert (report.duplicates, report.losses) == (0, 0)
    assert stats.restarts == 1
