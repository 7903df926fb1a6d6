"""An output record the sink topic would refuse is a dead letter, not a poison pill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import compare_ids, produce_orders, read_committed
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_pipeline_runs import config

pytestmark = [pytest.mark.integration, pytest.mark.spark]

decode_json = JsonFormat().decode_one


def _padded(order: dict[str, Any]) -> dict[str, Any]:
    # Every 50th output is far larger than the sink topic accepts.
    return {"id": order["id"], "pad": "x" * (6000 if order["id"] % 50 == 0 else 10)}


def _dead_letter_reasons(bootstrap: str, topic: str) -> dict[int, str]:
    settings = {"bootstrap.servers": bootstrap, "group.id": "dlq-check"}
    consumer = Consumer({**settings, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    found: dict[int, str] = {}
    try:
        for m in consumer.consume(1000, 10):
            if m.error() is None:
                headers = dict(m.headers() or [])
                found[int(headers["laminar.source.offset"])] = headers["laminar.error"].decode()
    finally:
        consumer.close()
    return found


def test_an_output_too_large_for_the_sink_goes_to_the_dead_letter_topic(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=1)
    sink = topic_factory.create("small", partitions=1, config={"max.message.bytes": "4000"})
    name = "big-" + source[-8:]
    p = Pipeline(name)
    p.source(source, value_format=AvroFormat.from_schema("order")).map(_padded).sink(sink)
    produce_orders(kafka_bootstrap, source, range(500))

    run = BackgroundRun(p, config(kafka_bootstrap, tmp_path, parallelism=1), spark_context)
    kept = [i for i in range(500) if i % 50 != 0]
    run.wait_for_output(kafka_bootstrap, sink, decode_json, len(kept))
    stats = run.stop()

    out = read_committed(kafka_bootstrap, sink, decode_json)
    assert compare_ids(kept, [o["id"] for o in out]).exact
    reasons = _dead_letter_reasons(kafka_bootstrap, f"{name}.dlq")
    # One partition holding orders 0..499 in order: order i sits at offset i.
    assert sorted(reasons) == [i for i in range(500) if i % 50 == 0]
    assert all(f"larger than {sink} accepts" in r for r in reasons.values())
    assert stats.restarts == 0 and stats.aborted == 0
