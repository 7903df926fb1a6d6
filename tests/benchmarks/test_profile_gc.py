"""The collector profile runs the join as a task holds its input: Messages made per poll
from plain rows (not speed; the run itself checks that some orders were paired)."""

from __future__ import annotations

import gc

import pytest

from benchmarks import profile_gc


def test_the_join_runs_on_messages_made_per_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_gc, "fresh", profile_gc._as_messages)
    run = profile_gc.join_run(3_000, real=True)
    gc.collect()

    seconds, records = run()

    assert seconds >= 0 and 0 < records < 2 * 3_000
