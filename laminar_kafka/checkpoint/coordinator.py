"""The checkpoint coordinator on the driver: trigger, collect Acks, decide, announce.

One checkpoint at a time. A pipeline's tasks form stages (stage 0 reads the
sources, stage s+1 what stage s wrote); the coordinator decides each stage in
turn, because a downstream task sees Barrier(N) only once the stage above has
committed N. Phases and their transitions: `checkpoint.pending`.

Commit of checkpoint N: N reserved in the store (`checkpoint.reservation`: an id
is never used twice, even by two drivers), barriers into the sources, Prepare(N)
opens stage 0; then for each stage s in order:

1. every task of stage s acked N with ok=true, within the timeout counted from
   the opening of stage s (a failed Ack or the timeout aborts (N, s) instead:
   stages already committed stay so, and N never completes);
2. write manifest N to the checkpoint store, atomically and durably, holding
   stages 0..s: this is the decision of (N, s) (a crash after this point commits
   it at recovery, never aborts it);
3. announce Commit(N, s) on the control topic, with the minimum watermark of
   stages 0..s; it also opens stage s+1;
4. after the last stage only: drop checkpoints beyond the retention count, but
   never one that a partition's committed offset marker still names: a task
   that died between the decision and its commit restores from that older one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from laminar_kafka import faults, waits
from laminar_kafka.barriers.injection import Injector
from laminar_kafka.checkpoint.decision import decision_manifest
from laminar_kafka.checkpoint.pending import (
    CheckpointPhase,
    ControlLink,
    LowestMarker,
    PendingCheckpoint,
    check_stages,
)
from laminar_kafka.checkpoint.reservation import reserve_checkpoint
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import (
    Ack,
    Announcement,
    Barrier,
    BarrierFlags,
    Phase,
    partition_key,
)
from laminar_kafka.errors import (
    ConfigError,
    FencedError,
    IncurableError,
    LaminarError,
    WorkerStartError,
)
from laminar_kafka.faults import FaultPoint, PausePoint

__all__ = [
    "CheckpointCoordinator",
    "CheckpointPhase",
    "ControlLink",
    "Injector",
    "LowestMarker",
    "PendingCheckpoint",
]

log = logging.getLogger(__name__)


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
        *,
        arrival_s: float,
        lowest_marker: LowestMarker = lambda: None,
        topology: Mapping[str, str] | None = None,
        stages: Sequence[frozenset[int]] | None = None,
        explain: Callable[[Sequence[int]], str] = lambda tasks: "",
    ) -> None:
        self.pipeline = pipeline
        self.generation = generation
        self.tasks = tasks
        self.stages = check_stages(tasks, stages)
        self._stage_of = {t: s for s, members in enumerate(self.stages) for t in members}
        self._store = store
        self._injector = injector
        self._control = control
        self._timeout_s = timeout_s
        self._retained = retained
        self._next_id = first_checkpoint_id
        self._lowest_marker = lowest_marker
        self._topology = dict(topology or {})
        self._explain = explain  # what tasks that did not ack were doing (their heartbeats)
        # How long an Ack already written may take to arrive: the control link's own.
        self._arrival_s = arrival_s
        self.ready_spread_s = 0.0

    def _announce(self, checkpoint_id: int, phase: Phase, **extra: object) -> None:
        self._store.check_fence()  # a driver that lost its lease tells no task anything
        self._control.send(
            Announcement(self.pipeline, checkpoint_id, self.generation, phase, **extra)  # type: ignore[arg-type]
        )

    def announce_generation(self) -> None:
        """Tell every task of an older generation that it is stale."""
        self._announce(0, Phase.ABORT, reason=f"generation {self.generation} starts")

    def await_ready(self, lost: Callable[[], str | None], timeout_s: float) -> list[Ack]:
        """Wait for every task's ready Ack (checkpoint 0) of this generation.

        `ready_spread_s` is then the time from the first Ack to the last: a ready
        task reads at once, without waiting for the others.
        """
        acks: dict[int, Ack] = {}
        deadline = waits.monotonic() + timeout_s
        first: float | None = None
        while len(acks) < self.tasks:
            reason = lost()
            if reason:
                self.check_incurable()
                raise WorkerStartError(reason)
            if waits.monotonic() > deadline:
                raise LaminarError(
                    f"only {len(acks)} of {self.tasks} tasks started within {timeout_s:.0f}s"
                )
            for ack in self._control.receive(0.1):
                self._check_incurable(ack)
                if ack.generation == self.generation and ack.checkpoint_id == 0:
                    acks[ack.task] = ack
                    first = waits.monotonic() if first is None else first
        self.ready_spread_s = 0.0 if first is None else waits.monotonic() - first
        return [acks[t] for t in sorted(acks)]

    def run_checkpoint(
        self, lost: Callable[[], str | None], flags: BarrierFlags = BarrierFlags.NONE
    ) -> PendingCheckpoint:
        """Trigger the next checkpoint and carry it, stage by stage, to Commit or Abort; a
        reason from `lost()` (the job lost, the driver cut off) aborts it with that reason."""
        pending = PendingCheckpoint(
            self._next_id, self.generation, flags, waits.monotonic(), stages=len(self.stages)
        )
        self._next_id += 1
        reserve_checkpoint(self._store, pending.checkpoint_id, self.generation)
        barrier = Barrier(
            self.pipeline, pending.checkpoint_id, self.generation, flags, waits.wall_ms()
        )
        try:
            injection = self._injector.inject(barrier, self._timeout_s)
            pending.barrier_offsets = dict(injection.offsets)
            pending.injection_s = waits.monotonic() - pending.started
        except ConfigError:
            raise  # refused for good (authorization): no checkpoint can succeed
        except LaminarError as exc:
            return self._abort(pending, str(exc))
        pending.move(CheckpointPhase.AWAITING_ACKS)
        pending.skipped = tuple(partition_key(*k) for k in injection.skipped)
        pending.no_barriers = injection.no_barriers
        skips = {"skipped": pending.skipped, "no_barriers": pending.no_barriers}
        announcing = waits.monotonic()
        self._announce(pending.checkpoint_id, Phase.PREPARE, flags=flags, stage=0, **skips)
        opened = waits.monotonic()
        pending.prepare_s = opened - announcing
        for stage in range(len(self.stages)):
            pending.stage = stage
            failure = self._collect(pending, opened, lost)  # 1.
            if failure:
                return self._abort(pending, failure)
            opened = self._decide(pending, opened)  # 2., 3.
        pending.duration_s = waits.monotonic() - pending.started
        removed = self._store.retain(self._retained, keep_from=self._lowest_marker())  # 4.
        pending.removed = tuple(removed)
        return pending

    def _collect(
        self, pending: PendingCheckpoint, opened: float, lost: Callable[[], str | None]
    ) -> str:
        """Step 1 for stage `pending.stage`: an empty string once all its tasks acked ok.

        Acks of any stage are kept as they arrive; a stage's are judged only once
        it is open, so an early one neither counts nor fails the stage above.
        """
        members = self.stages[pending.stage]
        deadline = opened + self._timeout_s
        while True:
            failed = sorted(members & pending.failed_acks.keys())
            if failed:
                ack = pending.failed_acks[failed[0]]
                return f"task {ack.task} failed: {ack.error}"
            missing = sorted(members - pending.acks.keys())
            if not missing:
                pending.all_acked(members, opened)
                return ""
            reason = lost()
            if reason:
                return reason
            if waits.monotonic() > deadline:
                pending.missing_tasks = tuple(missing)
                why = self._explain(missing)
                why = f": {why}" if why else ""
                return f"timed out after {self._timeout_s:.0f}s waiting for tasks {missing}{why}"
            for ack in self._control.receive(0.05):
                self._file(pending, ack)

    def check_incurable(self) -> None:
        """Once the worker job is lost: raise IncurableError if one of its tasks said it
        failed for good before it died (read what arrived; other Acks are of no use now)."""
        while received := self._control.receive(self._arrival_s):
            for ack in received:
                self._check_incurable(ack)

    def _check_incurable(self, ack: Ack) -> None:
        """Raise IncurableError for a task of this generation that failed for good.

        Such a task sends a ready Ack (checkpoint 0) with ok=false before it dies:
        Spark reports a failed barrier stage without the task's own error.
        """
        if ack.generation == self.generation and ack.checkpoint_id == 0 and not ack.ok:
            raise IncurableError(f"task {ack.task} failed, and no restart can cure it: {ack.error}")

    def _file(self, pending: PendingCheckpoint, ack: Ack) -> None:
        """Keep `ack` if it answers `pending` for a stage not yet decided."""
        self._check_incurable(ack)
        if ack.generation != self.generation or ack.checkpoint_id != pending.checkpoint_id:
            return  # a zombie's, or a late Ack of an aborted checkpoint
        stage = self._stage_of.get(ack.task)
        if stage is None or ack.stage != stage:
            log.warning(
                "checkpoint %d: ignoring an Ack of task %d for stage %d (task's stage: %s)",
                pending.checkpoint_id,
                ack.task,
                ack.stage,
                stage,
            )
            return
        if stage in pending.decided_stages:
            return  # a repeat: the decision of its stage stands as written
        pending.keep(ack, waits.monotonic())

    def _decide(self, pending: PendingCheckpoint, opened: float) -> float:
        """Steps 2-3 for stage `pending.stage`; returns when the next stage opened."""
        stage = pending.stage
        last = stage == len(self.stages) - 1
        faults.crash_here(FaultPoint.AFTER_ACKS_BEFORE_DECISION, pending.checkpoint_id)
        if stage == 0:
            faults.pause_here(PausePoint.DRIVER_ACKED, pending.checkpoint_id)
        pending.move(CheckpointPhase.DECIDING)
        acks = [pending.acks[t] for t in sorted(pending.acks) if self._stage_of[t] <= stage]
        stages = len(self.stages)
        manifest = decision_manifest(
            self.pipeline, self.generation, pending, acks, self._topology, stages, stage + 1
        )
        self._store.write_manifest(manifest)  # 2. the decision of (N, stage) is durable
        faults.crash_here(FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE, pending.checkpoint_id)
        self._announce(
            pending.checkpoint_id,
            Phase.COMMIT,
            min_watermark_ms=manifest.min_watermark_ms,
            stage=stage,
            flags=pending.flags,  # the next stage opens on it: of a DRAIN, of the skipped
            skipped=pending.skipped,  # partitions (its tables are source partitions too)
            no_barriers=pending.no_barriers,
        )  # 3.
        committed = waits.monotonic()
        pending.decided_stages.append(stage)
        pending.stage_durations_s[stage] = committed - opened
        if last:
            pending.move(CheckpointPhase.COMMITTED)
        else:
            faults.crash_here(FaultPoint.UPSTREAM_COMMITTED, pending.checkpoint_id)
            pending.move(CheckpointPhase.AWAITING_ACKS)
        return committed

    def _abort(self, pending: PendingCheckpoint, reason: str) -> PendingCheckpoint:
        log.warning(
            "checkpoint %d aborted at stage %d: %s", pending.checkpoint_id, pending.stage, reason
        )
        pending.move(CheckpointPhase.ABORTED)
        pending.reason = reason
        pending.duration_s = waits.monotonic() - pending.started
        try:
            self._announce(
                pending.checkpoint_id, Phase.ABORT, reason=reason[:500], stage=pending.stage
            )
        except FencedError:
            raise
        except LaminarError as exc:
            log.warning("cannot announce abort of %d: %s", pending.checkpoint_id, exc)
        return pending
