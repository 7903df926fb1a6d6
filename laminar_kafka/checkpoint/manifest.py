"""The manifest of a complete checkpoint: the durable record of a Commit decision.

A manifest exists only for a checkpoint the coordinator decided to commit; it is
written (atomically) before Commit is announced, so a task that finds its
transaction marker naming checkpoint N can always find manifest N.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from laminar_kafka.errors import CheckpointError

MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Manifest:
    """Where every source partition stood at checkpoint `checkpoint_id`, and its state."""

    pipeline: str
    checkpoint_id: int
    generation: int
    created_ms: int
    positions: Mapping[str, int]
    """"topic:partition" → the next offset to read after this checkpoint."""
    barrier_offsets: Mapping[str, int]
    """"topic:partition" → the offset of Barrier(checkpoint_id) in that partition."""
    snapshots: Mapping[str, str] = field(default_factory=dict)
    """"topic:partition" → the state snapshot file holding that partition's tables."""
    sink_handles: Mapping[str, str] = field(default_factory=dict)
    min_watermark_ms: int | None = None
    unaligned_tasks: tuple[int, ...] = ()
    version: int = MANIFEST_VERSION

    def to_json(self) -> bytes:
        body = asdict(self)
        body["positions"] = dict(self.positions)
        body["barrier_offsets"] = dict(self.barrier_offsets)
        body["snapshots"] = dict(self.snapshots)
        body["sink_handles"] = dict(self.sink_handles)
        body["unaligned_tasks"] = list(self.unaligned_tasks)
        return json.dumps(body, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Manifest:
        try:
            body: dict[str, Any] = json.loads(data)
            if body.get("version") != MANIFEST_VERSION:
                raise CheckpointError(
                    f"{where}: manifest version {body.get('version')} is not {MANIFEST_VERSION}"
                )
            body["unaligned_tasks"] = tuple(body.get("unaligned_tasks", ()))
            return cls(**body)
        except CheckpointError:
            raise
        except (ValueError, TypeError) as exc:
            raise CheckpointError(f"{where}: unreadable manifest: {exc}") from None
