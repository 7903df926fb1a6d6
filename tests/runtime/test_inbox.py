"""A task's inbox: a decision is taken out of turn, nothing that came with it is lost."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka.control.records import Announcement, BarrierFlags, Phase
from laminar_kafka.errors import FencedError
from laminar_kafka.runtime.inbox import AnnouncementInbox


class _Control:
    def __init__(self, *batches: list[Announcement]) -> None:
        self.batches = list(batches)

    def receive(self, timeout_s: float) -> list[Any]:
        return self.batches.pop(0) if self.batches else []

    def catch_up(self) -> list[Any]:
        out = [a for batch in self.batches for a in batch]
        self.batches.clear()
        return out


def _a(n: int, phase: Phase, generation: int = 2) -> Announcement:
    return Announcement("p", n, generation, phase, flags=BarrierFlags.NONE)


def _inbox(*batches: list[Announcement]) -> AnnouncementInbox:
    return AnnouncementInbox(_Control(*batches), generation=2, task=0)  # type: ignore[arg-type]


def test_what_arrives_with_the_decision_stays_for_the_loop() -> None:
    # Commit(5), then Prepare(6) and Abort(6) in the same receive batch.
    inbox = _inbox([_a(5, Phase.COMMIT), _a(6, Phase.PREPARE), _a(6, Phase.ABORT)])
    inbox.fetch(0)
    decision = inbox.take_decision(5)
    assert decision is not None and decision.is_commit
    assert [(a.checkpoint_id, a.phase) for a in iter(inbox.pop, None)] == [
        (6, Phase.PREPARE),
        (6, Phase.ABORT),
    ]


def test_a_decision_behind_other_announcements_is_found() -> None:
    inbox = _inbox([_a(6, Phase.PREPARE)], [_a(5, Phase.ABORT)])
    inbox.fetch(0)
    assert inbox.take_decision(5) is None
    inbox.fetch(0)
    decision = inbox.take_decision(5)
    assert decision is not None and decision.is_abort
    assert [(a.checkpoint_id, a.phase) for a in iter(inbox.pop, None)] == [(6, Phase.PREPARE)]


def test_older_generations_are_ignored_and_a_newer_one_makes_the_task_stale() -> None:
    inbox = _inbox([_a(5, Phase.COMMIT, generation=1)])
    inbox.fetch(0)
    assert inbox.pop() is None
    with pytest.raises(FencedError, match="generation 3 started"):
        _inbox([_a(0, Phase.ABORT, generation=3)]).catch_up()
