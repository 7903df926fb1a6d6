"""BarrierAligner: aligned and unaligned checkpoints, stale barriers, cancel, illegal moves.

Time is a fake clock the test advances, so timeouts are exact and instant.
"""

from __future__ import annotations

import pytest

from laminar_kafka.barriers import AlignmentPhase, BarrierAligner
from laminar_kafka.control import Barrier, BarrierFlags
from laminar_kafka.errors import LaminarError

A, B, C = ("orders", 0), ("orders", 1), ("payments", 0)
GEN = 3
TIMEOUT_S = 10.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _barrier(n: int, flags: BarrierFlags = BarrierFlags.NONE, generation: int = GEN) -> Barrier:
    return Barrier("p", n, generation, flags, 0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def aligner(clock: FakeClock) -> BarrierAligner:
    return BarrierAligner([A, B, C], TIMEOUT_S, clock=clock)


def test_aligned_when_every_partition_delivered(aligner: BarrierAligner, clock: FakeClock) -> None:
    assert aligner.phase is AlignmentPhase.IDLE
    assert not aligner.on_barrier(A, _barrier(1), 100)
    assert aligner.phase is AlignmentPhase.ALIGNING
    clock.advance(2.5)
    assert not aligner.on_barrier(C, _barrier(1), 7)
    assert aligner.on_barrier(B, _barrier(1), 55)
    assert aligner.phase is AlignmentPhase.ALIGNED
    assert aligner.barrier == _barrier(1)
    assert aligner.barrier_offsets == {A: 100, B: 55, C: 7}
    assert aligner.waited_s() == 2.5
    assert not aligner.timed_out()  # aligned is not aligning: no timeout applies

    aligner.finish()
    assert aligner.phase is AlignmentPhase.IDLE
    assert aligner.barrier is None and aligner.barrier_offsets == {}
    assert aligner.last_resolved_id == 1


def test_single_partition_aligns_at_once(clock: FakeClock) -> None:
    aligner = BarrierAligner([A], TIMEOUT_S, clock=clock)
    assert aligner.on_barrier(A, _barrier(1), 0)
    assert aligner.phase is AlignmentPhase.ALIGNED


def test_timeout_turns_alignment_unaligned(aligner: BarrierAligner, clock: FakeClock) -> None:
    assert not aligner.timed_out()  # idle: nothing to time out
    aligner.on_barrier(A, _barrier(1), 100)
    clock.advance(TIMEOUT_S - 0.001)
    assert not aligner.timed_out()
    assert aligner.phase is AlignmentPhase.ALIGNING
    clock.advance(0.001)
    assert aligner.timed_out()
    assert aligner.phase is AlignmentPhase.UNALIGNED
    assert aligner.barrier_offsets == {A: 100}  # the others are captured at their positions
    assert not aligner.timed_out()  # reported once
    aligner.finish()
    assert aligner.last_resolved_id == 1


def test_unaligned_flag_snapshots_at_the_first_barrier(aligner: BarrierAligner) -> None:
    assert aligner.on_barrier(B, _barrier(1, BarrierFlags.UNALIGNED | BarrierFlags.DRAIN), 9)
    assert aligner.phase is AlignmentPhase.UNALIGNED
    assert aligner.barrier_offsets == {B: 9}


def test_stale_barriers(aligner: BarrierAligner) -> None:
    fresh = _barrier(1)
    assert not aligner.is_stale(fresh, GEN)
    assert aligner.is_stale(_barrier(1, generation=GEN - 1), GEN)  # a zombie generation's
    assert aligner.is_stale(_barrier(1, generation=GEN + 1), GEN)

    for key in (A, B, C):
        aligner.on_barrier(key, fresh, 0)
    assert aligner.is_stale(fresh, GEN)  # aligned on it already
    assert not aligner.is_stale(_barrier(2), GEN)
    aligner.finish()
    assert aligner.is_stale(_barrier(1), GEN)  # resolved
    assert aligner.is_stale(_barrier(0), GEN)
    assert not aligner.is_stale(_barrier(2), GEN)


def test_late_barrier_after_unaligned_checkpoint_is_stale(
    aligner: BarrierAligner, clock: FakeClock
) -> None:
    aligner.on_barrier(A, _barrier(4), 10)
    clock.advance(TIMEOUT_S)
    assert aligner.timed_out()
    assert aligner.is_stale(_barrier(4), GEN)  # B and C's Barrier(4), read later
    aligner.finish()
    assert aligner.is_stale(_barrier(4), GEN)


def test_newer_barrier_overtakes_and_alignment_restarts(
    aligner: BarrierAligner, clock: FakeClock
) -> None:
    aligner.on_barrier(A, _barrier(1), 10)
    clock.advance(3)
    assert not aligner.on_barrier(B, _barrier(2), 20)
    assert aligner.barrier == _barrier(2)
    assert aligner.barrier_offsets == {B: 20}  # A's offset was Barrier(1)'s: dropped
    assert aligner.waited_s() == 0
    # An older barrier can no longer complete, and must not count for the newer one.
    assert aligner.is_stale(_barrier(1), GEN)
    with pytest.raises(LaminarError, match="barrier 1 is older than barrier 2"):
        aligner.on_barrier(C, _barrier(1), 30)
    aligner.on_barrier(A, _barrier(2), 11)
    assert aligner.on_barrier(C, _barrier(2), 31)
    assert aligner.barrier_offsets == {A: 11, B: 20, C: 31}
    aligner.finish()
    assert aligner.last_resolved_id == 2


def test_cancel_forgets_the_alignment_and_resolves_the_id(aligner: BarrierAligner) -> None:
    aligner.on_barrier(A, _barrier(5), 10)
    aligner.cancel(5)
    assert aligner.phase is AlignmentPhase.IDLE
    assert aligner.barrier is None and aligner.barrier_offsets == {}
    assert aligner.last_resolved_id == 5
    assert aligner.is_stale(_barrier(5), GEN)  # B and C's copies of the aborted barrier
    assert not aligner.on_barrier(A, _barrier(6), 12)  # the next checkpoint aligns afresh


def test_cancel_when_idle_and_of_an_older_id(aligner: BarrierAligner) -> None:
    aligner.cancel(3)
    assert aligner.phase is AlignmentPhase.IDLE and aligner.last_resolved_id == 3
    aligner.cancel(2)
    assert aligner.last_resolved_id == 3  # never goes back


def test_illegal_transitions_raise(aligner: BarrierAligner) -> None:
    with pytest.raises(LaminarError, match="from idle to idle"):
        aligner.finish()
    aligner.on_barrier(A, _barrier(1), 0)
    with pytest.raises(LaminarError, match="from aligning to idle"):
        aligner.finish()  # nothing was snapshotted yet
    assert aligner.last_resolved_id == 0 and aligner.barrier == _barrier(1)
    aligner.on_barrier(B, _barrier(1), 0)
    aligner.on_barrier(C, _barrier(1), 0)
    with pytest.raises(LaminarError, match="arrived while aligned"):
        aligner.on_barrier(A, _barrier(2), 1)
    assert aligner.barrier == _barrier(1)  # the refused barrier changed nothing
    aligner.finish()


def test_barrier_after_a_forced_unaligned_snapshot_is_refused(aligner: BarrierAligner) -> None:
    aligner.on_barrier(A, _barrier(1, BarrierFlags.UNALIGNED), 0)
    with pytest.raises(LaminarError, match="arrived while unaligned"):
        aligner.on_barrier(B, _barrier(2, BarrierFlags.UNALIGNED), 0)


def test_without_partitions_that_carry_barriers_a_checkpoint_is_due_at_once() -> None:
    # Sources read with barriers=False: the announcement alone starts the checkpoint.
    aligner = BarrierAligner([], timeout_s=60.0, clock=lambda: 0.0)
    aligner.prepare(_barrier(3))
    assert aligner.timed_out()
    assert aligner.phase is AlignmentPhase.UNALIGNED
    aligner.finish()
    assert aligner.last_resolved_id == 3


# An internal topic written by upstream tasks 0 and 1, and a source partition.
INTERNAL = ("p.1.repartition", 0)
SOURCE = ("orders", 0)
WRITERS = frozenset({0, 1})


def _from(n: int, writer: int | None, flags: BarrierFlags = BarrierFlags.NONE) -> Barrier:
    return Barrier("p", n, GEN, flags, 0, writer=writer)


@pytest.fixture
def staged(clock: FakeClock) -> BarrierAligner:
    return BarrierAligner([INTERNAL, SOURCE], TIMEOUT_S, clock=clock, writers={INTERNAL: WRITERS})


def test_internal_partition_delivers_once_every_writer_did(staged: BarrierAligner) -> None:
    assert not staged.on_barrier(SOURCE, _barrier(1), 40)
    assert staged.partition_done(SOURCE)
    assert not staged.on_barrier(INTERNAL, _from(1, 1), 100)
    assert staged.phase is AlignmentPhase.ALIGNING
    assert not staged.partition_done(INTERNAL)  # read on: writer 0's epoch 1 is still coming
    assert staged.barrier_offsets == {SOURCE: 40}
    assert not staged.is_stale(_from(1, 0), GEN)  # the other writer's copy still counts
    assert staged.on_barrier(INTERNAL, _from(1, 0), 130)
    assert staged.partition_done(INTERNAL)
    assert staged.phase is AlignmentPhase.ALIGNED
    assert staged.barrier_offsets == {SOURCE: 40, INTERNAL: 130}  # the last writer's offset
    staged.finish()
    assert not staged.partition_done(INTERNAL) and not staged.partition_done(SOURCE)


def test_writers_first_then_the_source_partition(staged: BarrierAligner) -> None:
    assert not staged.on_barrier(INTERNAL, _from(1, 0), 5)
    assert not staged.on_barrier(INTERNAL, _from(1, 1), 6)
    assert staged.partition_done(INTERNAL)
    assert staged.on_barrier(SOURCE, _barrier(1), 7)
    assert staged.barrier_offsets == {INTERNAL: 6, SOURCE: 7}


def test_unknown_writer_changes_nothing(staged: BarrierAligner) -> None:
    for stranger in (2, None):
        assert not staged.on_barrier(INTERNAL, _from(1, stranger), 10)
        assert staged.phase is AlignmentPhase.IDLE and staged.barrier is None  # not even started
    staged.on_barrier(INTERNAL, _from(1, 0), 11)
    assert not staged.on_barrier(INTERNAL, _from(1, 7), 12)
    assert not staged.on_barrier(INTERNAL, _from(2, 7), 13)  # no overtaking either
    assert staged.barrier == _from(1, 0) and staged.barrier_offsets == {}
    assert not staged.partition_done(INTERNAL)
    # A partition without writers takes any barrier, as before multi-stage pipelines.
    assert not staged.on_barrier(SOURCE, _from(1, 9), 3)
    assert staged.partition_done(SOURCE)


def test_repeated_barrier_of_one_writer_is_counted_once(staged: BarrierAligner) -> None:
    staged.on_barrier(SOURCE, _barrier(1), 1)
    assert not staged.on_barrier(INTERNAL, _from(1, 0), 10)
    assert not staged.on_barrier(INTERNAL, _from(1, 0), 11)
    assert not staged.partition_done(INTERNAL)
    assert staged.phase is AlignmentPhase.ALIGNING
    assert staged.on_barrier(INTERNAL, _from(1, 1), 12)
    assert staged.barrier_offsets[INTERNAL] == 12


def test_newer_checkpoint_overtakes_and_forgets_writer_progress(
    staged: BarrierAligner, clock: FakeClock
) -> None:
    staged.on_barrier(INTERNAL, _from(1, 0), 10)
    clock.advance(4)
    assert not staged.on_barrier(SOURCE, _barrier(2), 20)
    assert staged.barrier == _barrier(2) and staged.barrier_offsets == {SOURCE: 20}
    assert staged.waited_s() == 0
    assert staged.is_stale(_from(1, 1), GEN)  # writer 1's Barrier(1) can no longer complete
    # Writer 0's Barrier(1) does not count for 2: both writers' Barrier(2) are needed.
    assert not staged.on_barrier(INTERNAL, _from(2, 1), 30)
    assert not staged.partition_done(INTERNAL)
    assert staged.on_barrier(INTERNAL, _from(2, 0), 31)
    assert staged.barrier_offsets == {SOURCE: 20, INTERNAL: 31}


def test_timeout_with_a_partially_aligned_internal_partition(
    staged: BarrierAligner, clock: FakeClock
) -> None:
    staged.on_barrier(SOURCE, _barrier(1), 40)
    staged.on_barrier(INTERNAL, _from(1, 1), 100)
    clock.advance(TIMEOUT_S)
    assert staged.timed_out()
    assert staged.phase is AlignmentPhase.UNALIGNED
    # The internal partition is captured at its read position, not at writer 1's barrier.
    assert staged.barrier_offsets == {SOURCE: 40}
    assert not staged.partition_done(INTERNAL)
    assert staged.is_stale(_from(1, 0), GEN)  # writer 0's barrier, read later, is skipped
    staged.finish()
    assert staged.last_resolved_id == 1
    assert not staged.on_barrier(INTERNAL, _from(2, 0), 200)  # checkpoint 2 starts from scratch
    assert not staged.partition_done(INTERNAL)


def test_unaligned_flag_of_one_writer_snapshots_at_once(staged: BarrierAligner) -> None:
    assert staged.on_barrier(INTERNAL, _from(1, 0, BarrierFlags.UNALIGNED), 10)
    assert staged.phase is AlignmentPhase.UNALIGNED
    assert staged.barrier_offsets == {}  # writer 1 still behind: read position is the state
    assert not staged.partition_done(INTERNAL)


def test_cancel_forgets_writer_progress(staged: BarrierAligner) -> None:
    staged.on_barrier(INTERNAL, _from(3, 0), 10)
    staged.cancel(3)
    assert not staged.on_barrier(INTERNAL, _from(4, 1), 20)
    assert not staged.partition_done(INTERNAL)  # writer 0 of 3 does not count for 4
    assert not staged.on_barrier(INTERNAL, _from(4, 0), 21)  # the source is still due
    assert staged.partition_done(INTERNAL)


def test_a_single_writer_partition_delivers_with_its_barrier(clock: FakeClock) -> None:
    aligner = BarrierAligner([INTERNAL], TIMEOUT_S, clock=clock, writers={INTERNAL: frozenset({5})})
    assert aligner.on_barrier(INTERNAL, _from(1, 5), 0)
    assert aligner.partition_done(INTERNAL)


def test_writers_must_name_aligned_partitions() -> None:
    with pytest.raises(LaminarError, match="not an aligned partition"):
        BarrierAligner([SOURCE], TIMEOUT_S, writers={INTERNAL: WRITERS})
    with pytest.raises(LaminarError, match="no writers given"):
        BarrierAligner([INTERNAL], TIMEOUT_S, writers={INTERNAL: frozenset()})


def test_skipped_partitions_are_not_waited_for_whichever_comes_first(
    aligner: BarrierAligner,
) -> None:
    # The announcement first: B and C were skipped, A's barrier completes the alignment.
    aligner.prepare(_barrier(1), skipped=[B, C, ("other", 9)])
    assert aligner.skipped == {B, C}
    assert not aligner.settled()
    assert aligner.on_barrier(A, _barrier(1), 10)
    assert aligner.phase is AlignmentPhase.ALIGNED
    assert aligner.barrier_offsets == {A: 10}
    aligner.finish()
    assert aligner.skipped == frozenset()
    # The barrier first: it waits for B until the announcement says B was skipped.
    assert not aligner.on_barrier(A, _barrier(2), 20)
    assert not aligner.on_barrier(C, _barrier(2), 21)
    assert not aligner.settled()
    aligner.prepare(_barrier(2), skipped=[B])
    assert aligner.settled()
    assert aligner.phase is AlignmentPhase.ALIGNED


def test_every_partition_skipped_settles_at_once_and_a_newer_barrier_forgets_the_skips(
    aligner: BarrierAligner,
) -> None:
    aligner.prepare(_barrier(1), skipped=[A, B, C])
    assert aligner.settled() and aligner.phase is AlignmentPhase.ALIGNED
    aligner.finish()
    aligner.prepare(_barrier(2), skipped=[A])
    # Barrier 3 overtakes 2: 3's skips are not known yet, so A is waited for again.
    assert not aligner.on_barrier(B, _barrier(3), 30)
    assert aligner.skipped == frozenset()
    aligner.prepare(_barrier(2), skipped=[A, C])  # a late announcement of 2 changes nothing
    assert aligner.skipped == frozenset()
    assert not aligner.settled()


def test_without_skips_nothing_settles_early(aligner: BarrierAligner) -> None:
    aligner.prepare(_barrier(1))
    assert not aligner.settled()
    assert aligner.phase is AlignmentPhase.ALIGNING


def test_due_without_barrier_when_settled_or_timed_out_never_while_waiting(
    aligner: BarrierAligner, clock: FakeClock
) -> None:
    assert not aligner.due_without_barrier()  # idle
    aligner.prepare(_barrier(1), skipped=[B, C])
    assert not aligner.due_without_barrier()  # A still owes its barrier
    clock.advance(TIMEOUT_S)
    assert aligner.due_without_barrier()
    assert aligner.phase is AlignmentPhase.UNALIGNED
    aligner.finish()
    aligner.prepare(_barrier(2), skipped=[A, B, C])
    assert aligner.due_without_barrier()
    assert aligner.phase is AlignmentPhase.ALIGNED
