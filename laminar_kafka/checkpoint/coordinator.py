"""The checkpoint coordinator on the driver: trigger, collect Acks, decide, announce.

One checkpoint at a time. Its phases, and the only transitions between them:

    INJECTING --barriers written--> AWAITING_ACKS --all ok--> DECIDING --durable--> COMMITTED
    INJECTING/AWAITING_ACKS --failure, timeout, job lost--> ABORTED

Commit of checkpoint N, in this order:

1. every task acked N with ok=true (a failed Ack or the timeout aborts instead);
2. write manifest N to the checkpoint store, atomically and durably: this is
   the decision (a crash after this point commits N at recovery, never aborts);
3. announce Commit(N) on the control topic, with the cluster minimum watermark;
4. drop checkpoints beyond the retention count, but never one that a
   partition's committed offset marker still names: a task that died between
   the decision and its commit restores from that older checkpoint.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from laminar_kafka import faults
from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import (
    Ack,
    Announcement,
    Barrier,
    BarrierFlags,
    ControlRecord,
    Phase,
    partition_key,
)
from laminar_kafka.errors import ConfigError, LaminarError, WorkerStartError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.names import PartitionKey

log = logging.getLogger(__name__)


class CheckpointPhase(enum.Enum):
    INJECTING = "injecting"
    AWAITING_ACKS = "awaiting_acks"
    DECIDING = "deciding"
    COMMITTED = "committed"
    ABORTED = "aborted"


_TRANSITIONS: dict[CheckpointPhase, frozenset[CheckpointPhase]] = {
    CheckpointPhase.INJECTING: frozenset({CheckpointPhase.AWAITING_ACKS, CheckpointPhase.ABORTED}),
    CheckpointPhase.AWAITING_ACKS: frozenset({CheckpointPhase.DECIDING, CheckpointPhase.ABORTED}),
    CheckpointPhase.DECIDING: frozenset({CheckpointPhase.COMMITTED}),
    CheckpointPhase.COMMITTED: frozenset(),
    CheckpointPhase.ABORTED: frozenset(),
}


class ControlLink(Protocol):
    """The control topic as the coordinator uses it (control/transport.py)."""

    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None: ...
    def receive(self, timeout_s: float) -> list[Any]: ...


class Injector(Protocol):
    """Writes a barrier into every source partition (barriers/injector.py)."""

    def inject(self, barrier: Barrier, timeout_s: float) -> Mapping[PartitionKey, int]: ...


LowestMarker = Callable[[], int | None]
"""The lowest checkpoint id any partition's committed offset marker names, if any."""


@dataclass
class PendingCheckpoint:
    """A checkpoint in flight and what the coordinator knows of it."""

    checkpoint_id: int
    generation: int
    flags: BarrierFlags
    started: float
    phase: CheckpointPhase = CheckpointPhase.INJECTING
    barrier_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    acks: dict[int, Ack] = field(default_factory=dict)
    reason: str = ""
    duration_s: float = 0.0
    missing_tasks: tuple[int, ...] = ()
    """Tasks that did not acknowledge in time: stalled or cut off, not merely failed."""

    def move(self, target: CheckpointPhase) -> None:
        if target not in _TRANSITIONS[self.phase]:
            raise LaminarError(
                f"checkpoint {self.checkpoint_id} cannot go from {self.phase.value} "
                f"to {target.value}"
            )
        self.phase = target

    @property
    def committed(self) -> bool:
        return self.phase is CheckpointPhase.COMMITTED


