"""How a chaos round runs: its input's size and pace, its parallelism, where it keeps things."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from laminar_kafka.chaos.tail_hold import STEPS_PER_CHECKPOINT, TailHold


@dataclass(frozen=True)
class ChaosSettings:
    bootstrap: str
    records: int = 2000
    partitions: int = 4
    parallelism: int = 2
    checkpoint_interval_s: float = 1.0
    checkpoint_timeout_s: float = 20.0
    """A pause round stops a worker for longer than this."""
    alignment_timeout_s: float | None = None
    """None: 5 s, or a quarter of the checkpoint timeout if that is less (tasks align
    rather than snapshot unaligned, so the alignment crash point is reached)."""
    drain_timeout_s: float = 180.0
    work_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="laminar-chaos-")))
    say: Callable[[str], None] = print
    chunks: int = 20
    """The input is produced in this many chunks..."""
    pause_s: float | None = None
    """...this far apart, so that it is still arriving when the kill comes (crash points
    fire at checkpoint 2 to 4); by default, spread over six checkpoint intervals."""
    broker_home: Path | None = None
    """Broker-bounce rounds: the home of the local broker to bounce (None: their own)."""
    checkpoint_root: str | None = None
    """Where rounds keep checkpoints, a directory or URL (None: each round's directory)."""
    master: str | None = None
    """The applications' Spark master (None: local[N])."""
    run_args: tuple[str, ...] = ()
    """More `laminar-kafka run` options for every round's application (its state store)."""
    kill_after_checkpoints: int | None = None
    """Random kills wait for this many checkpoints, a delta the newest, and retention
    past a delta (`chaos/retention_kill.py`); None: only for their share of the input."""

    @property
    def chunk_pause_s(self) -> float:
        if self.pause_s is not None:
            return self.pause_s
        return 6 * self.checkpoint_interval_s / max(1, self.chunks)

    def tail_hold(
        self, round_dir: Path, step: int = 1, checkpoints: Callable[[], int] | None = None
    ) -> TailHold:
        """The last quarter of the input trickles in (five times `step` records per
        checkpoint interval, and per checkpoint `checkpoints` counts) until the fault
        hits, so that a late fault still meets input in flight; the trickle's start
        opens the round's fault gate (`fault_gate`)."""
        pause_s = self.checkpoint_interval_s / STEPS_PER_CHECKPOINT
        return TailHold(threading.Event(), 0.25, pause_s, fault_gate(round_dir), step, checkpoints)

    @property
    def alignment_s(self) -> float:
        if self.alignment_timeout_s is not None:
            return self.alignment_timeout_s
        return min(5.0, self.checkpoint_timeout_s / 4)


def fault_gate(round_dir: Path) -> Path:
    """The file that opens a gated crash point (`LAMINAR_FAULT_GATE`) in a round.

    A kill during the commit RPC can land after the broker took the commit: if
    no input arrived after that checkpoint's barrier, the kill left nothing in
    flight. Gated, the point fires only once the input trickles in steadily.
    """
    return round_dir / "fault-gate"
