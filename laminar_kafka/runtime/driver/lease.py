"""One driver per pipeline, whatever the checkpoint store: the lease through Kafka.

A local store also has its `flock`; an object store has nothing else. The lease
is taken before anything is written, is checked before every write of the driver
(a new generation, its announcement, the fencing of removed tasks, the recovery
of their staged files, a checkpoint id's reservation, every announcement and
manifest: a driver that lost it stops instead of acting for a newer driver's
run), and is released on exit so that a restart need not wait for the session
timeout. A broker outage alone does not cost the lease: the check waits for the
group and carries on if nobody took the lease (`kafka/lease_verdict.py`), and
after that the fence below proves no other driver wrote. The check cannot close
the gap between itself and the write; what a paused driver could still write
there, its checkpoint id's reservation and a create-only manifest refuse
(`checkpoint.reservation`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from laminar_kafka.checkpoint.store import CheckpointStore, GenerationInfo
from laminar_kafka.errors import CheckpointError, FencedError
from laminar_kafka.kafka.admin import ensure_topics
from laminar_kafka.kafka.group_lease import GroupLease, LeaseHeld
from laminar_kafka.kafka.names import driver_group
from laminar_kafka.runtime.config import RuntimeConfig

log = logging.getLogger(__name__)

CONTROL_RETENTION = {"retention.ms": str(24 * 3600 * 1000)}


class Lease(Protocol):
    """The driver's lease as the runner uses it (`GroupLease`)."""

    regained: int
    """How often the lease was lost and taken back."""
    stalls: int
    """How often this process stood still longer than the lease lasts."""

    def check(self) -> None:
        """Raise FencedError if the lease is lost."""
        ...

    def release(self) -> None: ...


def hold_driver_lease(config: RuntimeConfig, pipeline: str) -> GroupLease:
    """Take the pipeline's driver lease, or raise CheckpointError naming the running driver.

    The lease is held over the pipeline's control topic (one partition), created
    here if it is new.
    """
    control = config.control_topic(pipeline)
    ensure_topics(config.kafka, {control: 1}, config=CONTROL_RETENTION)
    group = driver_group(pipeline)
    # Cut off from the brokers, it waits for them as long as the runner does.
    lease = GroupLease(config.kafka, group, control, outage_s=config.ready_timeout_s)
    try:
        lease.acquire(on_wait=lambda why: log.warning("pipeline %r: %s", pipeline, why))
    except LeaseHeld as exc:
        raise CheckpointError(
            f"pipeline {pipeline!r} is already running: its driver {exc.holder} holds the "
            f"lease (Kafka consumer group {group!r}); stop that driver first"
        ) from None
    return lease


def start_generation(lease: Lease, store: CheckpointStore, parallelism: int) -> GenerationInfo:
    """A new generation, durably, by a driver that holds its lease; its fence set on `store`."""
    lease.check()
    info = store.next_generation(parallelism)
    store.fence_manifests(manifest_fence(lease, store, info.generation))
    return info


def manifest_fence(lease: Lease, store: CheckpointStore, generation: int) -> Callable[[], None]:
    """The check before each write of the driver running `generation`.

    It raises FencedError if this driver lost its lease, or, after the lease was
    lost and given back or this process stood still, if the store shows a newer
    generation: a driver that held the lease meanwhile, and may have left since.
    While the lease is held throughout, the check reads nothing from the store.
    """

    checked = lease.regained + lease.stalls

    def check() -> None:
        nonlocal checked
        lease.check()
        if lease.regained + lease.stalls == checked:
            return  # held throughout: no other driver can have started a generation
        checked = lease.regained + lease.stalls
        newest = store.read_generation().generation
        if newest != generation:
            raise FencedError(
                f"pipeline {store.pipeline!r}: generation {newest} was started by another "
                f"driver while this one ran generation {generation}; this one stops"
            )

    return check
