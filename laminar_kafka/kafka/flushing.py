"""Flush a producer whose partitions may be changing leaders.

When a partition's leader dies and the cluster fences it, librdkafka 2.16 learns
the new leader from a metadata response, then decommissions the dead broker, and
the decommission can park the partition on no broker again: its records wait
until the next metadata refresh, which a client asks for at a backoff growing to
`retry.backoff.max.ms` (1 s). Measured on three local nodes, that cost each of
the barrier writer, the control producer and the tasks about 1 s, one after the
other, in the first checkpoint after a node died. A flush in slices that asks
for the topics' metadata between them puts the records on the new leader at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from confluent_kafka import KafkaException, Producer

from laminar_kafka import waits

__all__ = ["flush_following_leaders"]

SLICE_S = 0.25
"""How long a flush waits before it asks for the topics' metadata."""


def flush_following_leaders(producer: Producer, topics: Iterable[str], timeout_s: float) -> int:
    """`producer.flush(timeout_s)`, asking for the metadata of `topics` whenever records
    still wait after a slice; returns how many are still undelivered, as flush does."""
    deadline = waits.monotonic() + timeout_s
    names = sorted(set(topics))
    while True:
        left = deadline - waits.monotonic()
        remaining: int = producer.flush(max(0.0, min(SLICE_S, left)))
        if not remaining or left <= SLICE_S:
            return remaining
        for topic in names:
            with contextlib.suppress(KafkaException):  # unanswered: flush on and ask again
                producer.list_topics(topic, timeout=min(SLICE_S, max(0.01, left)))
