"""Read from partitions whose leader may have moved: the consumer's side of `flushing`.

A consumer fetching a partition whose leader died learns the new leader from
its next metadata refresh, and the decommission of the dead broker can park the
partition again until one more (a backoff up to `retry.backoff.max.ms`, 1 s).
Measured on three local nodes (a record produced after the cluster fenced the
leader): the consumer had it 0.9-1.6 s after the fence, and 0.3-0.4 s when it
asked for its topic's metadata every quarter second. A checkpoint's path holds
three readers in series (a task's source reader for the barrier, its control
reader for Prepare, the driver's control reader for the Acks), so each second
counts thrice.

A reader cannot flush; it does not know that a partition stands still (an idle
one looks the same). So it asks only after librdkafka reported a broker
connection failure: for `WINDOW_S` after the last one, once every `EVERY_S`.
Otherwise it asks nothing.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException

from laminar_kafka import waits

__all__ = ["EVERY_S", "WINDOW_S", "LeaderFollower"]

EVERY_S = 0.25
"""How often a reader asks for its topics' metadata while it follows leaders."""

WINDOW_S = 15.0
"""How long after a broker connection failed a reader follows leaders: longer than a
cluster takes to fence a dead node (Kafka's default session is 9 s)."""

_CONNECTION_FAILED = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN})


class MetadataClient(Protocol):
    """What a reader asks: a consumer's (or producer's) `list_topics`."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> object: ...


class LeaderFollower:
    """Asks a reader's topics' metadata for a while after a broker connection failed."""

    def __init__(self, clock: Callable[[], float] = waits.monotonic) -> None:
        self._clock = clock
        self._failed_at = -math.inf
        self._asked = -math.inf

    def on_error(self, error: KafkaError) -> None:
        """The client's `error_cb` (and its messages' errors): a connection failure arms it."""
        if error.code() in _CONNECTION_FAILED:
            self._failed_at = self._clock()

    @property
    def following(self) -> bool:
        """Whether a broker connection failed within the last `WINDOW_S`."""
        return self._clock() - self._failed_at <= WINDOW_S

    def follow(self, client: MetadataClient, topics: Iterable[str]) -> None:
        """After a read: ask `topics`' metadata if following and none was asked lately."""
        now = self._clock()
        if now - self._failed_at > WINDOW_S or now - self._asked < EVERY_S:
            return
        self._asked = now
        for topic in topics:
            with contextlib.suppress(KafkaException):  # unanswered: ask again next time
                client.list_topics(topic, timeout=EVERY_S)
