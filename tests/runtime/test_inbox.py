"""A task's inbox: a decision is taken out of turn, nothing that came with it is lost."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka.control.records import Announcement, BarrierFlags, Phase
from laminar_kafka.errors import FencedError
from laminar_kafka.runtime.task.inbox import AnnouncementInbox


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


def _staged(
    n: int, phase: Phase, stage: int, flags: BarrierFlags = BarrierFlags.NONE
) -> Announcement:
    return Announcement("p", n, 2, phase, flags=flags, stage=stage)


def test_each_stage_opens_on_its_own_announcement_and_takes_only_its_decisions() -> None:
    first = AnnouncementInbox(_Control(), generation=2, task=0, stage=0)  # type: ignore[arg-type]
    second = AnnouncementInbox(_Control(), generation=2, task=2, stage=1)  # type: ignore[arg-type]
    prepare = _staged(7, Phase.PREPARE, 0, BarrierFlags.DRAIN)
    upstream_commit = _staged(7, Phase.COMMIT, 0, BarrierFlags.DRAIN)
    opened = first.opens(prepare)
    assert opened is not None and opened.checkpoint_id == 7 and opened.is_drain
    assert first.opens(upstream_commit) is None
    # Stage 1 opens N on stage 0's Commit(N), with its flags (a DRAIN must reach it).
    assert second.opens(prepare) is None
    opened = second.opens(upstream_commit)
    assert opened is not None and opened.checkpoint_id == 7 and opened.is_drain
    assert second.opens(_staged(7, Phase.COMMIT, 1)) is None
    # An Abort concerns the stage it names only.
    assert second.is_abort_here(_staged(7, Phase.ABORT, 1))
    assert not second.is_abort_here(_staged(7, Phase.ABORT, 0))
    inbox = AnnouncementInbox(
        _Control([upstream_commit, _staged(7, Phase.COMMIT, 1)]),  # type: ignore[arg-type]
        generation=2,
        task=2,
        stage=1,
    )
    inbox.fetch(0)
    decision = inbox.take_decision(7)
    assert decision is not None and decision.stage == 1
    assert inbox.pop() == upstream_commit  # stage 0's commit stays for the loop
