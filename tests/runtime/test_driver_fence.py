"""The driver's fence on a real broker: a driver paused past its session that wakes
and writes at once (before its lease poller met the rebalance) is stopped by its
first check, whatever it was about to write."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.group_lease import GroupLease
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration

SESSION_MS = 6000  # the broker's group.min.session.timeout.ms

DRIVER = """
import sys
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.group_lease import GroupLease
from laminar_kafka.runtime.driver.lease import manifest_fence
bootstrap, group, topic, root = sys.argv[1:]
lease = GroupLease(KafkaConnection(bootstrap), group, topic, session_timeout_ms=6000)
lease.acquire()
store = CheckpointStore(root, "p")
generation = store.next_generation(1).generation
fence = manifest_fence(lease, store, generation)
print("held", generation, flush=True)
for line in sys.stdin:
    try:
        fence()
        print("still held", flush=True)
    except FencedError as exc:
        print("lost:", exc, flush=True)
"""


def test_a_driver_woken_after_its_session_is_fenced_by_its_first_check(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory.create("lease", partitions=1)
    group = topic + ".driver"
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, kafka_bootstrap, group, topic, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert driver.stdin is not None and driver.stdout is not None
    try:
        assert driver.stdout.readline().split() == ["held", "1"]
        driver.send_signal(signal.SIGSTOP)
        successor = GroupLease(KafkaConnection(kafka_bootstrap), group, topic, SESSION_MS)
        try:
            successor.acquire()  # waits out the paused driver's session
            assert CheckpointStore(str(tmp_path), "p").next_generation(1).generation == 2
            # The check is asked for before the driver runs again: it is the first
            # thing the woken driver does, before its poller served a single poll.
            driver.stdin.write("check\n")
            driver.stdin.flush()
        finally:
            driver.send_signal(signal.SIGCONT)
        answer = driver.stdout.readline().strip()
        assert answer.startswith("lost:"), answer
        successor.release()
    finally:
        driver.stdin.close()
        driver.kill()
        driver.wait(10)
