"""A checkpoint in flight on the driver: its phases, stages and what it learned so far.

Split from `checkpoint.coordinator`, which drives it. Phases, and the only
transitions between them (`_TRANSITIONS`):

    INJECTING --barriers written--> AWAITING_ACKS (stage 0, opened by Prepare(N))
    AWAITING_ACKS --every task of stage s acked ok--> DECIDING (stage s)
    DECIDING --manifest written, Commit(N, s) announced, s not last--> AWAITING_ACKS (s + 1)
    DECIDING --manifest written, Commit(N, last stage) announced--> COMMITTED
    INJECTING/AWAITING_ACKS --failure, timeout, job lost--> ABORTED

A checkpoint aborted at stage s > 0 leaves stages 0..s-1 committed: their
manifest stays partial and the checkpoint never completes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from laminar_kafka import waits
from laminar_kafka.control.records import Ack, BarrierFlags, ControlRecord
from laminar_kafka.errors import LaminarError


class CheckpointPhase(enum.Enum):
    INJECTING = "injecting"
    AWAITING_ACKS = "awaiting_acks"
    DECIDING = "deciding"
    COMMITTED = "committed"
    ABORTED = "aborted"


_TRANSITIONS: dict[CheckpointPhase, frozenset[CheckpointPhase]] = {
    CheckpointPhase.INJECTING: frozenset({CheckpointPhase.AWAITING_ACKS, CheckpointPhase.ABORTED}),
    CheckpointPhase.AWAITING_ACKS: frozenset({CheckpointPhase.DECIDING, CheckpointPhase.ABORTED}),
    # Back to AWAITING_ACKS: the Commit of a stage that is not the last opens the next one.
    CheckpointPhase.DECIDING: frozenset({CheckpointPhase.AWAITING_ACKS, CheckpointPhase.COMMITTED}),
    CheckpointPhase.COMMITTED: frozenset(),
    CheckpointPhase.ABORTED: frozenset(),
}


class ControlLink(Protocol):
    """The control topic as the coordinator uses it (control/transport.py)."""

    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None: ...
    def receive(self, timeout_s: float) -> list[Any]: ...


LowestMarker = Callable[[], int | None]
"""The lowest checkpoint id any partition's committed offset marker names, if any."""


def check_stages(tasks: int, stages: Sequence[frozenset[int]] | None) -> tuple[frozenset[int], ...]:
    """The task ids of each stage, stage 0 first; None means one stage of all `tasks`.

    Every task belongs to exactly one stage, or an Ack could count twice or never.
    """
    if stages is None:
        return (frozenset(range(tasks)),)
    result = tuple(frozenset(s) for s in stages)
    everyone = [t for s in result for t in s]
    if not result or any(not s for s in result):
        raise LaminarError(f"every stage needs at least one task, got {list(map(sorted, result))}")
    if len(everyone) != len(set(everyone)) or set(everyone) != set(range(tasks)):
        raise LaminarError(
            f"stages {list(map(sorted, result))} must split tasks 0..{tasks - 1}, "
            "each task in exactly one stage"
        )
    return result


@dataclass
class PendingCheckpoint:
    """A checkpoint in flight and what the coordinator knows of it."""

    checkpoint_id: int
    generation: int
    flags: BarrierFlags
    started: float
    phase: CheckpointPhase = CheckpointPhase.INJECTING
    stages: int = 1
    """How many stages must commit for the checkpoint to be complete."""
    stage: int = 0
    """The stage being collected or decided; on abort, the stage that aborted."""
    barrier_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    acks: dict[int, Ack] = field(default_factory=dict)
    """Ok Acks of every stage by task id, kept as they arrive (a later stage's too)."""
    failed_acks: dict[int, Ack] = field(default_factory=dict)
    """Failed Acks by task id; one aborts its stage once that stage is open."""
    decided_stages: list[int] = field(default_factory=list)
    stage_durations_s: dict[int, float] = field(default_factory=dict)
    """Per decided stage: seconds from its opening (Prepare or the Commit above) to its Commit."""
    reason: str = ""
    duration_s: float = 0.0
    injection_s: float = 0.0
    """How long writing Barrier(N) into every source partition took (part of duration_s)."""
    prepare_s: float = 0.0
    """How long announcing Prepare(N) on the control topic took (part of duration_s)."""
    acks_s: dict[int, float] = field(default_factory=dict)
    """Per decided stage: seconds from its opening to its last task's Ack (the rest of
    the stage's duration is its decision: the manifest written, the Commit announced)."""
    last_acked: dict[int, int] = field(default_factory=dict)
    """Per decided stage: the task whose Ack arrived last (the one the stage waited on)."""
    arrivals: dict[int, float] = field(default_factory=dict)
    """When each kept Ack arrived (monotonic seconds), by task id."""
    begun_at: float = field(default_factory=waits.wall)
    """The wall-clock time it began (`started` is the monotonic one)."""
    removed: tuple[int, ...] = ()
    """The checkpoints retention deleted once this one committed (step 4 of a decision)."""
    skipped: tuple[str, ...] = ()
    """Source partitions Barrier(N) was not written into (`Announcement.skipped`)."""
    no_barriers: bool = False
    """Barrier(N) was written into no source partition (`Announcement.no_barriers`)."""
    missing_tasks: tuple[int, ...] = ()
    """Tasks that did not acknowledge in time: stalled or cut off, not merely failed."""

    def move(self, target: CheckpointPhase) -> None:
        if target not in _TRANSITIONS[self.phase]:
            raise LaminarError(
                f"checkpoint {self.checkpoint_id} cannot go from {self.phase.value} "
                f"to {target.value}"
            )
        self.phase = target

    def keep(self, ack: Ack, arrived: float) -> None:
        """File `ack` (of a stage not yet decided) with the time it arrived."""
        (self.acks if ack.ok else self.failed_acks)[ack.task] = ack
        self.arrivals[ack.task] = arrived

    def all_acked(self, members: frozenset[int], opened: float) -> None:
        """Every task of stage `stage` acked: note the one that came last, and when."""
        last = max(members, key=lambda t: self.arrivals[t])
        self.last_acked[self.stage] = last
        self.acks_s[self.stage] = max(0.0, self.arrivals[last] - opened)

    @property
    def committed(self) -> bool:
        """Whether every stage committed: the checkpoint is complete."""
        return self.phase is CheckpointPhase.COMMITTED
