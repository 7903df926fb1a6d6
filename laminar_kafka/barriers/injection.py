"""What a barrier writer reports: where Barrier(N) landed, and what Prepare(N) says of the rest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from laminar_kafka.control.records import Barrier
from laminar_kafka.kafka.names import PartitionKey


@dataclass(frozen=True)
class Injection:
    """Where Barrier(N) landed, and what Prepare(N) says of the partitions it missed.

    `landed` is the one place that decides it, whichever writer wrote the barrier:
    `skipped` names the partitions without it (idle ones, cut where their tasks
    stand); a barrier that landed nowhere says `no_barriers` instead of naming
    every partition (`Announcement.no_barriers`, read by the aligner as "every
    partition skipped").
    """

    offsets: Mapping[PartitionKey, int]
    skipped: tuple[PartitionKey, ...] = ()
    no_barriers: bool = False

    @classmethod
    def landed(
        cls, partitions: Sequence[PartitionKey], offsets: Mapping[PartitionKey, int]
    ) -> Injection:
        skipped = tuple(key for key in partitions if key not in offsets)
        if skipped and not offsets:
            return cls({}, no_barriers=True)
        return cls(dict(offsets), skipped)


class Injector(Protocol):
    """Writes a barrier into the source partitions that moved (`BarrierInjector`)."""

    partitions: tuple[PartitionKey, ...]

    def inject(self, barrier: Barrier, timeout_s: float) -> Injection: ...
