"""A Confluent-framed topic read with the default AvroFormat: `laminar-kafka run` stops at
the first records with one line naming the encoding and the format to use, and leaves
no dead letters behind (not a topic full of them)."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from confluent_kafka import Producer

from laminar_kafka.formats.registry import wire_header
from laminar_kafka.kafka.names import control_topic, dead_letter_topic
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import read_committed_records
from tests.docs.readme_steps import run_in_own_group

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_a_confluent_framed_topic_stops_the_run_with_one_clear_line(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = topic_factory.create("confluent", partitions=1)
    name = "mismatch-" + source[-12:]
    topic_factory.track(f"{source}-out", dead_letter_topic(name), control_topic(name))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for x in range(5):  # Point {x: long}: zigzag 2x as one byte, behind the 5-byte header
        producer.produce(source, wire_header(7) + bytes([2 * x]))
    assert producer.flush(10) == 0
    pipeline = tmp_path / "points.py"
    pipeline.write_text(
        textwrap.dedent(
            f"""
            from laminar_kafka import AvroFormat, JsonFormat, Pipeline

            FIELDS = [{{"name": "x", "type": "long"}}]
            POINT = {{"type": "record", "name": "Point", "fields": FIELDS}}
            pipeline = Pipeline({name!r})
            pipeline.source({source!r}, value_format=AvroFormat(POINT)).sink(
                {source + "-out"!r}, value_format=JsonFormat()
            )
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAMINAR_KAFKA_BOOTSTRAP": kafka_bootstrap}
    command = [sys.executable, "-m", "laminar_kafka", "run", str(pipeline), "--parallelism", "1"]
    command += ["--checkpoint-dir", str(tmp_path / "checkpoints")]
    stdout, stderr, code = run_in_own_group(command, tmp_path, env)
    said = f"exit {code}\nstdout:\n{stdout}\nstderr:\n{stderr[-4000:]}"
    assert code in (1, 2), said  # a refused run, not a crash nor a success
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, said
    assert "Confluent wire format (magic byte 0, schema id 7)" in errors[0], said
    assert "avro_from_registry(url, subject=...)" in errors[0], said
    assert "Traceback" not in stderr, said
    assert "restart 1" not in stdout + stderr, said  # no restart cures a format
    assert read_committed_records(kafka_bootstrap, dead_letter_topic(name), 30) == []
