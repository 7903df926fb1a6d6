"""The deterministic scheduler: one thread at a time, virtual time, a seed per interleaving."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from laminar_kafka import faults, waits
from laminar_kafka.faults import FaultPoint, ThreadCrash
from laminar_kafka.testing.scheduler import ScheduleError, Scheduler


def racers(threads: int = 3, rounds: int = 20) -> list[str]:
    """Threads that note their name at each clock reading: the order is the interleaving."""
    order: list[str] = []

    def race(name: str) -> None:
        for _ in range(rounds):
            waits.monotonic()
            order.append(name)

    started = [waits.thread(race, f"r{i}", (f"r{i}",)) for i in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return order


def test_a_seed_replays_its_interleaving() -> None:
    runs = [Scheduler(seed) for seed in (1, 1, 2)]
    orders = [s.run(racers) for s in runs]
    assert orders[0] == orders[1] and runs[0].digest == runs[1].digest
    assert orders[0] != orders[2] and runs[0].digest != runs[2].digest
    assert sorted(orders[0]) == sorted(orders[2])  # every thread ran to its end


def test_priorities_run_one_thread_until_a_change_point() -> None:
    order = Scheduler(4, priorities=0.0).run(racers)
    switches = sum(a != b for a, b in itertools.pairwise(order))
    assert switches == 2  # each ran its 20 rounds in one go


def test_a_timeout_costs_virtual_time_only() -> None:
    scheduler = Scheduler(0)
    began = time.monotonic()

    def wait_long() -> tuple[bool, float]:
        event = waits.event()
        waits.sleep(30.0)
        return event.wait(60.0), waits.monotonic()

    woken, at = scheduler.run(wait_long)
    assert not woken and at >= 90.0
    assert time.monotonic() - began < 5.0


def test_a_thread_waiting_on_a_lock_hands_the_baton_on() -> None:
    """A lock held across a wait does not deadlock the process: the other thread
    waits for the lock in the scheduler, not in the operating system."""

    def program() -> list[str]:
        lock, changed = waits.lock(), waits.condition()
        done: list[str] = []

        def holder() -> None:
            with lock:
                waits.sleep(1.0)
                done.append("holder")

        def other() -> None:
            with lock:
                done.append("other")
            with changed:
                changed.notify_all()

        threads = [waits.thread(holder, "holder"), waits.thread(other, "other")]
        for thread in threads:
            thread.start()
        with changed:
            while len(done) < 2:
                changed.wait(5.0)
        return done

    for seed in range(5):
        assert sorted(Scheduler(seed).run(program)) == ["holder", "other"]


def test_every_thread_waiting_for_ever_is_a_deadlock() -> None:
    def stuck() -> None:
        waits.event().wait()

    with pytest.raises(ScheduleError, match="waits for ever"):
        Scheduler(0).run(stuck)


def test_a_thread_left_waiting_is_abandoned_when_the_run_ends() -> None:
    before = threading.active_count()

    def leave_one() -> str:
        waits.thread(lambda: waits.event().wait(), "left").start()
        return "done"

    assert Scheduler(0).run(leave_one) == "done"
    assert threading.active_count() == before


def test_a_crash_point_kills_the_thread_that_reaches_it() -> None:
    def program() -> list[str]:
        ended: list[str] = []

        def task(name: str) -> None:
            try:
                waits.monotonic()
                faults.crash_here(FaultPoint.MID_EPOCH, 2)
                ended.append(name)
            except faults.Killed:
                ended.append(f"{name} killed")

        threads = [waits.thread(task, f"t{i}", (f"t{i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return ended

    with faults.kill_threads(ThreadCrash(FaultPoint.MID_EPOCH)):
        first = Scheduler(3).run(program)
    with faults.kill_threads(ThreadCrash(FaultPoint.MID_EPOCH)):
        again = Scheduler(3).run(program)
    assert first == again
    assert sum(e.endswith("killed") for e in first) == 1
