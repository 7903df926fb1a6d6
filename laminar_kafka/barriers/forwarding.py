"""Carries a barrier across a stage boundary, inside the upstream task's transaction.

When a task that writes internal topics has aligned Barrier(N), it writes
Barrier(N) tagged with its task id and generation into every partition of every
internal topic it writes, also those it sent nothing to, as the last records of
its epoch-N transaction. The next stage sees them only once that transaction
commits (it reads read_committed), so its alignment on N can only start after
the upstream stage's Commit(N); it aligns a partition once every writer's
barrier arrived (barriers/aligner.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, barrier_headers, control_headers
from laminar_kafka.control.records import Barrier, Watermark


class BarrierWriter(Protocol):
    """The task's transaction, as far as forwarding needs it."""

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, str | bytes | None]] | None = None,
        partition: int | None = None,
    ) -> None: ...


def forward_barrier(
    txn: BarrierWriter, barrier: Barrier, task: int, outputs: Mapping[str, int]
) -> int:
    """Write `barrier` as task `task`'s into every partition of `outputs`; returns how many."""
    tagged = replace(barrier, writer=task)
    return _into_every_partition(txn, encode(tagged), barrier_headers(tagged), outputs)


def forward_watermark(txn: BarrierWriter, watermark: Watermark, outputs: Mapping[str, int]) -> int:
    """Write the task's event-time watermark into every partition of `outputs`, so that
    the next stage's partitions take the lowest of their writers'; returns how many."""
    return _into_every_partition(txn, encode(watermark), control_headers(watermark), outputs)


def _into_every_partition(
    txn: BarrierWriter,
    value: bytes,
    headers: Sequence[tuple[str, str | bytes | None]],
    outputs: Mapping[str, int],
) -> int:
    written = 0
    for topic, partitions in outputs.items():
        for partition in range(partitions):
            txn.produce(topic, value, CONTROL_KEY, headers, partition)
            written += 1
    return written
