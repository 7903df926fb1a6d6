"""The record a cleanly stopped lease holder leaves: "released by <instance id>".

The lease's consumer is a static group member (`group.instance.id`), so that
after a group coordinator fails over it rejoins under the same id and the group
hands the partition back at once, instead of waiting out the session of the
member it had before. A static member sends no LeaveGroup when it closes, and
no client call removes it, so a holder that stops cleanly appends this record
to the lease topic after closing its consumer. A successor that finds it as
the topic's newest record joins under the released id and replaces the closed
member at once; without it (the holder died, or anything was written since)
the successor joins under a fresh id and waits out the old member's session.
A successor that takes up a released id first appends a "claimed" record, so
that a later driver does not take the same id and fence the running one.

Control readers pick records by their `laminar.control` header: this record
has none, so they pass over it.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, KafkaException

from laminar_kafka.errors import BrokerError
from laminar_kafka.kafka.clients import KafkaConnection, unbatched_producer
from laminar_kafka.kafka.topic_tail import TailRecord, read_tail

log = logging.getLogger(__name__)

RELEASE_HEADER = "laminar.lease.released"
"""The header that marks a release record; its value is the lease's group."""
CLAIM_HEADER = "laminar.lease.claimed"

READ_TIMEOUT_S = 5.0
"""How long a successor looks for the record before it joins under a fresh id."""

WRITE_TIMEOUT_S = 5.0
"""How long a stopping holder tries to leave the record (a successor waits a session
without it)."""


def released_instance(newest: TailRecord | None, group: str) -> str | None:
    """The instance id `newest` (the lease topic's newest record) releases for `group`."""
    if newest is None or newest.value is None:
        return None
    if (RELEASE_HEADER, group.encode()) not in newest.headers:
        return None
    return newest.value.decode() or None


def read_release(kafka: KafkaConnection, topic: str, group: str) -> str | None:
    """The instance id released by the last holder of `group`'s lease, if it stopped cleanly
    and nothing was written to `topic` since; None also when the topic cannot be read."""
    try:
        tail = read_tail(kafka, topic, 1, READ_TIMEOUT_S)
    except BrokerError as exc:
        log.info("lease %r: no release read from %s (%s)", group, topic, exc)
        return None
    return released_instance(tail.records[0] if tail.records else None, group)


def instance_to_join(kafka: KafkaConnection, topic: str, group: str, fresh: str) -> str:
    """The released instance id, claimed, if the last holder left one; else `fresh`."""
    released = read_release(kafka, topic, group)
    if released is None or not _append(kafka, topic, CLAIM_HEADER, group, released):
        return fresh
    return released


def write_release(kafka: KafkaConnection, topic: str, group: str, instance_id: str) -> bool:
    """Append "released by `instance_id`" to `topic`; whether the broker took it in time."""
    return _append(kafka, topic, RELEASE_HEADER, group, instance_id)


def _append(kafka: KafkaConnection, topic: str, header: str, group: str, instance_id: str) -> bool:
    producer = unbatched_producer(kafka, delivery_timeout_ms=int(WRITE_TIMEOUT_S * 1000))
    failed: list[str] = []

    def delivered(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failed.append(err.str())

    try:
        producer.produce(
            topic,
            value=instance_id.encode(),
            partition=0,
            headers=[(header, group.encode())],
            on_delivery=delivered,
        )
        if producer.flush(WRITE_TIMEOUT_S):
            failed.append(f"not delivered in {WRITE_TIMEOUT_S:.0f} s")
    except (KafkaException, BufferError) as exc:
        failed.append(str(exc))
    if failed:
        log.warning("lease %r: %s not written to %s: %s", group, header, topic, failed[0])
    return not failed
