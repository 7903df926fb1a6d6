"""The driver's probe of the control topic is a write every in-sync replica took: a
Heartbeat of generation 0, which a tracker of any generation ignores."""

from __future__ import annotations

import socket

import pytest

from laminar_kafka.control.heartbeat import Heartbeat
from laminar_kafka.control.transport import ControlChannel
from laminar_kafka.kafka.admin import ensure_topics
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import control_topic
from laminar_kafka.runtime.driver.liveness import LivenessTracker
from laminar_kafka.testing import TopicFactory


@pytest.mark.integration
def test_a_probe_is_a_written_heartbeat_no_tracker_counts(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    name = "probe-" + topic_factory.create("probe", partitions=1)[-8:]
    kafka = KafkaConnection(kafka_bootstrap)
    ensure_topics(kafka, {control_topic(name): 1})
    channel = ControlChannel(kafka, control_topic(name), name, 0, Heartbeat)
    try:
        assert channel.reachable(10.0)
        (probe,) = channel.catch_up(10.0)
        assert probe == Heartbeat(name, 0, 0)
    finally:
        channel.close()
    tracker = LivenessTracker(generation=1, tasks=1, timeout_s=4.0, interval_s=1.0)
    tracker.start()
    tracker.heard(probe)
    assert tracker.not_moving(since=-1.0) == [0]  # the probe is no task's beat


@pytest.mark.integration  # the channel looks for the topic's leader for 10 s first
def test_a_control_topic_on_no_broker_is_unreachable() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    kafka = KafkaConnection(f"127.0.0.1:{port}")
    channel = ControlChannel(kafka, "_laminar.none.control", "none", 0, Heartbeat)
    assert not channel.reachable(0.5)
    assert not channel.reachable(0.5)
