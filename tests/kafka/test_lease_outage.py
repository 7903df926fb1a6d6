"""A driver lease rides out a broker outage longer than its session: the local broker
SIGKILLed while a driver holds the lease and checks it, started again on the same
address, and the driver still holds the lease afterwards (nobody could take it).
That a successor which took the lease fences the first holder: test_group_lease."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from laminar_kafka.chaos.broker import BounceableBroker
from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.group_lease import GroupLease, LeaseHeld
from laminar_kafka.testing import TopicFactory

pytestmark = pytest.mark.integration

SESSION_MS = 6000  # the broker's group.min.session.timeout.ms
DOWN_S = 20.0
"""Past the session and past what the check gave a loss before (a session to heal,
a session to ask the group)."""


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[tuple[BounceableBroker, str]]:
    broker = BounceableBroker(tmp_path / "broker")
    try:
        yield broker, broker.start()
    finally:
        broker.close()


def test_a_holder_keeps_its_lease_through_a_broker_outage_longer_than_its_session(
    own_broker: tuple[BounceableBroker, str],
) -> None:
    broker, bootstrap = own_broker
    topics = TopicFactory(bootstrap)
    topic = topics.create("lease", partitions=1)
    lease = GroupLease(KafkaConnection(bootstrap), topic + ".driver", topic, SESSION_MS, 90)
    lease.acquire()
    failures: list[FencedError] = []
    done = threading.Event()

    def keep_checking() -> None:  # as a driver does before each write, outage or not
        while not done.is_set():
            try:
                lease.check()
            except FencedError as exc:
                failures.append(exc)
                return
            done.wait(0.5)

    checker = threading.Thread(target=keep_checking, daemon=True)
    checker.start()
    bounce = broker.bounce(lambda: False, DOWN_S)
    assert bounce.down_s > SESSION_MS / 1000
    lease.check()  # waits for the group's verdict if the loss is still open
    done.set()
    checker.join(120)
    assert not checker.is_alive()
    assert failures == []
    assert lease.regained + lease.stalls >= 1  # lost and taken back: the store gets checked
    with pytest.raises(LeaseHeld):  # held for real: a second driver is refused
        GroupLease(KafkaConnection(bootstrap), topic + ".driver", topic, SESSION_MS).acquire()
    lease.release()
    topics.cleanup()
