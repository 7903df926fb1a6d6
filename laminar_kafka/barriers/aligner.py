"""Barrier alignment across the partitions one task reads.

Aligned (the default): once a partition delivers Barrier(N) it is paused; Kafka
holds what follows, so alignment buffers nothing. When every partition has
delivered it, the task snapshots at exactly the barrier offsets.

Unaligned: after `timeout_s` of waiting (or at once when the barrier carries the
UNALIGNED flag) the task snapshots without waiting; partitions still behind are
captured at their current read position. Offsets are the channel state: the
in-flight records stay in Kafka and are read again after a restore. Their
barrier, when it comes, is stale and skipped.

    IDLE --first barrier--> ALIGNING --all delivered--> ALIGNED
                            ALIGNING --timeout/forced--> UNALIGNED
    ALIGNED/UNALIGNED --finish--> IDLE;  any --cancel--> IDLE

    an internal partition while ALIGNING on N:
    read on --Barrier(N) of one writer--> read on ... --of its last writer--> delivered

A barrier older than the one being aligned is stale too: once Barrier(N) is
aligned, Barrier(M < N) can no longer complete here, and its offset must not be
taken for Barrier(N)'s.

Skipped: the announcement of checkpoint N names the source partitions Barrier(N)
was not written into (they received nothing since the previous barrier). They
are not waited for: once every other partition delivered, the task snapshots
ALIGNED, with the skipped ones at their read position (`settled`).

Writers: an internal partition of a multi-stage pipeline carries one Barrier(N)
from each upstream task that writes it (`Barrier.writer`). Such a partition,
given in `writers` with the task ids of the current generation, has delivered
Barrier(N) once every one of them did; until then it is read on (what comes
between the writers' barriers is still epoch N), and a barrier of a writer not
listed, or one already counted, changes nothing (it is no "first barrier"
either). Its barrier offset is the last writer's. An overtaking barrier,
`finish` and `cancel` forget writer progress. Partitions not in `writers`
deliver with their first barrier, whatever its writer.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping

from laminar_kafka import waits
from laminar_kafka.control.records import Barrier, BarrierFlags
from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.names import PartitionKey


class AlignmentPhase(enum.Enum):
    IDLE = "idle"
    ALIGNING = "aligning"
    ALIGNED = "aligned"
    UNALIGNED = "unaligned"


_TRANSITIONS: dict[AlignmentPhase, frozenset[AlignmentPhase]] = {
    AlignmentPhase.IDLE: frozenset({AlignmentPhase.ALIGNING}),
    AlignmentPhase.ALIGNING: frozenset({AlignmentPhase.ALIGNED, AlignmentPhase.UNALIGNED}),
    AlignmentPhase.ALIGNED: frozenset({AlignmentPhase.IDLE}),
    AlignmentPhase.UNALIGNED: frozenset({AlignmentPhase.IDLE}),
}


class BarrierAligner:
    """Tracks which partitions delivered the current barrier; decides when to snapshot.

    `barrier_offsets` holds the partitions that delivered it completely, `writers`
    the writer task ids each internal partition must deliver it from.
    """

    def __init__(
        self,
        partitions: Iterable[PartitionKey],
        timeout_s: float,
        clock: Callable[[], float] = waits.monotonic,
        writers: Mapping[PartitionKey, frozenset[int]] | None = None,
    ) -> None:
        self.partitions = frozenset(partitions)
        self.timeout_s = timeout_s
        self._clock = clock
        self.writers = {key: frozenset(ids) for key, ids in (writers or {}).items()}
        for key, ids in self.writers.items():
            if key not in self.partitions:
                raise LaminarError(f"writers given for {key}, which is not an aligned partition")
            if not ids:
                raise LaminarError(f"no writers given for internal partition {key}")
        self.phase = AlignmentPhase.IDLE
        self.barrier: Barrier | None = None
        self.barrier_offsets: dict[PartitionKey, int] = {}
        self.skipped: frozenset[PartitionKey] = frozenset()
        self._seen: dict[PartitionKey, set[int | None]] = {}  # writers counted per partition
        self.started_at = 0.0
        self.last_resolved_id = 0

    def _move(self, target: AlignmentPhase) -> None:
        if target not in _TRANSITIONS[self.phase]:
            raise LaminarError(f"alignment cannot go from {self.phase.value} to {target.value}")
        self.phase = target

    def is_stale(self, barrier: Barrier, generation: int) -> bool:
        """A barrier of another generation, or of a checkpoint already resolved here."""
        if barrier.generation != generation or barrier.checkpoint_id <= self.last_resolved_id:
            return True
        if self.barrier is None:
            return False
        if self.phase is AlignmentPhase.ALIGNING:
            return barrier.checkpoint_id < self.barrier.checkpoint_id
        return barrier.checkpoint_id <= self.barrier.checkpoint_id

    def on_barrier(self, key: PartitionKey, barrier: Barrier, offset: int) -> bool:
        """Record a fresh barrier from `key`; True when the snapshot should be taken now.

        Only while IDLE or ALIGNING, and only for a barrier `is_stale` let through.
        False does not mean `key` is done: hold it only if `partition_done(key)`.
        """
        if self.phase is AlignmentPhase.ALIGNED or self.phase is AlignmentPhase.UNALIGNED:
            raise LaminarError(
                f"barrier {barrier.checkpoint_id} arrived while {self.phase.value}: "
                "finish the current checkpoint first"
            )
        if self.barrier is not None and barrier.checkpoint_id < self.barrier.checkpoint_id:
            raise LaminarError(
                f"barrier {barrier.checkpoint_id} is older than barrier "
                f"{self.barrier.checkpoint_id} being aligned"
            )
        expected = self.writers.get(key)
        if expected is not None and barrier.writer not in expected:
            return False  # not one of this partition's writers: changes nothing
        if self.phase is AlignmentPhase.IDLE:
            self._move(AlignmentPhase.ALIGNING)
            self._start(barrier)
        elif self.barrier is not None and barrier.checkpoint_id > self.barrier.checkpoint_id:
            # A newer barrier overtook the one being aligned: the old checkpoint
            # can no longer complete here; align on the newer one from scratch.
            self._start(barrier)
        if expected is not None:
            seen = self._seen.setdefault(key, set())
            if barrier.writer in seen:
                return False  # a repeat: counted already
            seen.add(barrier.writer)
            if seen >= expected:
                self.barrier_offsets[key] = offset
        else:
            self.barrier_offsets[key] = offset
        if barrier.flags & BarrierFlags.UNALIGNED:
            self._move(AlignmentPhase.UNALIGNED)
            return True
        if self.partitions - self.skipped <= self.barrier_offsets.keys():
            self._move(AlignmentPhase.ALIGNED)
            return True
        return False

    def prepare(self, barrier: Barrier, skipped: Iterable[PartitionKey] = ()) -> None:
        """Checkpoint N was announced: start its alignment clock now, before any barrier.

        Behind a backlog, Barrier(N) reaches a task only after every record before
        it. Counting the alignment timeout from the announcement bounds how long a
        checkpoint can take: past it, the task snapshots unaligned where it stands.
        """
        if self.phase is AlignmentPhase.IDLE and barrier.checkpoint_id > self.last_resolved_id:
            self._move(AlignmentPhase.ALIGNING)
            self._start(barrier)
        current = self.barrier
        # The barriers written may arrive before the announcement that names the others.
        same = current is not None and current.checkpoint_id == barrier.checkpoint_id
        if same and self.phase is AlignmentPhase.ALIGNING:
            self.skipped = self.partitions & frozenset(skipped)

    def settled(self) -> bool:
        """True (and now ALIGNED) when only skipped partitions have not delivered."""
        if self.phase is not AlignmentPhase.ALIGNING or not self.skipped:
            return False
        if not self.partitions - self.skipped <= self.barrier_offsets.keys():
            return False
        self._move(AlignmentPhase.ALIGNED)
        return True

    def partition_done(self, key: PartitionKey) -> bool:
        """Whether `key` delivered the current barrier completely (from every writer).

        The task pauses such a partition; one still waiting for writers is read on.
        """
        return key in self.barrier_offsets

    def _start(self, barrier: Barrier) -> None:
        """Align on `barrier` from scratch: no partition or writer delivered it yet."""
        self.barrier = barrier
        self.barrier_offsets = {}
        self.skipped = frozenset()
        self._seen = {}
        self.started_at = self._clock()

    def timed_out(self) -> bool:
        """True (and now UNALIGNED) when alignment waited longer than the timeout."""
        if self.phase is not AlignmentPhase.ALIGNING:
            return False
        # Without partitions that carry barriers there is nothing to wait for.
        if self.partitions and self._clock() - self.started_at < self.timeout_s:
            return False
        self._move(AlignmentPhase.UNALIGNED)
        return True

    def due_without_barrier(self) -> bool:
        """True when the current checkpoint is to be taken now, no barrier awaited:
        only skipped partitions are left (`settled`), or the timeout passed."""
        return self.settled() or self.timed_out()

    def waited_s(self) -> float:
        return self._clock() - self.started_at

    def finish(self) -> None:
        """The snapshot of the current barrier is taken and its decision handled."""
        self._move(AlignmentPhase.IDLE)  # first: a refused finish changes nothing
        if self.barrier is not None:
            self.last_resolved_id = max(self.last_resolved_id, self.barrier.checkpoint_id)
        self.barrier = None
        self.barrier_offsets = {}
        self.skipped = frozenset()
        self._seen = {}

    def cancel(self, up_to_checkpoint: int) -> None:
        """Forget an alignment in progress (its checkpoint was aborted)."""
        self.last_resolved_id = max(self.last_resolved_id, up_to_checkpoint)
        if self.phase is not AlignmentPhase.IDLE:
            self.phase = AlignmentPhase.IDLE
            self.barrier = None
            self.barrier_offsets = {}
            self.skipped = frozenset()
            self._seen = {}
