"""The manifest of a checkpoint: the durable record of its Commit decisions.

A manifest exists only for a checkpoint the coordinator decided to commit; it is
written (atomically) before Commit is announced, so a task that finds its
transaction marker naming checkpoint N can always find manifest N. A pipeline
of several stages has its checkpoints decided stage by stage: manifest N is
rewritten at each decision and is partial (not `complete`) until the last
stage is decided, or for good when a later stage aborted. A partial manifest
is right for the stages it lists, which is what a marker naming N needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from laminar_kafka.control.partition_keys import parse_partition_key, partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey

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
    topology: Mapping[str, str] = field(default_factory=dict)
    """Stateful step name → signature of the pipeline that wrote this checkpoint's state
    (empty in manifests written before step names): what a restart is checked against."""
    stages: int = 1
    """How many stages the pipeline has (1 in manifests written before stages)."""
    decided_stages: tuple[int, ...] = (0,)
    """The stages whose Commit of this checkpoint is decided: always 0..s."""
    version: int = MANIFEST_VERSION

    @property
    def complete(self) -> bool:
        """Whether every stage is decided: the checkpoint as a whole committed."""
        return set(self.decided_stages) == set(range(self.stages))

    # The maps keep the "topic:partition" keys of the file (and of the Acks they come
    # from); code outside asks by PartitionKey.

    @property
    def partitions(self) -> tuple[PartitionKey, ...]:
        """The source partitions whose position this checkpoint holds, in key order."""
        return tuple(parse_partition_key(k) for k in sorted(self.positions))

    def position_of(self, key: PartitionKey) -> int | None:
        """The next offset to read in `key` after this checkpoint; None if it has none."""
        return self.positions.get(partition_key(*key))

    def snapshot_of(self, key: PartitionKey) -> str | None:
        """The state snapshot file holding `key`'s tables; None if it has none."""
        return self.snapshots.get(partition_key(*key))

    def to_json(self) -> bytes:
        # Not asdict(): it deep-copies, and read-only map views (as Ack holds) cannot be copied.
        body: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        body["positions"] = dict(self.positions)
        body["barrier_offsets"] = dict(self.barrier_offsets)
        body["snapshots"] = dict(self.snapshots)
        body["sink_handles"] = dict(self.sink_handles)
        body["topology"] = dict(self.topology)
        body["unaligned_tasks"] = list(self.unaligned_tasks)
        body["decided_stages"] = list(self.decided_stages)
        return json.dumps(body, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Manifest:
        try:
            body = json.loads(data)
            if not isinstance(body, dict):
                raise CheckpointError(f"{where}: a manifest is a JSON object, not {body!r:.40}")
            if body.get("version") != MANIFEST_VERSION:
                raise CheckpointError(
                    f"{where}: manifest version {body.get('version')} is not {MANIFEST_VERSION}"
                )
            body["unaligned_tasks"] = tuple(body.get("unaligned_tasks", ()))
            if "decided_stages" in body:
                body["decided_stages"] = tuple(body["decided_stages"])
            manifest = cls(**body)
        except CheckpointError:
            raise
        except (ValueError, TypeError) as exc:
            raise CheckpointError(f"{where}: unreadable manifest: {exc}") from None
        manifest._check_types(where)
        return manifest

    def _check_types(self, where: str) -> None:
        """A manifest read back must hold what the coordinator wrote, or recovery misreads it."""
        for name in ("checkpoint_id", "generation", "created_ms"):
            if type(getattr(self, name)) is not int:
                raise CheckpointError(f"{where}: {name} is not an integer")
        if not isinstance(self.pipeline, str):
            raise CheckpointError(f"{where}: pipeline is not a string")
        maps = {
            "positions": int,
            "barrier_offsets": int,
            "snapshots": str,
            "sink_handles": str,
            "topology": str,
        }
        for name, value_type in maps.items():
            value = getattr(self, name)
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and type(v) is value_type for k, v in value.items()
            ):
                raise CheckpointError(
                    f"{where}: {name} must map strings to {value_type.__name__} values"
                )
        if self.min_watermark_ms is not None and type(self.min_watermark_ms) is not int:
            raise CheckpointError(f"{where}: min_watermark_ms is not an integer")
        if not all(type(t) is int for t in self.unaligned_tasks):
            raise CheckpointError(f"{where}: unaligned_tasks must list task numbers")
        if type(self.stages) is not int or self.stages < 1:
            raise CheckpointError(f"{where}: stages is not a positive integer")
        decided = self.decided_stages
        if not all(type(s) is int for s in decided) or not (
            1 <= len(decided) <= self.stages and decided == tuple(range(len(decided)))
        ):
            raise CheckpointError(
                f"{where}: decided_stages must list stages 0..s of {self.stages}, "
                f"got {list(decided)}"
            )
