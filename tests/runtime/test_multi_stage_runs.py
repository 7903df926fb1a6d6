"""Two-stage pipelines on a real broker and Spark: exactly-once across the repartition,
epochs kept in order in internal partitions, drain, purge, bad keys, deleted internal
topics and changed stages."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from laminar_kafka import AvroFormat, JsonFormat, Pipeline, PipelineRunner
from laminar_kafka.chaos.in_flight_read import committed_offsets
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.control.codec import decode
from laminar_kafka.control.headers import is_control
from laminar_kafka.control.records import Barrier
from laminar_kafka.errors import CheckpointError, LaminarError
from laminar_kafka.formats.internal_batch import BATCH_MARKER, unpack_batch
from laminar_kafka.kafka.admin import watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer
from laminar_kafka.runtime.driver.events import CheckpointCommitted
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import (
    order,
    produce_orders,
    read_committed,
    read_committed_records,
)
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_pipeline_runs import config

pytestmark = [pytest.mark.integration, pytest.mark.spark]

decode_json = JsonFormat().decode_one


def product_totals(name: str, source: str, sink: str, partitioned: bool = True) -> Pipeline:
    p = Pipeline(name)
    (
        p.source(
            source,
            value_format=AvroFormat.from_schema("order"),
            partitioned_by="customer" if partitioned else None,
        )
        .key_by("product", name="by-product")
        .aggregate(
            initial=lambda: {"orders": 0, "amount": 0, "last_id": -1},
            add=lambda t, o: {
                "orders": t["orders"] + 1,
                "amount": t["amount"] + o["amount"],
                "last_id": o["id"],
            },
            emit=lambda product, t: {"product": product, **t},
        )
        .sink(sink, key="product")
    )
    return p


def read_everything(bootstrap: str, topic: str, partitions: int) -> dict[int, list[Any]]:
    """Partition → its committed records in offset order, barriers decoded, data as bytes."""
    ends = {
        p: watermark_offsets(probe_consumer(KafkaConnection(bootstrap)), topic, p)[1]
        for p in range(partitions)
    }
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "multi-stage-test",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[Any]] = defaultdict(list)
    positions = dict.fromkeys(range(partitions), 0)
    deadline = time.monotonic() + 60
    try:
        while any(positions[p] < ends[p] for p in positions):
            assert time.monotonic() < deadline, (positions, ends)
            for m in consumer.consume(1000, 0.5):
                if m.error() is not None:
                    continue
                positions[m.partition()] = m.offset() + 1
                control = is_control(m.headers())
                out[m.partition()].append(decode(m.value()) if control else m.value())
            # Transaction markers take offsets but are never delivered: ask where we are.
            for tp in consumer.position([TopicPartition(topic, p) for p in positions]):
                positions[tp.partition] = max(positions[tp.partition], tp.offset)
    finally:
        consumer.close()
    return out


def test_two_stages_count_every_order_once_per_product_and_drain_empties_internal_topics(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=3)
    sink = source + "-out"
    name = "two-" + source[-8:]
    pipeline = product_totals(name, source, sink)
    (internal,) = pipeline.internal_topics
    produce_orders(kafka_bootstrap, source, range(1500))
    run = BackgroundRun(pipeline, config(kafka_bootstrap, tmp_path), spark_context)
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 1500)
    produce_orders(kafka_bootstrap, source, range(1500, 2000))
    run.stop()

    report = compare_product_totals(range(2000), read_committed(kafka_bootstrap, sink, decode_json))
    assert report.exact, report
    commits = [e for e in run.events if isinstance(e, CheckpointCommitted)]
    assert commits and [s.stage for s in commits[-1].stages] == [0, 1]
    assert commits[-1].stages[1].records_out == commits[-1].stages[0].records_out == 2000
    # Drained: the second stage committed past every record the first one wrote.
    read = committed_offsets(kafka_bootstrap, name, [(internal, p) for p in range(2)])
    left = read_committed_records(kafka_bootstrap, internal, skip_control=True)
    assert [r for r in left if r.offset >= read[(internal, r.partition)]] == []
    # Purged below those offsets after complete checkpoints.
    probe = probe_consumer(KafkaConnection(kafka_bootstrap))
    lows = [watermark_offsets(probe, internal, p)[0] for p in range(2)]
    probe.close()
    assert max(lows) > 0, lows


def test_internal_partitions_hold_epochs_in_order_and_every_record_once(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=3)
    sink = source + "-out"
    name = "epochs-" + source[-8:]
    pipeline = product_totals(name, source, sink)
    (internal,) = pipeline.internal_topics
    produce_orders(kafka_bootstrap, source, range(1200))
    cfg = config(kafka_bootstrap, tmp_path, purge_internal=False, checkpoint_interval_s=0.2)
    run = BackgroundRun(pipeline, cfg, spark_context)
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 1200)
    run.stop()

    records = read_everything(kafka_bootstrap, internal, 2)
    datas = [r for rs in records.values() for r in rs if isinstance(r, bytes)]
    # Every record crossed in MessagePack, many to a message, and is the order it was.
    assert all(d.startswith(BATCH_MARKER) for d in datas)
    crossed = [value for d in datas for value in unpack_batch(d)[2]]
    assert len(crossed) == 1200 and len(datas) < 1200
    orders = sorted(crossed, key=lambda o: o["id"])
    assert orders == [order(i) for i in range(1200)]
    writers = {0, 1}  # the two tasks of the first stage
    for partition, seq in records.items():
        barriers = [(r.checkpoint_id, r.writer) for r in seq if isinstance(r, Barrier)]
        assert barriers, partition
        # Every writer's Barrier(N) comes before any Barrier(N+1): no writer wrote
        # epoch N+1 before the stage's Commit(N).
        by_id: dict[int, list[int]] = defaultdict(list)
        for n, w in barriers:
            by_id[n].append(w)
        assert [n for n, _ in barriers] == sorted(n for n, _ in barriers), partition
        assert all(sorted(ws) == sorted(writers) for ws in by_id.values()), by_id


def test_union_counts_both_sources_and_bad_keys_become_dead_letters(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    left = topic_factory.create("left", partitions=2)
    right = topic_factory.create("right", partitions=1)
    sink = left + "-out"
    name = "union-" + left[-8:]

    def key(record: dict[str, Any]) -> Any:
        if record["k"] == "boom":
            raise ValueError("no key for boom")
        return record["k"]

    p = Pipeline(name)
    p.source(left).union(p.source(right)).key_by(key, name="by-k").count(
        emit=lambda k, n: {"k": k, "n": n}
    ).sink(sink, key="k")
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(300):
        producer.produce(left if i % 2 else right, JsonFormat().encode_one({"k": f"k{i % 7}"}))
    producer.produce(left, b'{"k": "boom"}')
    producer.produce(right, b'{"k": null}')
    producer.flush(10)
    run = BackgroundRun(p, config(kafka_bootstrap, tmp_path), spark_context)
    out = run.wait_for_output(kafka_bootstrap, sink, decode_json, 300)
    dlq = name + ".dlq"
    run.wait_for(lambda: len(read_committed_records(kafka_bootstrap, dlq)) >= 2, 60, "letters")
    run.stop()

    out = read_committed(kafka_bootstrap, sink, decode_json)
    per_key: dict[str, list[int]] = defaultdict(list)
    for r in out:
        per_key[r["k"]].append(r["n"])
    assert {k: sorted(ns) for k, ns in per_key.items()} == {
        f"k{j}": list(range(1, 1 + sum(1 for i in range(300) if i % 7 == j))) for j in range(7)
    }
    reasons = sorted(
        r.header("laminar.error") or "" for r in read_committed_records(kafka_bootstrap, dlq)
    )
    assert len(reasons) == 2
    assert reasons[0] == "key_by key is None"
    assert reasons[1].startswith("key_by raised ValueError: no key for boom")


def test_an_internal_topic_deleted_while_running_stops_the_run_with_a_clear_error(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    pipeline = product_totals("gone-" + source[-8:], source, sink)
    (internal,) = pipeline.internal_topics
    produce_orders(kafka_bootstrap, source, range(300))
    cfg = config(kafka_bootstrap, tmp_path)
    run = BackgroundRun(pipeline, cfg, spark_context)
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 300)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.delete_topics([internal]).values():
        future.result(30)
    produce_orders(kafka_bootstrap, source, range(300, 400))
    with pytest.raises(LaminarError, match="pipeline failed"):
        run.wait_for(lambda: False, 180, "the run to stop")
    assert isinstance(run.error, CheckpointError), run.error
    assert f"internal topic {internal!r}" in str(run.error)
    assert "--reset" in str(run.error)


def test_a_pipeline_whose_stages_changed_is_refused_at_start(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    name = "moved-" + source[-8:]
    cfg = config(kafka_bootstrap, tmp_path)
    produce_orders(kafka_bootstrap, source, range(100))
    one_stage = Pipeline(name)
    one_stage.source(
        source, value_format=AvroFormat.from_schema("order"), partitioned_by="customer"
    ).key_by("customer").count().sink(sink)
    run = BackgroundRun(one_stage, cfg, spark_context)
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 100)
    run.stop()
    # The same step, now after a repartition: its saved tables are per source partition.
    two_stages = Pipeline(name)
    two_stages.source(source, value_format=AvroFormat.from_schema("order")).key_by(
        "customer"
    ).count().sink(sink)
    with pytest.raises(CheckpointError, match="through") as info:
        PipelineRunner(two_stages, cfg, spark_context).run()
    assert "orders" in str(info.value) or source in str(info.value)


def test_an_internal_topic_keeps_its_partition_count_and_refuses_another(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    from laminar_kafka.errors import ConfigError
    from laminar_kafka.kafka.admin import partition_counts
    from laminar_kafka.plan.stages import plan_stages
    from laminar_kafka.runtime.driver.internal_topics import prepare_internal_topics

    source = topic_factory.create("orders", partitions=2)
    kafka = KafkaConnection(kafka_bootstrap)

    def pipeline(partitions: int | None) -> Pipeline:
        p = Pipeline("count-" + source[-8:])
        p.source(source).key_by("k", name="by-k", partitions=partitions).count().sink(
            source + "-out"
        )
        return p

    first = prepare_internal_topics(kafka, plan_stages(pipeline(None)), parallelism=3)
    (topic,) = first
    assert first == {topic: 3} and partition_counts(kafka)[topic] == 3
    # Another parallelism later: the count stays (state lives per partition).
    assert prepare_internal_topics(kafka, plan_stages(pipeline(None)), parallelism=5) == first
    assert prepare_internal_topics(kafka, plan_stages(pipeline(3)), parallelism=1) == first
    with pytest.raises(ConfigError, match=r"has 3 partitions, but key_by asks for 4"):
        prepare_internal_topics(kafka, plan_stages(pipeline(4)), parallelism=2)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.delete_topics([topic]).values():
        future.result(30)


def test_three_stages_chain_two_repartitions_exactly_once_across_a_rescaling_restart(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    # One source partition and one partition for the last internal topic: with two
    # tasks in the middle stage the three stages fit the session's four task slots.
    source = topic_factory.create("orders", partitions=1)
    sink = source + "-out"
    name = "three-" + source[-8:]

    def group(product: str) -> int:
        return int(product[1:]) % 3

    p = Pipeline(name)
    (
        p.source(source, value_format=AvroFormat.from_schema("order"))
        .key_by("product", name="by-product", partitions=2)
        .count(emit=lambda product, n: {"product": product, "n": n, "group": group(product)})
        .key_by("group", name="by-group", partitions=1)
        .count(emit=lambda g, n: {"group": g, "n": n})
        .sink(sink, key="group")
    )
    assert len(p.internal_topics) == 2
    produce_orders(kafka_bootstrap, source, range(900))
    first = BackgroundRun(p, config(kafka_bootstrap, tmp_path), spark_context)
    first.wait_for_output(kafka_bootstrap, sink, decode_json, 900)
    first.stop()
    commits = [e for e in first.events if isinstance(e, CheckpointCommitted)]
    assert commits and [s.stage for s in commits[-1].stages] == [0, 1, 2]
    # A restart at another parallelism: the middle stage's two tasks' state moves to one.
    produce_orders(kafka_bootstrap, source, range(900, 1400))
    second = BackgroundRun(p, config(kafka_bootstrap, tmp_path, parallelism=1), spark_context)
    second.wait_for_output(kafka_bootstrap, sink, decode_json, 1400)
    second.stop()

    per_group: dict[int, list[int]] = defaultdict(list)
    for r in read_committed(kafka_bootstrap, sink, decode_json):
        per_group[r["group"]].append(r["n"])
    expected = {g: sum(1 for i in range(1400) if group(f"p{i % 13}") == g) for g in range(3)}
    # Each group's count ran 1..n with no gap and no repeat: no order lost or counted twice
    # by either repartition, and none of the output of the first run was lost at the restart.
    assert {g: sorted(ns) for g, ns in per_group.items()} == {
        g: list(range(1, n + 1)) for g, n in expected.items()
    }
    # Drained stage by stage: nothing left unread in either internal topic.
    for internal, partitions in zip(p.internal_topics, (2, 1), strict=True):
        read = committed_offsets(kafka_bootstrap, name, [(internal, q) for q in range(partitions)])
        left = read_committed_records(kafka_bootstrap, internal, skip_control=True)
        assert [r for r in left if r.offset >= read[(internal, r.partition)]] == [], internal
