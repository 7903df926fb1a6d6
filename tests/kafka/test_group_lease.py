"""The driver lease through a Kafka consumer group, on a real broker: one holder, a
second refused while it lives, the lease (and its static member's id) passed on at
once after a clean release, after a session when the holder is killed, and a holder
that was paused past its session finds out that it lost the lease."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.group_lease import GroupLease, LeaseHeld
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration

SESSION_MS = 6000  # the broker's group.min.session.timeout.ms

HOLDER = """
import sys
from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.group_lease import GroupLease
lease = GroupLease(KafkaConnection(sys.argv[1]), sys.argv[2], sys.argv[3], session_timeout_ms=6000)
lease.acquire()
print("held", flush=True)
for line in sys.stdin:
    try:
        lease.check()
        print("still held", flush=True)
    except FencedError as exc:
        print("lost:", exc, flush=True)
"""


def lease_of(bootstrap: str, topic: str) -> GroupLease:
    return GroupLease(KafkaConnection(bootstrap), topic + ".driver", topic, SESSION_MS)


def start_holder(bootstrap: str, topic: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, bootstrap, topic + ".driver", topic],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_member_is_refused_while_the_holder_lives_and_takes_over_after_release(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("lease", partitions=1)
    first = lease_of(kafka_bootstrap, topic)
    first.acquire()
    second = lease_of(kafka_bootstrap, topic)
    with pytest.raises(LeaseHeld) as refused:
        second.acquire()
    assert "laminar-driver@" in refused.value.holder and str(os.getpid()) in refused.value.holder
    first.check()  # the refused member never took it
    first.release()
    third = lease_of(kafka_bootstrap, topic)
    waits: list[str] = []
    third.acquire(on_wait=waits.append)
    # A clean release hands the static member's id on: no session timeout to wait out.
    assert waits == []
    assert third.instance_id == first.instance_id != second.instance_id
    third.check()
    # Taken up and claimed: a later driver joins under an id of its own and is refused.
    fourth = lease_of(kafka_bootstrap, topic)
    with pytest.raises(LeaseHeld):
        fourth.acquire()
    assert fourth.instance_id != third.instance_id
    third.check()
    third.release()


def test_the_lease_passes_on_when_its_holder_is_killed(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("lease", partitions=1)
    holder = start_holder(kafka_bootstrap, topic)
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    successor = lease_of(kafka_bootstrap, topic)
    waits: list[str] = []
    successor.acquire(on_wait=waits.append)
    assert waits, "the successor took the lease without waiting for the dead holder's session"
    assert successor.instance_id is not None and str(holder.pid) not in successor.instance_id
    successor.check()
    successor.release()


def test_a_holder_paused_past_its_session_learns_it_lost_the_lease(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("lease", partitions=1)
    holder = start_holder(kafka_bootstrap, topic)
    assert holder.stdin is not None and holder.stdout is not None
    holder.send_signal(signal.SIGSTOP)
    try:
        successor = lease_of(kafka_bootstrap, topic)
        successor.acquire()
    finally:
        holder.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + 30
    answer = ""
    while time.monotonic() < deadline:
        holder.stdin.write("check\n")
        holder.stdin.flush()
        answer = holder.stdout.readline().strip()
        if answer.startswith("lost:"):
            break
        time.sleep(0.5)  # the woken holder's poller has to meet the rebalance first
    assert answer.startswith("lost:"), answer
    assert "stops without writing a checkpoint" in answer
    with pytest.raises(LeaseHeld):  # the successor kept it
        lease_of(kafka_bootstrap, topic).acquire()
    successor.release()
    holder.stdin.close()
    holder.wait(10)


def test_check_raises_fenced_error_once_lost_and_no_broker_answers_for_its_outage_bound() -> None:
    lease = GroupLease(KafkaConnection("127.0.0.1:1"), "g", "t", outage_s=1)
    lease.check()
    lease._lost.set()
    with pytest.raises(FencedError, match="lost the lease of Kafka group 'g': no group coord"):
        lease.check(regain_s=0.2)
    lease.release()


def test_a_poll_that_spans_a_stall_still_makes_the_next_check_ask_the_group(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    """A woken process's poller may poll before its main thread checks: that poll must
    not pass for a fresh one, or the check would trust a lease that lapsed meanwhile."""
    topic = topic_factory.create("lease", partitions=1)
    lease = lease_of(kafka_bootstrap, topic)
    lease.acquire()
    try:
        lease._polled.clear()
        lease._last_poll = time.monotonic() - SESSION_MS / 1000  # as if stopped a session
        assert lease._polled.wait(10)  # the poller polled first, after the "stall"
        lease.check()  # nobody took the lease: held, but only after asking the group
        assert lease.stalls == 1
    finally:
        lease.release()
