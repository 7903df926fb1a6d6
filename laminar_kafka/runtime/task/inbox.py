"""The announcements a task has received and not yet acted on.

They are acted on in arrival order, except the decision a task waits for,
which is taken out of turn; whatever arrived with it (a PREPARE or an Abort
of the next checkpoint) stays for the loop, never dropped. Any announcement
of a newer generation means this task is stale: it raises FencedError.
"""

from __future__ import annotations

from collections import deque

from laminar_kafka import waits
from laminar_kafka.control.records import Announcement, Barrier, Phase
from laminar_kafka.errors import FencedError
from laminar_kafka.runtime.task.ports import ControlLink


class AnnouncementInbox:
    """Announcements of one pipeline for one task of generation `generation`."""

    def __init__(self, control: ControlLink, generation: int, task: int, stage: int = 0) -> None:
        self._control = control
        self._generation = generation
        self._task = task
        self.stage = stage
        self._queue: deque[Announcement] = deque()

    def _accept(self, announcements: list[Announcement]) -> None:
        for announcement in announcements:
            if announcement.generation > self._generation:
                raise FencedError(
                    f"task {self._task} of generation {self._generation} is stale: "
                    f"generation {announcement.generation} started"
                )
            if announcement.generation == self._generation:
                self._queue.append(announcement)

    def fetch(self, timeout_s: float) -> None:
        """Take in what arrived within `timeout_s`."""
        self._accept(self._control.receive(timeout_s))

    def catch_up(self) -> None:
        """Take in everything up to the control topic's end (at start: am I stale?)."""
        self._accept(self._control.catch_up())

    def take_decision(self, checkpoint_id: int) -> Announcement | None:
        """The Commit or Abort of `checkpoint_id` for this task's stage, if it arrived."""
        for announcement in self._queue:
            if (
                announcement.checkpoint_id == checkpoint_id
                and announcement.stage == self.stage
                and (announcement.is_commit or announcement.is_abort)
            ):
                self._queue.remove(announcement)
                return announcement
        return None

    def pop(self) -> Announcement | None:
        """The oldest announcement not acted on yet."""
        return self._queue.popleft() if self._queue else None

    def opens(self, announcement: Announcement) -> Barrier | None:
        """The checkpoint whose alignment `announcement` opens for this task's stage.

        PREPARE(N) opens stage 0; Commit(N) of stage s-1 opens stage s, whose
        barriers of N cannot be visible before that commit.
        """
        if self.stage == 0 and announcement.phase is Phase.PREPARE:
            pass
        elif not (announcement.is_commit and announcement.stage == self.stage - 1):
            return None
        return Barrier(
            announcement.pipeline,
            announcement.checkpoint_id,
            announcement.generation,
            announcement.flags,
            waits.wall_ms(),
        )

    def is_abort_here(self, announcement: Announcement) -> bool:
        """An Abort of this task's stage (another stage's never concerns it)."""
        return announcement.is_abort and announcement.stage == self.stage
