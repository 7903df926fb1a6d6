"""When a kill shows a restart after retention removed older deltas, and what it showed.

With `--kill-after-checkpoints N` and deltas (`--full-snapshot-every K`, K > 1), a
random kill waits, after its drawn share of the input, until at least N
checkpoints committed, retention deleted at least one checkpoint that held
deltas, and the newest committed checkpoint is itself a delta (its restore reads
a chain from an older base). Then it lets a few more input records in, past
that checkpoint's barriers, and kills if that checkpoint is still the newest:
the restart must restore its chain from a store whose older links are gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from laminar_kafka.chaos.app import ChaosApp, Event
from laminar_kafka.chaos.round import ChaosRound

RECORDS_PAST = 3
"""Input records that must arrive after the ripe checkpoint before the kill: work in flight."""


@dataclass(frozen=True)
class RetentionSeen:
    """The checkpoint store as the events tell it at the kill."""

    committed: int
    """Checkpoints committed by the application so far."""
    newest: int
    """The newest committed checkpoint: the one a restart restores."""
    bases: tuple[int, ...]
    """The bases of its delta state files (none: a whole one)."""
    removed: tuple[int, ...]
    """Checkpoints retention deleted so far."""
    removed_deltas: tuple[int, ...]
    """Of those, the ones that held delta state files."""

    def ripe(self, at_least: int) -> bool:
        """Whether a kill now restores a delta chain after retention removed deltas."""
        return self.committed >= at_least and bool(self.bases) and bool(self.removed_deltas)

    def __str__(self) -> str:
        on = f"on_base_{','.join(map(str, self.bases))}" if self.bases else "whole"
        return (
            f"newest=chk{self.newest}({on}) removed={_ids(self.removed)}"
            f" removed_deltas={_ids(self.removed_deltas)}"
        )


def retention_seen(events: list[Event]) -> RetentionSeen | None:
    """What the `checkpoint_committed` events say of the store; None before the first."""
    commits = [e for e in events if e.get("event") == "checkpoint_committed"]
    if not commits:
        return None
    with_deltas = {int(e["checkpoint_id"]) for e in commits if e.get("delta_bases")}
    removed = sorted({int(c) for e in commits for c in e.get("removed") or ()})
    newest = commits[-1]
    return RetentionSeen(
        len(commits),
        int(newest["checkpoint_id"]),
        tuple(int(b) for b in newest.get("delta_bases") or ()),
        tuple(removed),
        tuple(c for c in removed if c in with_deltas),
    )


def await_ripe(round_: ChaosRound, app: ChaosApp, at_least: int, timeout_s: float) -> RetentionSeen:
    """Wait until a kill now would restart from a delta chain whose older links are gone."""
    while True:
        seen = app.wait_event(
            f"{at_least} checkpoints, a delta the newest, and retention past a delta",
            lambda events: _ripe_event(events, at_least),
            timeout_s,
        )
        round_.producer.wait_delivered(len(round_.producer.delivered()) + RECORDS_PAST, timeout_s)
        now = retention_seen(app.events())
        if now is not None and now.ripe(at_least) and now.newest == int(seen["checkpoint_id"]):
            return now


def _ripe_event(events: list[Event], at_least: int) -> Event | None:
    seen = retention_seen(events)
    if seen is None or not seen.ripe(at_least):
        return None
    return next(e for e in reversed(events) if e.get("event") == "checkpoint_committed")


def _ids(ids: tuple[int, ...]) -> str:
    return ",".join(map(str, ids)) if ids else "none"
