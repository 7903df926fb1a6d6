"""Backfills on the real broker: `start_from` a timestamp, `run --until end`, a killed rerun.

The input is written by a transactional producer, so every source partition ends
in a transaction marker: an offset no read_committed reader gets, which a bounded
run must still count as read.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.stable_offsets import stable_bounds
from laminar_kafka.runtime.task.kafka_ports import KafkaSourceLogs
from laminar_kafka.sources.kafka_reader import PartitionReader
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import read_committed
from tests.runtime.test_latest_start_crash import _App

T0 = 1_700_000_000_000
"""Record i is stamped T0 + 1000 i."""

_PIPELINE = """\
from laminar_kafka import JsonFormat, Pipeline

pipeline = Pipeline({name!r})
stream = pipeline.source({source!r}, value_format=JsonFormat(), start_from={start!r})
{steps}.sink({sink!r}, value_format=JsonFormat())
"""
ONE_STAGE = 'stream.map(lambda r: {"id": r["id"], "n": 1})'
TWO_STAGES = (  # a repartition by id: a second stage behind an internal topic
    'stream.key_by("id").aggregate(initial=lambda: 0, add=lambda n, r: n + 1, '
    'emit=lambda k, n: {"id": int(k), "n": n})'
)


def _produce(bootstrap: str, topic: str, ids: Iterable[int], partitions: int) -> None:
    """One transaction: each partition then ends in its commit marker. Returns once the
    markers are written: the commit returns before, and a bounded run started in
    between would fix its ends below the transaction (read_committed cannot reach it)."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in ids:
        value = json.dumps({"id": i}).encode()
        producer.produce(topic, value, partition=i % partitions, timestamp=T0 + 1000 * i)
    producer.commit_transaction(30)
    _await_markers(bootstrap, topic)


