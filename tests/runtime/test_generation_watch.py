"""The driver's watch over a generation: beats to the tracker, Acks to the coordinator, and
a wait between checkpoints that reads on and ends when the generation is lost."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from laminar_kafka.control.records import (
    Announcement,
    BarrierFlags,
    ControlRecord,
    Heartbeat,
    Phase,
)
from laminar_kafka.runtime.driver.generation_watch import GenerationWatch
from laminar_kafka.runtime.driver.liveness import LivenessTracker
from tests.checkpoint.fakes import ack


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeChannel:
    """The control topic: batches that arrive one per read; each read moves the clock."""

    arrival_s = 0.0

    clock: Clock
    arriving: list[list[Any]] = field(default_factory=list)
    reads: int = 0

    sent: list[ControlRecord] = field(default_factory=list)

    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None:
        self.sent.append(record)

    def receive(self, timeout_s: float) -> list[Any]:
        self.reads += 1
        self.clock.now += 0.1
        return self.arriving.pop(0) if self.arriving else []


def watch(arriving: list[list[Any]]) -> tuple[GenerationWatch, FakeChannel, Clock]:
    clock = Clock()
    channel = FakeChannel(clock, arriving)
    tracker = LivenessTracker(1, 2, 5.0, 1.0, clock=clock)
    return GenerationWatch(channel, tracker), channel, clock  # type: ignore[arg-type]


def test_the_coordinator_gets_the_acks_and_the_tracker_the_beats() -> None:
    w, _, _ = watch([[Heartbeat("p", 1, 0), ack(3, 0), Heartbeat("p", 1, 1), ack(3, 1)]])
    assert w.receive(1.0) == [ack(3, 0), ack(3, 1)]
    assert w.tracker.explain([0, 1]) == ""  # both heard, neither busy


def test_a_read_of_beats_only_reads_on_for_the_acks() -> None:
    w, channel, _ = watch([[Heartbeat("p", 1, 0)], [Heartbeat("p", 1, 1)], [ack(3, 0)]])
    assert w.receive(30.0) == [ack(3, 0)]  # not [] after the first batch of beats
    assert channel.reads == 3


def test_acks_met_between_checkpoints_are_kept_for_the_coordinator() -> None:
    w, _, _ = watch([[ack(0, 1, ok=False)], [Heartbeat("p", 1, 0)]])
    w.ready()
    w.wait(0.3, threading.Event())
    assert w.receive(0.0) == [ack(0, 1, ok=False)]


def test_the_wait_ends_at_once_when_woken_or_lost() -> None:
    w, channel, _ = watch([])
    woken = threading.Event()
    woken.set()
    w.wait(60, woken)
    assert channel.reads == 0
    w.follow(lambda: "a worker task process died")
    w.wait(60, threading.Event())
    assert w.lost() == "a worker task process died"


def test_a_silent_task_ends_the_wait_between_checkpoints() -> None:
    beats = [[Heartbeat("p", 1, 0)] if i % 10 == 0 else [] for i in range(200)]
    w, _, clock = watch(beats)
    w.ready()
    w.wait(3600, threading.Event())  # 5 s of the fake clock later: task 1 never beat
    reason = w.lost()
    assert reason is not None and reason.startswith("task 1 sent no heartbeat for 5.")
    assert 5.0 < clock.now < 6.0


def test_tasks_of_a_stage_whose_drain_committed_may_fall_silent() -> None:
    # Stage 0 (task 0) exits on Commit(N, 0) of a DRAIN, while stage 1 (task 1) may
    # still align N for longer than the heartbeat timeout: task 0 is done, not lost.
    clock = Clock()
    channel = FakeChannel(clock, [[Heartbeat("p", 1, 1)] for _ in range(80)])
    tracker = LivenessTracker(1, 2, 5.0, 1.0, clock=clock)
    stages = (frozenset({0}), frozenset({1}))
    w = GenerationWatch(channel, tracker, stages=stages)  # type: ignore[arg-type]
    w.ready()
    w.send(Announcement("p", 1, 1, Phase.COMMIT, flags=BarrierFlags.DRAIN, stage=0))
    for _ in range(70):  # 7 s: task 1 beats on, task 0 has exited
        assert w.lost() is None
    w.send(Announcement("p", 2, 1, Phase.COMMIT, stage=1))  # no drain: nobody is done
    assert tracker.silent() is None
