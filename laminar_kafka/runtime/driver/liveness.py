"""The driver's side of liveness: which task of the running generation fell silent.

Each task beats about every `interval_s` from a thread (`runtime/task/heartbeat.py`).
A task of the generation the tracker watches that the driver has not heard
from for `timeout_s` is silent, and the runner replaces the generation at once,
as it does for a lost worker job, whether a checkpoint is in flight or not:

1. the clocks start when every task is ready (`start`): a task may take a
   while to recover, and its beats before that count for nothing;
2. beats of another generation (a zombie's) or of an unknown task are ignored;
3. silence counts only while the driver can see: when it heard no task for
   two intervals it asks the control topic (`probe`); if that does not answer
   either, the driver is the one cut off (a broker outage), not the tasks, and
   nobody is silent. Once it sees again, or after a stretch in which it did
   not look at all (`silent` not called for two intervals: the driver itself
   was stopped), every task gets a full timeout to be heard again.

A task that beats is alive, even if it never acks: a user function that never
returns or a deadlock keeps its heartbeat thread running. The checkpoint
timeout replaces such a task, and `explain` names the cause from its last beat
("task 3 has been in a user function for 95 s"). One wait is known to last
for good: a task's beats that say it has waited for its consumer group's
coordinator to take a checkpoint's offsets for `timeout_s` (counted, like
silence, while the driver can see) lose the generation at once. librdkafka can
hold that call forever once the coordinator's broker has left the cluster
(librdkafka #5511), and a live coordinator answers it in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from laminar_kafka import waits
from laminar_kafka.control.records import Heartbeat

__all__ = ["LivenessTracker"]

Clock = Callable[[], float]

QUIET_INTERVALS = 2
"""Intervals without a beat from any task after which the driver asks whether it can see."""

BLIND_PROBE_S = 0.25
"""How often a driver cut off from Kafka asks again (each ask waits up to a second when
unanswered): the first answer after a new leader was elected ends its ride-out."""


class LivenessTracker:
    """Last beats of one generation's tasks, as the driver received them."""

    def __init__(
        self,
        generation: int,
        tasks: int,
        timeout_s: float,
        interval_s: float,
        probe: Callable[[], bool] = lambda: True,
        clock: Clock = waits.monotonic,
    ) -> None:
        self.generation, self.tasks = generation, tasks
        self.timeout_s, self.interval_s = timeout_s, interval_s
        self._probe, self._clock = probe, clock
        self._beats: dict[int, tuple[float, Heartbeat]] = {}
        """Per task: its last beat, and when it was received."""
        self._finished: set[int] = set()
        """Tasks that exit after a drain committed: their silence is no loss."""
        self._ready_at: float | None = None
        self._counted_from = -math.inf
        """Silence counts from here at the earliest (ready, or the driver could see again)."""
        self._heard_any = -math.inf
        self._checked = -math.inf
        self._probed = -math.inf
        self._blind = False
        self.looked_away_at = -math.inf
        """When the driver last looked again after not looking for a heartbeat timeout."""

    def start(self) -> None:
        """Every task is ready: their silence counts from now."""
        now = self._clock()
        self._ready_at = self._counted_from = self._heard_any = self._checked = now

    def heard(self, beat: Heartbeat) -> None:
        """A beat arrived (2.: ignored unless it is of a task of this generation)."""
        if beat.generation != self.generation or not 0 <= beat.task < self.tasks:
            return
        now = self._clock()
        if self._blind:  # 3. the driver sees again
            self._blind, self._counted_from = False, now
        self._beats[beat.task] = (now, beat)
        self._heard_any = now

    def finished(self, tasks: Iterable[int]) -> None:
        """These tasks exit now (the DRAIN of their stage committed): not silent, done."""
        self._finished.update(tasks)

    def silent(self) -> str | None:
        """Why the generation is lost (its silent tasks), or None while every task is heard."""
        if self._ready_at is None:
            return None
        now = self._clock()
        if now - self._checked > QUIET_INTERVALS * self.interval_s:
            self._counted_from = now  # 3. the driver did not look: it cannot tell
            if now - self._checked > self.timeout_s:
                self.looked_away_at = now  # a driver's call waited long: on an outage?
        self._checked = now
        if now - self._heard_any > QUIET_INTERVALS * self.interval_s:
            self._ask_topic(now)
        if self._blind:
            return None
        if waiting := self._waiting_on_coordinator():
            return waiting
        quiet = [
            t
            for t in range(self.tasks)
            if t not in self._finished and now - self._since(t) > self.timeout_s
        ]
        if not quiet:
            return None
        longest = max(now - self._last(t, self._ready_at) for t in quiet)
        who = f"task {quiet[0]}" if len(quiet) == 1 else f"tasks {quiet}"
        return (
            f"{who} sent no heartbeat for {longest:.1f}s (timeout {self.timeout_s:g}s): "
            "stopped, dead or cut off from Kafka"
        )

    def now(self) -> float:
        """The tracker's clock."""
        return self._clock()

    @property
    def blind(self) -> bool:
        """Whether the driver's last look at the control topic went unanswered (3.)."""
        return self._blind

    def look(self) -> bool:
        """Whether the driver sees the control topic, asked now unless a task was heard
        within half an interval (before a checkpoint: it would wait on an outage)."""
        now = self._clock()
        if now - self._heard_any > self.interval_s / 2:
            self._ask_topic(now)
        return not self._blind

    def not_moving(self, since: float) -> list[int]:
        """Tasks not heard since `since` (a `clock` time), or whose main loop has stood
        still outside user code for a few intervals: after a broker outage, those still
        stuck in a client call. A task in a long user function is not among them."""
        fresh_ms = QUIET_INTERVALS * self.interval_s * 1000
        stuck = []
        for task in range(self.tasks):
            received, beat = self._beats.get(task, (-math.inf, None))
            stalled = beat is not None and beat.stalled_ms > fresh_ms and not beat.user_code_ms
            if beat is None or received < since or stalled:
                stuck.append(task)
        return stuck

    def stuck(self, longer_than_s: float) -> dict[int, float]:
        """Task → how long its main loop has stood still outside user code, as its last beat
        said, for the tasks where that is longer than `longer_than_s`."""
        found = {}
        for task, (_, beat) in self._beats.items():
            if not beat.user_code_ms and beat.stalled_ms / 1000 > longer_than_s:
                found[task] = beat.stalled_ms / 1000
        return found

    def explain(self, tasks: Sequence[int]) -> str:
        """What the last beats of `tasks` (which did not ack in time) say they were doing."""
        now = self._clock()
        notes = []
        for task in tasks:
            if task not in self._beats:
                continue
            received, beat = self._beats[task]
            age = now - received
            if beat.user_code_ms:
                busy = beat.user_code_ms / 1000 + age
                notes.append(f"task {task} has been in a user function for {busy:.0f} s")
            elif beat.stalled_ms / 1000 >= QUIET_INTERVALS * self.interval_s:
                stalled = beat.stalled_ms / 1000 + age
                notes.append(
                    f"task {task}'s main loop has not gone round for {stalled:.0f} s "
                    "(outside user code: a client call?)"
                )
        return "; ".join(notes)

    def _waiting_on_coordinator(self) -> str | None:
        """Why the generation is lost when a task's last beat says it has waited for its
        group coordinator for `timeout_s` while the driver could see, else None."""
        for task, (received, beat) in sorted(self._beats.items()):
            if not beat.coordinator_ms or task in self._finished:
                continue
            began = received - beat.coordinator_ms / 1000
            if received - max(began, self._counted_from) > self.timeout_s:
                return (
                    f"task {task} has waited {beat.coordinator_ms / 1000:.1f}s for its consumer "
                    f"group's coordinator to take checkpoint offsets (timeout {self.timeout_s:g}s);"
                    " librdkafka keeps waiting for good once that coordinator's broker has left"
                    " the cluster"
                )
        return None

    def _ask_topic(self, now: float) -> None:
        """3. No task heard lately: whether the driver sees the control topic (once an
        interval; once cut off, every `BLIND_PROBE_S`: an answer ends a ride-out)."""
        if now - self._probed < (BLIND_PROBE_S if self._blind else self.interval_s):
            return
        self._probed = now
        answered = self._probe()
        if answered and self._blind:
            self._counted_from = self._clock()
        self._blind = not answered

    def _last(self, task: int, ready_at: float) -> float:
        """When `task` was last heard (when every task was ready, if never)."""
        beat = self._beats.get(task)
        return ready_at if beat is None else beat[0]

    def _since(self, task: int) -> float:
        """Where `task`'s silence is counted from."""
        beat = self._beats.get(task)
        return self._counted_from if beat is None else max(beat[0], self._counted_from)
