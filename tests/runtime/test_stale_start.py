"""A task of an older generation that starts late must not fence the current one."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka import AvroFormat, Pipeline, RuntimeConfig
from laminar_kafka.control.records import Announcement, Phase
from laminar_kafka.control.transport import ControlChannel
from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.admin import ensure_topics
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import control_topic, transactional_id
from laminar_kafka.runtime.task.kafka_ports import kafka_ports
from laminar_kafka.runtime.task.worker import WorkerTask
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration


def test_a_zombie_task_starting_after_a_newer_generation_exits_without_fencing(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = topic_factory.create("orders", partitions=1)
    sink = source + "-out"
    name = "zs-" + source[-8:]
    kafka = KafkaConnection(kafka_bootstrap)
    ensure_topics(kafka, {control_topic(name): 1, sink: 1})
    pipeline = Pipeline(name)
    pipeline.source(source, value_format=AvroFormat.from_schema("order")).sink(sink)
    cfg = RuntimeConfig(bootstrap=kafka_bootstrap, checkpoint_dir=str(tmp_path), parallelism=1)

    # Generation 2 runs: its announcement is on the control topic, its producer is live.
    control = ControlChannel(kafka, control_topic(name), name, 0, Announcement)
    control.send(Announcement(name, 0, 2, Phase.ABORT, reason="generation 2 starts"))
    current = KafkaTransaction(kafka, transactional_id(name, 0), 60_000)
    current.init(timeout_s=30)
    current.begin()
    current.produce(sink, b"from generation 2")

    # A task of generation 1 starts now, reading the control topic from before that.
    spec = TaskSpec(pipeline, cfg, 1, 0, ((source, 0),), {source: 1}, 0)
    zombie = WorkerTask(spec, kafka_ports(spec))
    with pytest.raises(FencedError, match="generation 2 started"):
        zombie.run()

    # Had the zombie called init_transactions, this commit would fail as fenced.
    current.prepare([], None, timeout_s=30)
    current.commit(timeout_s=30)
    current.close()
    control.close()
