"""What a run did, summed up for progress lines, benchmarks and tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from laminar_kafka.checkpoint.coordinator import PendingCheckpoint
from laminar_kafka.checkpoint.retention import delta_base
from laminar_kafka.control.records import Ack
from laminar_kafka.runtime.driver.events import CheckpointCommitted, StageProgress


def quantile(samples: Sequence[float], q: float) -> float | None:
    """The `q` quantile (0..1, nearest rank) of `samples`, or None when there are none."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[rank]


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
    stage_checkpoint_s: dict[int, list[float]] = field(default_factory=dict)
    """Stage → how long each committed checkpoint took in it."""
    injection_s: list[float] = field(default_factory=list)
    """Per committed checkpoint: the barrier injection into every source partition."""

    def record(self, result: PendingCheckpoint) -> None:
        """Count a decided checkpoint in."""
        if not result.committed:
            self.aborted += 1
            return
        self.committed += 1
        self.last_checkpoint_id = result.checkpoint_id
        self.checkpoint_s.append(result.duration_s)
        self.injection_s.append(result.injection_s)
        for stage, seconds in result.stage_durations_s.items():
            self.stage_checkpoint_s.setdefault(stage, []).append(seconds)
        self.alignment_ms.extend(a.alignment_ms for a in result.acks.values())
        self.unaligned_acks += sum(1 for a in result.acks.values() if a.unaligned)


def _reasons(acks: list[Ack]) -> dict[str, int]:
    """The tasks' dead letters per kind of reason, added up."""
    total: dict[str, int] = {}
    for ack in acks:
        for kind, count in ack.dead_letter_reasons.items():
            total[kind] = total.get(kind, 0) + count
    return total


def stage_progress(result: PendingCheckpoint) -> tuple[StageProgress, ...]:
    """Per stage: its tasks' counts (from their Acks) and its share of the checkpoint."""
    out = []
    for stage, seconds in sorted(result.stage_durations_s.items()):
        acks = [a for a in result.acks.values() if a.stage == stage]
        local = [a.local_watermark_ms for a in acks if a.local_watermark_ms is not None]
        out.append(
            StageProgress(
                stage,
                len(acks),
                sum(a.records_in for a in acks),
                sum(a.records_out for a in acks),
                sum(a.dead_letters for a in acks),
                seconds,
                sum(a.late_records for a in acks),
                len(local),
                min(local) if acks and len(local) == len(acks) else None,
                _reasons(acks),
                sum(a.snapshot_bytes for a in acks),
                max((a.alignment_ms for a in acks), default=0),
                round(result.acks_s.get(stage, 0.0) * 1000),
                result.last_acked.get(stage),
            )
        )
    return tuple(out)


def committed_event(result: PendingCheckpoint) -> CheckpointCommitted:
    """The event of a committed checkpoint: how long, which tasks snapshot unaligned, stages."""
    unaligned = tuple(sorted(a.task for a in result.acks.values() if a.unaligned))
    return CheckpointCommitted(
        result.checkpoint_id,
        result.generation,
        result.duration_s,
        unaligned,
        stage_progress(result),
        round(result.injection_s * 1000),
        round(result.prepare_s * 1000),
        _delta_bases(result),
        result.removed,
        result.begun_at,
    )


def _delta_bases(result: PendingCheckpoint) -> tuple[int, ...]:
    """The bases the checkpoint's delta state files (named in the tasks' Acks) build on."""
    handles = (h for a in result.acks.values() for h in a.snapshot_handles.values())
    return tuple(sorted({b for h in handles if (b := delta_base(h)) is not None}))
