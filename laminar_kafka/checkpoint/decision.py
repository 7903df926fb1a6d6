"""The manifest that makes a stage's decision on a checkpoint durable."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from laminar_kafka import waits
from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.pending import PendingCheckpoint
from laminar_kafka.control.records import Ack, partition_key


def decision_manifest(
    pipeline: str,
    generation: int,
    pending: PendingCheckpoint,
    acks: Sequence[Ack],
    topology: Mapping[str, str],
    stages: int,
    decided: int,
) -> Manifest:
    """Manifest N holding `acks`, those of stages 0..decided-1 (all of them when complete).

    Its minimum watermark is the lowest the acking tasks reported.
    """
    watermarks = [a.local_watermark_ms for a in acks if a.local_watermark_ms is not None]
    return Manifest(
        pipeline=pipeline,
        checkpoint_id=pending.checkpoint_id,
        generation=generation,
        created_ms=waits.wall_ms(),
        positions={k: v for a in acks for k, v in a.positions.items()},
        barrier_offsets={partition_key(*k): v for k, v in pending.barrier_offsets.items()},
        snapshots={k: v for a in acks for k, v in a.snapshot_handles.items()},
        sink_handles={f"task-{a.task}": h for a in acks for h in a.sink_handles.values()},
        min_watermark_ms=min(watermarks) if watermarks else None,
        unaligned_tasks=tuple(sorted(a.task for a in acks if a.unaligned)),
        topology=dict(topology),
        stages=stages,
        decided_stages=tuple(range(decided)),
    )
