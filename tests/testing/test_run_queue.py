"""Which strands may go: those not waiting, in spawn order, and those whose deadline passed."""

from __future__ import annotations

from laminar_kafka.testing.run_queue import RunQueue
from laminar_kafka.testing.strand import Strand


def queue_of(count: int) -> tuple[RunQueue, list[Strand]]:
    queue, strands = RunQueue(), [Strand(serial, f"s{serial}") for serial in range(1, count + 1)]
    for strand in strands:
        queue.spawned(strand)
    return queue, strands


def test_a_woken_strand_goes_back_in_spawn_order() -> None:
    queue, (a, b, c) = queue_of(3)
    event = object()
    queue.wait(a, event, None)
    queue.wait(c, event, 5.0)
    assert queue.runnable(0.0) == [b]
    queue.wake(event)
    assert queue.runnable(0.0) == [a, b, c]
    assert a.woken and c.woken and c.deadline is None
    assert queue.soonest() is None  # c no longer waits for its deadline


def test_a_deadline_that_passed_wakes_its_strand_unnotified() -> None:
    queue, (a, b) = queue_of(2)
    queue.wait(a, None, 2.0)
    queue.wait(b, object(), 1.0)
    assert queue.runnable(0.5) == [] and queue.soonest() == 1.0
    assert queue.runnable(1.0) == [b] and not b.woken and b.on is None
    assert queue.runnable(3.0) == [a, b]
    assert queue.soonest() is None


def test_a_wake_of_what_no_strand_waits_for_changes_nothing() -> None:
    queue, (a, b) = queue_of(2)
    lock, other = object(), object()
    queue.wait(a, lock, None)
    queue.wake(other)
    assert queue.runnable(100.0) == [b] and a.waiting
    queue.ended(b)
    assert queue.strands == [a] and queue.runnable(100.0) == []
