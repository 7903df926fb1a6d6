"""A task's heartbeats: what each beat says, and a thread that beats through long user code."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from laminar_kafka.control.records import Heartbeat
from laminar_kafka.errors import FencedError
from laminar_kafka.runtime.task import heartbeat
from laminar_kafka.runtime.task.heartbeat import TaskLiveness


@dataclass
class Clock:
    now: float = 10.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Beats:
    """A sender that keeps the beats; `wanted` of them in user code set `enough`."""

    sent: list[Heartbeat] = field(default_factory=list)
    closed: bool = False
    fail_first: int = 0
    wanted: int = 3
    enough: threading.Event = field(default_factory=threading.Event)

    def send(self, beat: Heartbeat) -> None:
        if self.fail_first:
            self.fail_first -= 1
            raise BufferError("local queue full")
        self.sent.append(beat)
        if sum(1 for b in self.sent if b.user_code_ms > 0) >= self.wanted:
            self.enough.set()

    def close(self) -> None:
        self.closed = True


def test_a_beat_says_how_long_the_loop_has_been_in_user_code_and_since_it_went_round() -> None:
    clock = Clock()
    live = TaskLiveness("p", 4, 2, 1.0, Beats(), clock)
    live.check()
    clock.now += 1.0
    with live.user_code:
        clock.now += 2.5
        assert live.beat() == Heartbeat("p", 4, 2, user_code_ms=2500, stalled_ms=3500)
    clock.now += 0.5
    assert live.beat() == Heartbeat("p", 4, 2, user_code_ms=0, stalled_ms=4000)
    live.check()
    assert live.beat() == Heartbeat("p", 4, 2, user_code_ms=0, stalled_ms=0)


def test_a_beat_says_how_long_the_loop_has_waited_for_its_group_coordinator() -> None:
    clock = Clock()
    since: list[float | None] = [None]
    live = TaskLiveness("p", 4, 2, 1.0, Beats(), clock, lambda: since[0])
    live.check()
    since[0] = clock.now  # the producer hands the checkpoint's offsets to the coordinator
    clock.now += 7.25
    assert live.beat() == Heartbeat("p", 4, 2, stalled_ms=7250, coordinator_ms=7250)
    since[0] = None
    live.check()
    assert live.beat() == Heartbeat("p", 4, 2)


def test_the_thread_beats_while_the_main_loop_is_in_a_long_user_function() -> None:
    beats = Beats(fail_first=1)  # a failed send does not stop the thread
    live = TaskLiveness("p", 1, 0, 0.01, beats)
    live.start()
    try:
        with live.user_code:  # the user function returns once three beats saw it running
            assert beats.enough.wait(10), f"only {beats.sent} while in user code"
    finally:
        live.close()
    busy = [b.user_code_ms for b in beats.sent if b.user_code_ms]
    assert busy == sorted(busy)  # the same call, longer at each beat
    assert beats.closed
    count = len(beats.sent)
    assert not any(t.name.startswith("laminar-heartbeat") for t in threading.enumerate())
    assert len(beats.sent) == count  # no beat after close


def test_check_stops_a_task_whose_spark_worker_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    live = TaskLiveness("p", 1, 0, 1.0, Beats())
    live.check()
    gone = heartbeat.os.getppid() + 1
    monkeypatch.setattr(heartbeat.os, "getppid", lambda: gone)  # re-parented: the worker died
    with pytest.raises(FencedError, match="Spark worker that started this task is gone"):
        live.check()


def test_a_main_loop_stalled_outside_user_code_has_its_stack_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    live = TaskLiveness("p", 1, 0, 1.0, Beats(), clock)
    live._main = threading.get_ident()  # as `start` does, without the thread
    caplog.set_level("INFO", logger=heartbeat.log.name)
    clock.now += heartbeat.STACK_AFTER_S - 0.5
    live._log_stall()
    assert not caplog.records  # not stalled long enough
    clock.now += 1.0
    live._log_stall()
    live._log_stall()  # the same stall: logged once
    (stalled,) = caplog.records
    assert "stalled for 3.5s" in stalled.getMessage()
    assert "test_a_main_loop_stalled_outside_user_code" in stalled.getMessage()  # the stack
    live.check()
    live._log_stall()
    assert "went round again after a stall of 3.5s" in caplog.records[-1].getMessage()
    with live.user_code:  # a long user function is not a stall
        clock.now += 10.0
        live._log_stall()
    assert len(caplog.records) == 2


class _QueuedProducer:
    """A producer whose records stay queued (a partition parked after its leader died)."""

    def __init__(self) -> None:
        self.queued = 0
        self.asked: list[str] = []

    def __len__(self) -> int:
        return self.queued

    def produce(self, topic: str, value: bytes, key: bytes, **_: object) -> None:
        self.queued += 1

    def poll(self, timeout: float) -> int:
        return 0

    def list_topics(self, topic: str, timeout: float) -> None:
        self.asked.append(topic)


def test_a_beat_still_queued_when_the_next_is_due_asks_for_its_topic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    producer = _QueuedProducer()
    monkeypatch.setattr(
        heartbeat, "unbatched_producer", lambda kafka, delivery_timeout_ms: producer
    )
    beats = heartbeat.ControlTopicBeats(None, "_laminar.p.control", 4.0)  # type: ignore[arg-type]
    beats.send(Heartbeat("p", 1, 0))
    assert producer.asked == []  # nothing queued before the first beat
    beats.send(Heartbeat("p", 1, 0))
    beats.send(Heartbeat("p", 1, 0))
    assert producer.asked == ["_laminar.p.control"] * 2
