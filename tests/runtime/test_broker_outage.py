"""A driver cut off from Kafka: the checkpoint in flight is given up at once, and once the
control topic answers again the generation rides on if every task's main loop goes round,
or is replaced if one stays stuck in a client call."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from laminar_kafka.control.records import Heartbeat
from laminar_kafka.runtime.driver import broker_outage
from laminar_kafka.runtime.driver.broker_outage import ride_out
from laminar_kafka.runtime.driver.generation_watch import GenerationWatch
from laminar_kafka.runtime.driver.liveness import LivenessTracker
from tests.runtime.test_generation_watch import Clock

TIMEOUT_S = 5.0


@pytest.fixture(autouse=True)
def one_read_per_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each wait of `ride_out` is about one read: one step of the fake clock."""
    monkeypatch.setattr(broker_outage, "POLL_S", 1e-6)


@dataclass
class Cluster:
    """The control topic as the driver sees it: away until `back_at` on the fake clock,
    then beats of the tasks, with their main loops stalled for `stalled_ms` each."""

    arrival_s = 0.0

    clock: Clock
    back_at: float
    stalled_ms: dict[int, int] = field(default_factory=dict)
    topic: str = "p.control"
    reads: int = 0

    def reachable(self) -> bool:
        return self.clock.now >= self.back_at

    def receive(self, timeout_s: float) -> list[Any]:
        self.reads += 1
        self.clock.now += 0.1
        if not self.reachable() or self.reads % 5:
            return []
        return [Heartbeat("p", 1, t, 0, ms) for t, ms in self.stalled_ms.items()]


def outage(back_at: float, stalled_ms: dict[int, int]) -> tuple[GenerationWatch, Cluster]:
    clock = Clock()
    cluster = Cluster(clock, back_at, stalled_ms)
    tracker = LivenessTracker(1, 2, TIMEOUT_S, 1.0, cluster.reachable, clock)
    w = GenerationWatch(cluster, tracker)  # type: ignore[arg-type]
    w.ready()
    clock.now = 2.5  # no beat for two intervals: the driver asks, and nobody answers
    assert w.lost() is None  # blind, so nobody counts as silent
    return w, cluster


def test_the_checkpoint_in_flight_gives_up_once_the_driver_is_cut_off() -> None:
    w, _ = outage(back_at=20.0, stalled_ms={0: 0, 1: 0})
    reason = w.checkpoint_lost()
    assert reason is not None and "cut off from Kafka" in reason and "p.control" in reason


def test_tasks_that_go_round_again_ride_the_outage_out() -> None:
    w, cluster = outage(back_at=20.0, stalled_ms={0: 0, 1: 500})
    assert ride_out(w, 120.0, threading.Event()) is None
    assert w.cut_off() is None and cluster.clock.now < 20.0 + TIMEOUT_S


def test_a_task_stuck_in_a_client_call_has_its_generation_replaced() -> None:
    w, cluster = outage(back_at=20.0, stalled_ms={0: 0, 1: 29_000})
    reason = ride_out(w, 120.0, threading.Event())
    assert reason is not None and reason.startswith(
        "task 1 still stuck in a client call 5s after Kafka answered again (cut off 1"
    )
    assert cluster.clock.now >= 20.0 + TIMEOUT_S


def test_a_cluster_that_stays_away_replaces_the_generation_after_the_wait() -> None:
    w, _ = outage(back_at=1e9, stalled_ms={})
    assert ride_out(w, 30.0, threading.Event()) == "the driver could not reach Kafka for 30s"


def test_a_driver_that_sees_the_cluster_does_not_wait() -> None:
    clock = Clock()
    cluster = Cluster(clock, back_at=0.0)
    w = GenerationWatch(cluster, LivenessTracker(1, 2, TIMEOUT_S, 1.0, clock=clock))  # type: ignore[arg-type]
    w.ready()
    assert ride_out(w, 30.0, threading.Event()) is None
    assert cluster.reads == 0


