"""The lease group's member: its session, its name, the settings of its consumer.

`GroupLease` holds the lease through this consumer: a static member
(`group.instance.id`) of the cooperative-sticky assignor, which never takes the
lease's partition from a live holder, committing nothing and reading nothing.
"""

from __future__ import annotations

import os
import socket
import uuid

from confluent_kafka import Consumer

from laminar_kafka.kafka.clients import KafkaConnection

LEASE_SESSION_MS = 6_000
"""The lease group's session: the brokers' least (`group.min.session.timeout.ms`).

How long a successor waits for a holder that died. Heartbeats come from
librdkafka's own thread: only a stop of the whole process (or the network, or the
group coordinator) lets a session lapse, and then the static member rejoins at once.
"""


def holder_name() -> str:
    """How the holder shows up to the one refused: host and pid."""
    return f"laminar-driver@{socket.gethostname()}:{os.getpid()}"


def fresh_instance_id() -> str:
    """A static member id no holder had: for a join when no holder left its own."""
    return f"{holder_name()}-{uuid.uuid4().hex[:8]}"


def lease_consumer(
    kafka: KafkaConnection, group: str, instance_id: str, session_timeout_ms: int
) -> Consumer:
    """The consumer of the static member `instance_id` of the lease group `group`."""
    return Consumer(
        kafka.settings(
            {"session.timeout.ms": session_timeout_ms, "heartbeat.interval.ms": 1000},
            {
                "group.id": group,
                "group.instance.id": instance_id,
                "client.id": holder_name(),
                "partition.assignment.strategy": "cooperative-sticky",
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
            },
        )
    )
