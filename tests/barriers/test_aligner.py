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