def test_before_a_checkpoint_a_driver_that_heard_no_task_lately_asks_the_topic() -> None:
    clock = Clock()
    cluster = Cluster(clock, back_at=1e9)
    tracker = LivenessTracker(1, 2, TIMEOUT_S, 1.0, cluster.reachable, clock)
    tracker.start()
    clock.now = 0.4
    assert tracker.look()  # a beat (here: the start) within half an interval: no question
    clock.now = 0.6
    assert not tracker.look()
    assert GenerationWatch(cluster, tracker).cut_off() is not None  # type: ignore[arg-type]


def pull(w: GenerationWatch) -> None:
    """Read the next beats (every fifth read brings them), half a second of the fake clock."""
    for _ in range(5):
        w.receive(0)


def beating(stalled_ms: dict[int, int]) -> tuple[GenerationWatch, Cluster]:
    """A generation whose tasks beat, the driver seeing the cluster throughout."""
    clock = Clock()
    cluster = Cluster(clock, back_at=0.0, stalled_ms=stalled_ms)
    tracker = LivenessTracker(1, 2, TIMEOUT_S, 1.0, cluster.reachable, clock)
    w = GenerationWatch(cluster, tracker, suspect_s=20.0)  # type: ignore[arg-type]
    w.ready()
    pull(w)
    return w, cluster


def test_an_abort_while_a_task_stood_still_in_a_client_call_waits_for_it_to_move() -> None:
    """An outage the driver did not see (its barriers waited it out) leaves such traces."""
    w, cluster = beating({0: 0, 1: 3_000})
    assert ride_out(w, 30.0, threading.Event()) is None  # no abort: nothing to wait for
    reason = ride_out(w, 30.0, threading.Event(), aborted=True)
    assert reason == "task 1 still stuck in a client call 5s after an abort"
    cluster.stalled_ms[1] = 31_000  # stuck for longer than a heartbeat timeout: at once
    pull(w)
    reads = cluster.reads
    reason = ride_out(w, 30.0, threading.Event(), aborted=True)
    assert reason == "tasks [1] stood still in client calls (up to 31s)"
    assert cluster.reads == reads
    cluster.stalled_ms[1] = 0
    pull(w)
    assert ride_out(w, 30.0, threading.Event(), aborted=True) is None


def test_after_an_outage_a_task_stuck_in_a_client_call_fails_the_checkpoint_early() -> None:
    w, _ = beating({0: 0, 1: 6_000})
    assert w.checkpoint_lost() is None  # no sign of an outage: the checkpoint timeout judges
    w.suspect()  # as after a write of the driver that waited on an outage
    assert w.checkpoint_lost() == "task 1 has stood still in a client call for 6s after an outage"
    for _ in range(42):  # 21 s later, the driver looking all along
        pull(w)
        w.lost()
    assert w.checkpoint_lost() is None  # the suspicion lasts a checkpoint timeout
    for _ in range(12):
        pull(w)
    # A driver that could not look for longer than a heartbeat timeout suspects an outage.
    assert w.checkpoint_lost() == "task 1 has stood still in a client call for 6s after an outage"


def test_a_checkpoint_aborted_by_an_outage_ridden_out_is_retried_at_once() -> None:
    """Its interval passed while Kafka was away: the retry is the first commit after it."""
    w, _ = outage(back_at=20.0, stalled_ms={0: 0, 1: 0})
    assert w.checkpoint_lost() is not None  # the checkpoint in flight gives up: cut off
    assert ride_out(w, 120.0, threading.Event(), aborted=True) is None
    assert w.pause_after(committed=False, interval_s=1.0) == 0.0
    # Once: a retry that aborts for another reason waits its interval again.
    assert w.pause_after(committed=False, interval_s=1.0) == 1.0


def test_other_aborts_and_commits_wait_the_interval() -> None:
    w, _ = beating({0: 0, 1: 0})
    assert w.pause_after(committed=False, interval_s=1.0) == 1.0  # never cut off
    w, _ = outage(back_at=20.0, stalled_ms={0: 0, 1: 0})
    assert ride_out(w, 120.0, threading.Event()) is None  # cut off before a checkpoint...
    assert w.pause_after(committed=True, interval_s=1.0) == 1.0  # ...which then committed
