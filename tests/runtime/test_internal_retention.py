"""Records a stage has not read are never skipped: internal topics keep them, and a
committed offset below a partition's log start refuses the run instead of resuming
at the log start."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, not in __all__
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.chaos.in_flight_read import committed_offsets
from laminar_kafka.errors import CheckpointError, ConfigError, LaminarError
from laminar_kafka.kafka.admin import delete_records_below, topic_settings, watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer, source_reader_settings
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.config import RestartPolicy
from laminar_kafka.runtime.driver.internal_topics import NO_RETENTION, prepare_internal_topics
from laminar_kafka.runtime.driver.offsets_kept import check_offsets_kept
from laminar_kafka.sources.kafka_reader import PartitionReader
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import produce_orders, read_committed_records
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_pipeline_runs import config

decode_json = JsonFormat().decode_one


def crashing_product_totals(
    name: str, source: str, sink: str, crash_from: int | None = None, fired: Path | None = None
) -> Pipeline:
    """Totals per product behind a repartition; the second stage's task SIGKILLs itself at
    the first order numbered `crash_from` or above (writing `fired` first)."""

    def add(total: dict[str, Any], o: dict[str, Any]) -> dict[str, Any]:
        if crash_from is not None and o["id"] >= crash_from:
            assert fired is not None
            fired.write_text(str(o["id"]))
            os.kill(os.getpid(), signal.SIGKILL)
        return {"orders": total["orders"] + 1, "amount": total["amount"] + o["amount"]}

    p = Pipeline(name)
    (
        p.source(source, value_format=AvroFormat.from_schema("order"), partitioned_by="customer")
        .key_by("product", name="by-product")
        .aggregate(
            initial=lambda: {"orders": 0, "amount": 0},
            add=add,
            emit=lambda product, t: {"product": product, **t},
        )
        .sink(sink, key="product")
    )
    return p


@pytest.mark.integration
@pytest.mark.spark
def test_records_deleted_above_the_next_stages_committed_offset_refuse_the_restart(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=2)
    sink = source + "-out"
    name = "kept-" + source[-8:]
    fired = tmp_path / "fired"
    pipeline = crashing_product_totals(name, source, sink, crash_from=300, fired=fired)
    (internal,) = pipeline.internal_topics
    cfg = config(kafka_bootstrap, tmp_path)
    produce_orders(kafka_bootstrap, source, range(300))
    first = BackgroundRun(
        pipeline, config(kafka_bootstrap, tmp_path, restart=RestartPolicy(0)), spark_context
    )
    first.wait_for_output(kafka_bootstrap, sink, decode_json, 300)
    # Stage 0 commits orders 300..399 into the internal topic (Commit(N, 0)); stage 1
    # dies at the first of them, before it commits N, and the run gives up.
    produce_orders(kafka_bootstrap, source, range(300, 400))
    with pytest.raises(LaminarError, match="pipeline failed"):
        first.wait_for(lambda: False, 180, "the second stage to die")
    assert int(fired.read_text()) >= 300

    partitions = [(internal, p) for p in range(2)]
    committed = committed_offsets(kafka_bootstrap, name, partitions)
    unread = [
        r
        for r in read_committed_records(kafka_bootstrap, internal, skip_control=True)
        if r.offset >= committed[(internal, r.partition)]
    ]
    assert unread, "stage 0 committed no record past stage 1's committed offsets"
    # What a retention shorter than stage 1's outage deletes: the records it has not read.
    probe = probe_consumer(KafkaConnection(kafka_bootstrap))
    ends = {k: watermark_offsets(probe, *k)[1] for k in partitions}
    probe.close()
    lost = sorted({(internal, r.partition) for r in unread})
    delete_records_below(KafkaConnection(kafka_bootstrap), {k: ends[k] for k in lost})

    # Resuming at the log start would finish without those orders: the start refuses.
    second = BackgroundRun(crashing_product_totals(name, source, sink), cfg, spark_context)
    with contextlib.suppress(LaminarError):
        second.wait_for(lambda: False, 120, "the refusal")
    if second.error is None:
        second.stop()
        seen = len(read_committed_records(kafka_bootstrap, sink))
        pytest.fail(f"the restart went on at the log start: {seen} outputs for 400 orders")
    assert isinstance(second.error, CheckpointError), second.error
    message = str(second.error)
    topic, partition = lost[0]
    assert f"{topic}[{partition}]" in message, message
    assert f"committed offset {committed[lost[0]]}" in message, message
    assert f"log start {ends[lost[0]]}" in message, message


def test_a_readers_offset_reset_is_an_error_whatever_the_user_sets() -> None:
    kafka = KafkaConnection("localhost:9092", {"auto.offset.reset": "earliest"})
    assert source_reader_settings(kafka, "g", 100)["auto.offset.reset"] == "error"


@pytest.mark.integration
def test_a_reader_below_the_log_start_names_the_partition_offset_and_log_start(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("in", partitions=1)
    produce_orders(kafka_bootstrap, topic, range(10))
    kafka = KafkaConnection(kafka_bootstrap, {"auto.offset.reset": "earliest"})
    delete_records_below(kafka, {(topic, 0): 6})
    reader = PartitionReader(kafka, "below-" + topic[-8:], 100)
    reader.assign({(topic, 0): 3})
    try:
        with pytest.raises(CheckpointError) as refused:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                assert reader.poll(0.5) == []
    finally:
        reader.close()
    message = str(refused.value)
    assert f"{topic}[0]" in message and "committed offset 3" in message, message
    assert "log start 6" in message, message
    # The runner's check at a generation's start says the same, for sources too.
    with pytest.raises(CheckpointError, match="committed offset 3 is below its log start 6"):
        check_offsets_kept(kafka, {(topic, 0): 3})
    check_offsets_kept(kafka, {(topic, 0): 6})


@pytest.mark.integration
def test_internal_topics_keep_every_record_and_one_with_retention_is_refused(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    source = topic_factory.create("orders", partitions=2)
    kafka = KafkaConnection(kafka_bootstrap)
    plan = plan_stages(crashing_product_totals("ret-" + source[-8:], source, source + "-out"))
    (internal,) = prepare_internal_topics(kafka, plan, parallelism=2)
    retention = list(NO_RETENTION)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    try:
        # A topic created a moment ago may not answer DescribeConfigs yet: await it.
        deadline = time.monotonic() + 30
        while not (found := topic_settings(kafka, [internal], retention)):
            assert time.monotonic() < deadline, f"no settings of {internal} within 30 s"
            time.sleep(0.2)
        assert found == {internal: NO_RETENTION}
        # A topic made by hand, or by an older version, with a retention.
        change = ConfigResource(
            ResourceType.TOPIC,
            internal,
            incremental_configs=[
                ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)
            ],
        )
        for future in admin.incremental_alter_configs([change]).values():
            future.result(30)
        with pytest.raises(ConfigError, match=r"retention\.ms=86400000") as refused:
            prepare_internal_topics(kafka, plan, parallelism=2)
        assert "--allow-internal-retention" in str(refused.value)
        assert prepare_internal_topics(kafka, plan, 2, allow_retention=True) == {internal: 2}
    finally:
        for future in admin.delete_topics([internal]).values():
            future.result(30)
