"""The whole record on a real broker and Spark: a step reads the source record's key,
timestamp and headers; the sink writes the key, headers and timestamp it was told to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from laminar_kafka import JsonFormat, Pipeline, Record, RuntimeConfig, StringFormat
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import read_committed_records
from laminar_kafka.testing.run import BackgroundRun

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _tagged(r: Record) -> dict[str, Any]:
    trace = r.header("trace")
    return {
        "user": r.key,
        "at": r.timestamp,
        "n": r.value["n"],
        "trace": None if trace is None else trace.decode(),
        "from": f"{r.partition}:{r.offset}",
    }


def test_keys_timestamps_and_headers_reach_user_code_and_the_sink(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any, tmp_path: Path
) -> None:
    # Records stamped in November 2023: kept, as every TopicFactory topic keeps them.
    source = topic_factory.create("clicks", partitions=2)
    sink = topic_factory.create(source + "-out", partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(40):
        producer.produce(
            source,
            JsonFormat().encode_one({"n": n}),
            f"u{n}".encode(),
            partition=n % 2,
            timestamp=1_700_000_000_000 + n,
            headers=[("trace", f"t{n}".encode())],
        )
    producer.flush(10)
    p = Pipeline("whole-" + source[-8:])
    (
        p.source(source, key_format=StringFormat())
        .map(_tagged, metadata=True)
        .sink(sink, key="user", headers=lambda v: [("from", v["from"])], timestamp="source")
    )
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=0.5,
    )
    run = BackgroundRun(p, config, spark_context)
    run.wait_for_output(kafka_bootstrap, sink, JsonFormat().decode_one, 40)
    run.stop()
    records = read_committed_records(kafka_bootstrap, sink)
    assert len(records) == 40
    for record in records:
        value = JsonFormat().decode_one(record.value)
        n = value["n"]
        assert value["user"] == f"u{n}" and value["trace"] == f"t{n}"
        assert value["at"] == 1_700_000_000_000 + n
        assert record.key == f"u{n}".encode()
        assert record.timestamp == 1_700_000_000_000 + n
        assert record.header("from") == value["from"] == f"{n % 2}:{n // 2}"
