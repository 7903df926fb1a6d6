"""One driver per pipeline, whatever the checkpoint store: the lease through Kafka.

A local store also has its `flock`; an object store has nothing else. The lease
is taken before anything is written, is checked before every manifest write (a
driver that lost it stops instead of overwriting a newer driver's checkpoint),
and is released on exit so that a restart need not wait for the session timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError, FencedError
from laminar_kafka.kafka.admin import ensure_topics
from laminar_kafka.kafka.group_lease import GroupLease, LeaseHeld
from laminar_kafka.kafka.names import driver_group
from laminar_kafka.runtime.config import RuntimeConfig

log = logging.getLogger(__name__)

CONTROL_RETENTION = {"retention.ms": str(24 * 3600 * 1000)}


def hold_driver_lease(config: RuntimeConfig, pipeline: str) -> GroupLease:
    """Take the pipeline's driver lease, or raise CheckpointError naming the running driver.

    The lease is held over the pipeline's control topic (one partition), created
    here if it is new.
    """
    control = config.control_topic(pipeline)
    ensure_topics(config.kafka, {control: 1}, config=CONTROL_RETENTION)
    group = driver_group(pipeline)
    lease = GroupLease(config.kafka, group, control)
    try:
        lease.acquire(on_wait=lambda why: log.warning("pipeline %r: %s", pipeline, why))
    except LeaseHeld as exc:
        raise CheckpointError(
            f"pipeline {pipeline!r} is already running: its driver {exc.holder} holds the "
            f"lease (Kafka consumer group {group!r}); stop that driver first"
        ) from None
    return lease


def manifest_fence(
    lease: GroupLease, store: CheckpointStore, generation: int
) -> Callable[[], None]:
    """The check before each manifest write of `generation`.

    It raises FencedError if this driver lost its lease, or, after the lease was
    lost and given back, if the store shows a newer generation: a driver that held
    the lease while this one was cut off, and has left since. While the lease is
    held throughout, the check reads nothing from the store.
    """

    checked = lease.regained

    def check() -> None:
        nonlocal checked
        lease.check()
        if lease.regained == checked:
            return  # held throughout: no other driver can have started a generation
        checked = lease.regained
        newest = store.read_generation().generation
        if newest != generation:
            raise FencedError(
                f"pipeline {store.pipeline!r}: generation {newest} was started by another "
                f"driver while this one ran generation {generation}; this one stops"
            )

    return check
