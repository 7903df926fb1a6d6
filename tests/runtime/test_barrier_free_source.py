"""A source the pipeline may not write: no barrier enters it, exactly-once holds under kill -9."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from laminar_kafka import JsonFormat
from laminar_kafka.control.headers import is_control
from laminar_kafka.runtime.driver.events import GenerationStarted
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import (
    compare_totals,
    expected_totals,
    produce_orders,
    read_committed,
)
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_pipeline_runs import config, totals

pytestmark = [pytest.mark.integration, pytest.mark.spark]

decode_json = JsonFormat().decode_one


def _control_records_in(bootstrap: str, topic: str, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "barrier-free-check"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    found = seen = 0
    try:
        while True:
            batch = consumer.consume(1000, 3)
            if not batch:
                return found
            for m in batch:
                if m.error() is None:
                    seen += 1
                    found += is_control(m.headers())
    finally:
        consumer.close()


def test_a_source_read_without_barriers_stays_exactly_once_under_kill(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
) -> None:
    source = topic_factory.create("orders", partitions=4)
    sink = source + "-out"
    name = "nb-" + source[-8:]
    run = BackgroundRun(
        totals(name, source, sink, barriers=False),
        config(kafka_bootstrap, tmp_path),
        spark_context,
    )
    produce_orders(kafka_bootstrap, source, range(2000))
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 500)
    os.kill(int((pid_dir / f"{name}.g1.t0.pid").read_text()), signal.SIGKILL)
    produce_orders(kafka_bootstrap, source, range(2000, 3000))
    run.wait_for(lambda: run.count(GenerationStarted) >= 2, 120, "a new generation")
    run.wait_for_output(kafka_bootstrap, sink, decode_json, 3000)
    stats = run.stop()

    report = compare_totals(
        expected_totals(range(3000)), read_committed(kafka_bootstrap, sink, decode_json)
    )
    assert report.exact, report
    assert stats.restarts == 1 and stats.committed >= 2
    assert stats.unaligned_acks >= stats.committed  # every checkpoint captured positions
    assert _control_records_in(kafka_bootstrap, source, 4) == 0
