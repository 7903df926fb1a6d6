"""The driver's liveness tracker, on a fake clock: who is silent, when, and when nobody is."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from laminar_kafka.control.records import Heartbeat
from laminar_kafka.runtime.driver.liveness import BLIND_PROBE_S, LivenessTracker

TIMEOUT_S = 5.0
INTERVAL_S = 1.0


@dataclass
class Clock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Probe:
    """The control topic as the tracker asks it: answers or not; counts the questions."""

    answers: bool = True
    asked: list[float] = field(default_factory=list)
    clock: Clock | None = None

    def __call__(self) -> bool:
        self.asked.append(self.clock.now if self.clock else 0.0)
        return self.answers


def tracker(tasks: int = 2, generation: int = 3) -> tuple[LivenessTracker, Clock, Probe]:
    clock = Clock()
    probe = Probe(clock=clock)
    return LivenessTracker(generation, tasks, TIMEOUT_S, INTERVAL_S, probe, clock), clock, probe


def beat(
    task: int,
    generation: int = 3,
    user_code_ms: int = 0,
    stalled_ms: int = 0,
    coordinator_ms: int = 0,
) -> Heartbeat:
    return Heartbeat("p", generation, task, user_code_ms, stalled_ms, coordinator_ms)


def run(
    t: LivenessTracker, clock: Clock, seconds: float, beating: tuple[int, ...] = (0, 1)
) -> str | None:
    """`seconds` of driver time in 0.1 s steps, `beating` tasks beating each second; the
    first reason the tracker gave, if any."""
    for step in range(1, round(seconds * 10) + 1):
        clock.now += 0.1
        if step % 10 == 0:
            for task in beating:
                t.heard(beat(task))
        if (reason := t.silent()) is not None:
            return reason
    return None


def test_nobody_is_silent_before_the_tasks_are_ready() -> None:
    t, clock, _ = tracker()
    clock.now += 60
    assert t.silent() is None


def test_tasks_that_beat_are_never_silent() -> None:
    t, clock, probe = tracker()
    t.start()
    assert run(t, clock, 60) is None
    assert probe.asked == []  # tasks were heard: no need to ask the topic


def test_a_task_that_stops_beating_is_silent_after_the_timeout() -> None:
    t, clock, _ = tracker()
    t.start()
    assert run(t, clock, 3) is None
    stopped_at = clock.now  # task 1's last beat
    reason = run(t, clock, 10, beating=(0,))
    assert reason is not None
    assert reason.startswith("task 1 sent no heartbeat for 5.1s (timeout 5s)")
    assert abs(clock.now - stopped_at - 5.1) < 1e-6


def test_a_task_never_heard_is_silent_a_timeout_after_the_others_were_ready() -> None:
    t, clock, _ = tracker()
    t.start()
    reason = run(t, clock, 10, beating=(1,))
    assert reason is not None and reason.startswith("task 0 sent no heartbeat for 5.1s")


def test_beats_of_another_generation_or_task_keep_nobody_alive() -> None:
    t, clock, _ = tracker()
    t.start()
    for _ in range(20):
        clock.now += 0.5
        t.heard(beat(0))
        t.heard(beat(1, generation=2))  # a zombie of the generation before
        t.heard(beat(7))  # no such task
        if (reason := t.silent()) is not None:
            break
    assert reason is not None and reason.startswith("task 1 sent no heartbeat")


def test_every_task_silent_and_the_topic_unreachable_is_the_driver_cut_off() -> None:
    t, clock, probe = tracker()
    t.start()
    probe.answers = False  # a broker outage: nothing arrives, nothing answers
    assert run(t, clock, 30, beating=()) is None
    # Asked once nobody was heard for two intervals, then, while unanswered, at most
    # each quarter second: the first answer ends the driver's ride-out.
    assert probe.asked[0] > clock.now - 30 + 2 * INTERVAL_S - 0.01
    assert all(b - a >= BLIND_PROBE_S - 1e-9 for a, b in itertools.pairwise(probe.asked))
    assert 85 <= len(probe.asked) <= 28 / BLIND_PROBE_S + 1  # 0.1 s steps: each 0.3 s
    # Back: the topic answers; every task gets a full timeout to be heard again.
    probe.answers = True
    back = clock.now + 0.1
    assert run(t, clock, 4.5, beating=()) is None
    reason = run(t, clock, 5, beating=())
    assert reason is not None and reason.startswith("tasks [0, 1] sent no heartbeat")
    assert clock.now - back > TIMEOUT_S


def test_a_beat_after_a_blind_stretch_gives_the_others_a_full_timeout() -> None:
    t, clock, probe = tracker()
    t.start()
    probe.answers = False
    assert run(t, clock, 20, beating=()) is None
    # Task 0 beats again 1 s later; task 1, unheard since the start, gets 5 s from there.
    assert run(t, clock, 5.9, beating=(0,)) is None
    reason = run(t, clock, 1, beating=(0,))
    assert reason is not None and reason.startswith("task 1 sent no heartbeat for 26.1s")


def test_a_lone_stopped_task_is_silent_when_the_topic_answers() -> None:
    t, clock, probe = tracker(tasks=1)
    t.start()
    assert run(t, clock, 3, beating=(0,)) is None
    reason = run(t, clock, 10, beating=())
    assert reason is not None and reason.startswith("task 0 sent no heartbeat for 5.1s")
    assert probe.asked  # nobody was heard: the topic was asked, and answered


def test_a_driver_that_did_not_look_gives_the_tasks_a_full_timeout() -> None:
    t, clock, _ = tracker()
    t.start()
    assert run(t, clock, 2) is None
    clock.now += 30  # the driver itself was stopped: the beats wait unread
    assert t.silent() is None
    t.heard(beat(0))
    t.heard(beat(1))
    assert run(t, clock, 10) is None


def waiting(
    t: LivenessTracker, clock: Clock, seconds: float, since: float | None
) -> tuple[str | None, float]:
    """Like `run`, both tasks beating, task 1 waiting for its group coordinator since
    `since` (None: not waiting); the first reason and when it was given."""
    for step in range(1, round(seconds * 10) + 1):
        clock.now += 0.1
        if step % 10 == 0:
            t.heard(beat(0))
            waited_ms = 0 if since is None else round((clock.now - since) * 1000)
            t.heard(beat(1, stalled_ms=waited_ms, coordinator_ms=waited_ms))
        if (reason := t.silent()) is not None:
            return reason, clock.now
    return None, clock.now


def test_a_task_waiting_for_its_group_coordinator_past_the_timeout_is_lost() -> None:
    t, clock, _ = tracker()
    t.start()
    assert run(t, clock, 3) is None
    began = clock.now
    reason, at = waiting(t, clock, 20, since=began)
    assert reason is not None, "a task that beats but waits on a dead coordinator"
    assert reason.startswith("task 1 has waited 6.0s for its consumer group's coordinator")
    assert TIMEOUT_S < at - began <= TIMEOUT_S + INTERVAL_S + 1e-6


def test_a_wait_for_the_coordinator_that_ends_in_time_loses_nothing() -> None:
    t, clock, _ = tracker()
    t.start()
    assert waiting(t, clock, TIMEOUT_S, since=clock.now)[0] is None  # the coordinator moved
    assert waiting(t, clock, 30, since=None)[0] is None  # answered: the loop goes on


def test_a_coordinator_wait_through_a_broker_outage_counts_from_the_return() -> None:
    t, clock, probe = tracker()
    t.start()
    began = clock.now
    probe.answers = False  # the broker is away: no beat arrives, the driver is blind
    assert run(t, clock, 20, beating=()) is None
    probe.answers = True
    back = clock.now
    # The first beat after the return says 21 s of waiting; only what the driver saw counts.
    reason, at = waiting(t, clock, 20, since=began)
    assert reason is not None and reason.startswith("task 1 has waited")
    assert at - back > TIMEOUT_S


def test_explain_names_what_the_last_beats_said() -> None:
    t, clock, _ = tracker(tasks=4)
    t.start()
    t.heard(beat(1, user_code_ms=90_000, stalled_ms=90_000))
    t.heard(beat(2, stalled_ms=40_000))  # stuck outside user code
    t.heard(beat(3, stalled_ms=50))  # alive and going round
    clock.now += 0.6
    assert t.explain([0, 1, 2, 3]) == (
        "task 1 has been in a user function for 91 s; "
        "task 2's main loop has not gone round for 41 s (outside user code: a client call?)"
    )
    assert t.explain([3]) == ""
