"""What a run did, summed up for progress lines, benchmarks and tests."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunStats:
    """What a run did, for progress lines, benchmarks and tests."""

    generations: int = 0
    restarts: int = 0
    committed: int = 0
    aborted: int = 0
    checkpoint_s: list[float] = field(default_factory=list)
    alignment_ms: list[int] = field(default_factory=list)
    unaligned_acks: int = 0
    recovery_s: list[float] = field(default_factory=list)
    last_checkpoint_id: int = 0
