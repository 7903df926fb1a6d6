"""Records a stage has not read are never skipped: internal topics keep them, and a
committed offset below a partition's log start refuses the run instead of resuming
at the log start."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.errors import CheckpointError, LaminarError
from laminar_kafka.kafka.admin import delete_records_below, watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer
from laminar_kafka.runtime.config import RestartPolicy
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.chaos_evidence import committed_offsets
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