def _await_markers(bootstrap: str, topic: str) -> None:
    """Return once every partition of `topic` is stable to its end: the transactions
    committed before now have their markers written (a commit returns before that)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        keys = [(topic, p) for p in partitions]
        deadline = time.monotonic() + 30
        while True:
            highs = {k: consumer.get_watermark_offsets(TopicPartition(*k), 10)[1] for k in keys}
            bounds = stable_bounds(KafkaConnection(bootstrap), keys)
            if {k: end for k, (_, end) in bounds.items()} == highs:
                return
            assert time.monotonic() < deadline, (bounds, highs)
            time.sleep(0.1)
    finally:
        consumer.close()


def _ids(bootstrap: str, topic: str) -> list[int]:
    """The ids in the output, each output counting its records (`n`): duplicates show."""
    _await_markers(bootstrap, topic)
    found = read_committed(bootstrap, topic, json.loads)
    return sorted(r["id"] for r in found for _ in range(r["n"]))


def test_the_broker_finds_offsets_by_time_stable_ends_and_reports_reached_ends(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("times", partitions=2)
    _produce(kafka_bootstrap, topic, range(10), 2)  # partition p: ids p, p+2, ... at 0..4
    kafka = KafkaConnection(kafka_bootstrap)
    keys = [(topic, 0), (topic, 1)]

    # `_produce` waited for the markers: the stable end is past them.
    assert stable_bounds(kafka, keys) == {(topic, 0): (0, 6), (topic, 1): (0, 6)}  # + marker

    found = KafkaSourceLogs(kafka, "p").offsets_for_time(keys, T0 + 5000, 30)
    assert found == {(topic, 0): 3, (topic, 1): 2}  # ids 6 and 5: the first at or after
    # The commit markers are stamped at the commit (now): past them, no offset at all.
    assert KafkaSourceLogs(kafka, "p").offsets_for_time(keys, 4_102_444_800_000, 30) == {
        (topic, 0): None,
        (topic, 1): None,
    }

    reader = PartitionReader(kafka, "p-" + topic, 100, report_ends=True)
    try:
        reader.assign({(topic, 0): 0})
        offsets: list[int] = []
        deadline = time.monotonic() + 30
        while reader.end_reached((topic, 0)) is None and time.monotonic() < deadline:
            offsets += [m.offset() for m in reader.poll(0.5)]
        assert (offsets, reader.end_reached((topic, 0))) == ([0, 1, 2, 3, 4], 6)
        reader.reposition({(topic, 0): 2})
        assert reader.end_reached((topic, 0)) is None  # positioned again: not yet

        # An open transaction: the stable end stops before it, and so does the reader.
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": topic})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(topic, b"{}", partition=1)
        producer.flush(30)
        assert stable_bounds(kafka, [(topic, 1)]) == {(topic, 1): (0, 6)}
        reader.reposition({(topic, 1): 0})
        deadline = time.monotonic() + 30
        while reader.end_reached((topic, 1)) is None and time.monotonic() < deadline:
            reader.poll(0.5)
        assert reader.end_reached((topic, 1)) == 6
        producer.abort_transaction(30)
    finally:
        reader.close()


def _app(
    tmp_path: Path, bootstrap: str, topics: TopicFactory, start: Any, steps: str = ONE_STAGE
) -> tuple[Any, ...]:
    source = topics.create("backfill", partitions=3)
    sink = source + "-out"
    name = "bf-" + source[-8:]
    wrapper = tmp_path / "pipeline.py"
    text = _PIPELINE.format(name=name, source=source, sink=sink, start=start, steps=steps)
    wrapper.write_text(text)
    apps = [_App(tmp_path, bootstrap, wrapper, label) for label in "abcd"]
    return source, sink, apps


# Two stages (the bounded ends cross the internal topic); a one-stage bounded run on
# Spark is the killed-midway test's, and LAMINAR_CHAOS_FULL=1 adds it here too.
STEPS = {"two-stages": TWO_STAGES}
if os.environ.get("LAMINAR_CHAOS_FULL") == "1":
    STEPS["one-stage"] = ONE_STAGE


@pytest.mark.spark
@pytest.mark.parametrize("steps", list(STEPS.values()), ids=list(STEPS))
def test_a_bounded_run_from_a_timestamp_exits_0_with_what_was_there_then_a_rerun_the_rest(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path, steps: str
) -> None:
    source, sink, apps = _app(tmp_path, kafka_bootstrap, topic_factory, T0 + 100_000, steps)
    try:
        _produce(kafka_bootstrap, source, range(300), 3)
        first = apps[0]
        first.start("--until", "end")
        first.wait(lambda: first.seen("bounded_started"), "the bounded run's start")
        _produce(kafka_bootstrap, source, range(300, 450), 3)  # after the ends were fixed
        assert first.proc is not None and first.proc.wait(180) == 0, first.log.read_text()[-3000:]
        assert _ids(kafka_bootstrap, sink) == list(range(100, 300))  # from the timestamp on
        assert first.seen("bounded_finished") and first.seen("bounded_progress")[-1]["left"] == 0
        assert "bounded run finished at checkpoint" in first.log.read_text()

        second = apps[1]
        second.start("--until", "end")
        assert second.proc is not None and second.proc.wait(180) == 0, second.log.read_text()
        assert _ids(kafka_bootstrap, sink) == list(range(100, 450))  # each once
    finally:
        for app in apps:
            app.kill()


@pytest.mark.spark
@pytest.mark.chaos
def test_a_bounded_run_killed_midway_reruns_to_its_first_ends_exactly_once(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source, sink, apps = _app(tmp_path, kafka_bootstrap, topic_factory, "earliest")
    point = FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE
    faults = tmp_path / "faults"
    faults.mkdir()
    try:
        _produce(kafka_bootstrap, source, range(500), 3)
        first = apps[0]
        first.start("--until", "end", env={"LAMINAR_FAULT": point.value,
                                          "LAMINAR_FAULT_DIR": str(faults)})  # fmt: skip
        first.wait(lambda: first.seen("bounded_started"), "the bounded run's start")
        _produce(kafka_bootstrap, source, range(500, 600), 3)  # after the ends were fixed
        assert first.proc is not None and first.proc.wait(180) == -signal.SIGKILL

        again = apps[1]  # started again the same way, as a supervisor would
        again.start("--until", "end")
        assert again.proc is not None and again.proc.wait(180) == 0, again.log.read_text()
        assert [e["resumed"] for e in again.seen("bounded_started")] == [True]
        assert _ids(kafka_bootstrap, sink) == list(range(500))  # the first start's ends

        rest = apps[2]
        rest.start("--until", "end")
        assert rest.proc is not None and rest.proc.wait(180) == 0, rest.log.read_text()
        assert _ids(kafka_bootstrap, sink) == list(range(600))
    finally:
        for app in apps:
            app.kill()
