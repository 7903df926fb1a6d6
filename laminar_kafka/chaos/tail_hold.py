"""The tail of a round's input held back until the fault: what trickles in meanwhile.

A fault that comes late (a crash point armed for checkpoint 4 on a slow machine)
would find the input all in and committed, and prove nothing; so the last part
of the input trickles in until the round says the fault has hit
(`chaos/producer.py` sends it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TailHold:
    """Until `released` is set, the last `share` of the input goes `step` records per `pause_s`.

    `gate`: a file created when the trickle begins (a fault armed with
    `LAMINAR_FAULT_GATE` waits for it, so that it meets input arriving).
    `checkpoints`: how many checkpoints the pipeline committed so far; given, the
    trickle sends at most `STEPS_PER_CHECKPOINT` steps per checkpoint committed since
    it began (and that many before the first), so that on a machine slower than the
    checkpoint interval it still lasts that many checkpoints and a late fault meets
    input in flight: paced by the clock alone, it ran out before a crash point armed
    for checkpoint 4 fired.
    """

    released: threading.Event
    share: float = 0.25
    pause_s: float = 0.2
    gate: Path | None = None
    step: int = 1
    checkpoints: Callable[[], int] | None = None


STEPS_PER_CHECKPOINT = 5
"""A trickle's steps per checkpoint: `ChaosSettings.tail_hold` paces one every fifth of
the checkpoint interval."""


@dataclass
class Trickle:
    """How much of a held tail went, against what its checkpoints allow."""

    hold: TailHold
    sent: int = 0
    since: int | None = None  # the checkpoints committed when the trickle began

    def may_send(self) -> bool:
        if self.hold.checkpoints is None:
            return True
        committed = self.hold.checkpoints()
        if self.since is None:
            self.since = committed
        allowed = STEPS_PER_CHECKPOINT * self.hold.step * (committed - self.since + 1)
        return self.sent < allowed
