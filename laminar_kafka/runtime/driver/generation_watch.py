"""The driver's watch over a running worker generation: is it lost, and why.

A generation is lost when its Spark job ended (a task died) or one of its tasks
fell silent (`runtime/driver/liveness.py`). The watch is also the coordinator's
`ControlLink`: whatever reads the control topic, heartbeats reach the tracker
and Acks the coordinator. Between checkpoints `wait` reads on (so a silent
task is noticed there too) and keeps the Acks it meets for the next `receive`:
the coordinator sees every Ack it would have seen without the watch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from laminar_kafka import waits
from laminar_kafka.control.records import Ack, Announcement, BarrierFlags, ControlRecord, Heartbeat
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.liveness import LivenessTracker
from laminar_kafka.runtime.task.ports import ControlLink

__all__ = ["GenerationWatch", "WatchedControl"]

POLL_S = 0.1
"""Longest read between two looks at the wake event and the tracker, between checkpoints."""


class WatchedControl(ControlLink, Protocol):
    """The control log read for Acks and Heartbeats from where the generation starts
    (`ControlChannel`)."""

    topic: str
    arrival_s: float
    """How long a record a task has written may take to reach `receive`."""

    def reachable(self, timeout_s: float) -> bool:
        """Whether the log answers at all (a silent task or a broker away?)."""
        ...


class GenerationWatch:
    """Reads the control topic for a generation's coordinator; says when the generation is lost."""

    def __init__(
        self,
        channel: WatchedControl,
        tracker: LivenessTracker,
        suspect_s: float = 0.0,
        stages: Sequence[frozenset[int]] = (),
    ) -> None:
        self._channel = channel
        self.arrival_s = channel.arrival_s
        self.tracker = tracker
        self._stages = tuple(stages)  # the task ids of each stage, stage 0 first
        self._suspect_s = suspect_s
        self._suspect_until = -math.inf
        self._held: list[Ack] = []
        self._job_lost: Callable[[], str | None] = lambda: None
        self._was_cut_off = False

    @classmethod
    def open(
        cls,
        config: RuntimeConfig,
        channel: WatchedControl,
        generation: int,
        stages: Sequence[frozenset[int]],
    ) -> GenerationWatch:
        """A watch on `channel`, which reads the control log from its end (what this
        generation writes) for Acks and Heartbeats of the tasks of `stages`."""
        interval = config.heartbeat_interval_s
        probe = lambda: channel.reachable(min(1.0, interval))  # noqa: E731
        tasks = sum(len(s) for s in stages)
        tracker = LivenessTracker(generation, tasks, config.heartbeat_timeout_s, interval, probe)
        return cls(channel, tracker, config.checkpoint_timeout_s, stages)

    def close(self) -> None:
        self._channel.close()

    def follow(self, job_lost: Callable[[], str | None]) -> None:
        """The generation's job: `job_lost()` says why it ended, None while it runs."""
        self._job_lost = job_lost

    def ready(self) -> None:
        """Every task is ready: from now on a silent task loses the generation."""
        self.tracker.start()

    def lost(self) -> str | None:
        """Why the generation is lost (the job ended, a task is silent), or None."""
        reason = self._job_lost()
        if reason:
            return reason
        self._held.extend(self._sort(self._channel.receive(0)))  # beats waiting: not silent
        return self.tracker.silent()

    def cut_off(self) -> str | None:
        """Why the driver cannot see the cluster (the control topic's leader did not answer
        its last look), or None; see `runtime/driver/broker_outage.py`."""
        if not self.tracker.blind:
            return None
        self.suspect()
        self._was_cut_off = True
        return f"the driver is cut off from Kafka (the leader of {self._channel.topic} is away)"

    def pause_after(self, committed: bool, interval_s: float) -> float:
        """How long to wait before the next checkpoint: the interval, or nothing when the
        last one aborted because the driver was cut off from Kafka and the generation rode
        the outage out (the ride-out came first): its interval passed while Kafka was away,
        and a retry at once is the first commit after the outage."""
        retry = not committed and self._was_cut_off
        self._was_cut_off = False
        return 0.0 if retry else interval_s

    def suspect(self) -> None:
        """Kafka may have been away lately (the driver was cut off, or a checkpoint aborted;
        a call that kept the driver from looking counts too, through the tracker's
        `looked_away_at`): for a checkpoint timeout from now, a task whose main loop
        stands still outside user code for a heartbeat timeout fails the checkpoint in
        flight (`runtime/driver/broker_outage.py`)."""
        self._suspect_until = self.tracker.now() + self._suspect_s

    def checkpoint_lost(self) -> str | None:
        """For the coordinator's ack wait: why the checkpoint in flight cannot complete."""
        reason = self.lost()
        if reason:
            return f"worker job lost: {reason}"
        reason = self.cut_off()
        suspect_until = max(self._suspect_until, self.tracker.looked_away_at + self._suspect_s)
        if reason or self.tracker.now() > suspect_until:
            return reason
        stuck = self.tracker.stuck(self.tracker.timeout_s)
        if not stuck:
            return None
        task = max(stuck, key=stuck.__getitem__)
        return (
            f"task {task} has stood still in a client call for {stuck[task]:.0f}s after an outage"
        )

    def explain(self, tasks: Sequence[int]) -> str:
        """What `tasks` were doing when they last beat (for a checkpoint that timed out)."""
        return self.tracker.explain(tasks)

    def wait(self, seconds: float, wake: waits.Event) -> None:
        """Read the control topic for up to `seconds`; return early on `wake` or once lost."""
        deadline = waits.monotonic() + seconds
        while not wake.is_set() and not self.lost():
            left = deadline - waits.monotonic()
            if left <= 0:
                return
            self._held.extend(self._sort(self._channel.receive(min(left, POLL_S))))

    # -- ControlLink ------------------------------------------------------
    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None:
        self._channel.send(record, timeout_s)
        if isinstance(record, Announcement) and record.is_commit:
            self._committed(record)

    def _committed(self, commit: Announcement) -> None:
        """The tasks of a stage whose DRAIN committed exit now: their silence is no loss."""
        if BarrierFlags.DRAIN in commit.flags and self._stages:
            self.tracker.finished(self._stages[commit.stage])

    def receive(self, timeout_s: float) -> list[Any]:
        """The Acks that arrived within `timeout_s` (held ones at once); beats are filed."""
        if self._held:
            held, self._held = self._held, []
            return held
        deadline = waits.monotonic() + timeout_s
        while True:
            acks = self._sort(self._channel.receive(max(0.0, deadline - waits.monotonic())))
            if acks or waits.monotonic() >= deadline:
                return acks

    def _sort(self, records: list[Any]) -> list[Ack]:
        acks = []
        for record in records:
            if isinstance(record, Heartbeat):
                self.tracker.heard(record)
            else:
                acks.append(record)
        return acks