class CheckpointCoordinator:
    """Runs checkpoints for one worker generation."""

    def __init__(
        self,
        pipeline: str,
        generation: int,
        tasks: int,
        store: CheckpointStore,
        injector: Injector,
        control: ControlLink,
        timeout_s: float,
        retained: int,
        first_checkpoint_id: int,
        lowest_marker: LowestMarker = lambda: None,
        topology: Mapping[str, str] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.generation = generation
        self.tasks = tasks
        self._store = store
        self._injector = injector
        self._control = control
        self._timeout_s = timeout_s
        self._retained = retained
        self._next_id = first_checkpoint_id
        self._lowest_marker = lowest_marker
        self._topology = dict(topology or {})

    def _announce(self, checkpoint_id: int, phase: Phase, **extra: object) -> None:
        self._control.send(
            Announcement(self.pipeline, checkpoint_id, self.generation, phase, **extra)  # type: ignore[arg-type]
        )

    def announce_generation(self) -> None:
        """Tell every task of an older generation that it is stale."""
        self._announce(0, Phase.ABORT, reason=f"generation {self.generation} starts")

    def await_ready(self, lost: Callable[[], str | None], timeout_s: float) -> list[Ack]:
        """Wait for every task's ready Ack (checkpoint 0) of this generation."""
        acks: dict[int, Ack] = {}
        deadline = time.monotonic() + timeout_s
        while len(acks) < self.tasks:
            reason = lost()
            if reason:
                raise WorkerStartError(reason)
            if time.monotonic() > deadline:
                raise LaminarError(
                    f"only {len(acks)} of {self.tasks} tasks started within {timeout_s:.0f}s"
                )
            for ack in self._control.receive(0.1):
                if ack.generation == self.generation and ack.checkpoint_id == 0:
                    acks[ack.task] = ack
        return [acks[t] for t in sorted(acks)]

    def run_checkpoint(
        self, lost: Callable[[], str | None], flags: BarrierFlags = BarrierFlags.NONE
    ) -> PendingCheckpoint:
        """Trigger the next checkpoint and carry it to Commit or Abort."""
        pending = PendingCheckpoint(self._next_id, self.generation, flags, time.monotonic())
        self._next_id += 1
        barrier = Barrier(
            self.pipeline, pending.checkpoint_id, self.generation, flags, int(time.time() * 1000)
        )
        try:
            pending.barrier_offsets = dict(self._injector.inject(barrier, self._timeout_s))
        except ConfigError:
            raise  # refused for good (authorization): no checkpoint can succeed
        except LaminarError as exc:
            return self._abort(pending, str(exc))
        pending.move(CheckpointPhase.AWAITING_ACKS)
        self._announce(pending.checkpoint_id, Phase.PREPARE, flags=flags)
        failure = self._collect(pending, lost)
        if failure:
            return self._abort(pending, failure)
        return self._commit(pending)

    def _collect(self, pending: PendingCheckpoint, lost: Callable[[], str | None]) -> str:
        """Gather Acks for `pending`; an empty string when all are in and ok."""
        deadline = pending.started + self._timeout_s
        while len(pending.acks) < self.tasks:
            reason = lost()
            if reason:
                return f"worker job lost: {reason}"
            if time.monotonic() > deadline:
                missing = sorted(set(range(self.tasks)) - pending.acks.keys())
                pending.missing_tasks = tuple(missing)
                return f"timed out after {self._timeout_s:.0f}s waiting for tasks {missing}"
            for ack in self._control.receive(0.05):
                if ack.generation != self.generation or ack.checkpoint_id != pending.checkpoint_id:
                    continue  # a zombie's, or a late Ack of an aborted checkpoint
                if not ack.ok:
                    return f"task {ack.task} failed: {ack.error}"
                pending.acks[ack.task] = ack
        return ""

    def _commit(self, pending: PendingCheckpoint) -> PendingCheckpoint:
        """Steps 2-4 of the commit (step 1 is `_collect`)."""
        faults.crash_here(FaultPoint.AFTER_ACKS_BEFORE_DECISION, pending.checkpoint_id)
        pending.move(CheckpointPhase.DECIDING)
        acks = list(pending.acks.values())
        watermarks = [a.local_watermark_ms for a in acks if a.local_watermark_ms is not None]
        min_watermark = min(watermarks) if watermarks else None
        manifest = Manifest(
            pipeline=self.pipeline,
            checkpoint_id=pending.checkpoint_id,
            generation=self.generation,
            created_ms=int(time.time() * 1000),
            positions={k: v for a in acks for k, v in a.positions.items()},
            barrier_offsets={partition_key(*k): v for k, v in pending.barrier_offsets.items()},
            snapshots={k: v for a in acks for k, v in a.snapshot_handles.items()},
            sink_handles={f"task-{a.task}": h for a in acks for h in a.sink_handles.values()},
            min_watermark_ms=min_watermark,
            unaligned_tasks=tuple(sorted(a.task for a in acks if a.unaligned)),
            topology=dict(self._topology),
        )
        self._store.write_manifest(manifest)  # 2. the decision is durable from here on
        faults.crash_here(FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE, pending.checkpoint_id)
        self._announce(pending.checkpoint_id, Phase.COMMIT, min_watermark_ms=min_watermark)  # 3.
        pending.move(CheckpointPhase.COMMITTED)
        pending.duration_s = time.monotonic() - pending.started
        self._store.retain(self._retained, keep_from=self._lowest_marker())  # 4.
        return pending

    def _abort(self, pending: PendingCheckpoint, reason: str) -> PendingCheckpoint:
        log.warning("checkpoint %d aborted: %s", pending.checkpoint_id, reason)
        pending.move(CheckpointPhase.ABORTED)
        pending.reason = reason
        pending.duration_s = time.monotonic() - pending.started
        try:
            self._announce(pending.checkpoint_id, Phase.ABORT, reason=reason[:500])
        except LaminarError as exc:
            log.warning("cannot announce abort of %d: %s", pending.checkpoint_id, exc)
        return pending
