"""What `laminar-kafka inspect` finds in a checkpoint store, as frozen values.

The report is built by `checkpoint.inspection` and printed by the CLI, as
tables or as JSON; `StoreReport.to_json()` gives every field under its own
name, so scripts can rely on the keys.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

PENDING = "pending"
"""An incomplete checkpoint newer than every complete one: in flight, or left by a stopped run."""

ABANDONED = "abandoned"
"""An incomplete checkpoint older than a complete one: aborted, deleted by later retention."""

BASE = "base"
"""A whole state file: a task's partitions' tables, read alone by a restore."""

DELTA = "delta"
"""A state file of what changed since the task's previous one, on a chain back to a base."""


@dataclass(frozen=True)
class CheckpointFile:
    """One task's state file of a checkpoint, known from its name and size (not read)."""

    file: str
    task: int | None
    generation: int | None
    kind: str
    """`BASE` or `DELTA`."""
    base: int | None
    """The checkpoint holding the base a delta builds on; None for a base."""
    bytes: int | None
    """What the file added to the store; None when it is missing."""


@dataclass(frozen=True)
class CheckpointSummary:
    """One complete checkpoint, from its manifest."""

    checkpoint_id: int
    created_ms: int
    generation: int
    partitions: int
    unaligned_tasks: tuple[int, ...]
    min_watermark_ms: int | None
    state_files: tuple[CheckpointFile, ...] = ()


@dataclass(frozen=True)
class IncompleteCheckpoint:
    """A `chk-<id>` directory without a manifest: no Commit was decided for it (yet)."""

    checkpoint_id: int
    status: str
    """`PENDING` or `ABANDONED`."""


@dataclass(frozen=True)
class StepSize:
    """The state one stateful step keeps in one task's state file."""

    step: str
    partitions: int
    keys: int | None
    """None when the table cannot be read here (its values need the pipeline's own classes)."""
    bytes: int


@dataclass(frozen=True)
class ChainLink:
    """A state file a restore reads: one of a chain, from its base to the newest delta."""

    checkpoint_id: int | None
    file: str
    bytes: int


@dataclass(frozen=True)
class StateFile:
    """One task's state file of a checkpoint: its size on disk and what it holds per step."""

    file: str
    task: int | None
    generation: int | None
    bytes: int
    partitions: tuple[str, ...]
    steps: tuple[StepSize, ...]
    """Per step: the table's bytes in this file (for a delta, its changes and deletions)."""
    kind: str = BASE
    """`BASE` or `DELTA`."""
    base: int | None = None
    """The checkpoint holding the base a delta builds on; None for a base."""
    chain: tuple[ChainLink, ...] = ()
    """What a restore reads, base first, this file last (a base alone); () if broken."""


@dataclass(frozen=True)
class TopologyStep:
    """A stateful step of the pipeline that wrote a checkpoint, and its signature."""

    step: str
    signature: str


@dataclass(frozen=True)
class NewestCheckpoint:
    """The newest readable complete checkpoint: where `--from-checkpoint latest` would resume."""

    checkpoint_id: int
    state_files: tuple[StateFile, ...]
    topology: tuple[TopologyStep, ...]


@dataclass(frozen=True)
class PartitionMarker:
    """The checkpoint a source partition's committed offset marker names, if any."""

    partition: str
    """"topic:partition"."""
    checkpoint_id: int | None
    generation: int | None
    in_store: bool | None
    """Whether the named checkpoint is complete in the store; None without a marker."""


@dataclass(frozen=True)
class Signatures:
    """How the manifests and state files of the complete checkpoints are signed."""

    signed: int
    unsigned: int
    verified: bool
    """Whether every signed file was checked with the key (one that failed is a problem)."""


@dataclass(frozen=True)
class PipelineReport:
    """Everything found for one pipeline under the store's root."""

    pipeline: str
    home: str
    generation: int | None
    max_parallelism: int | None
    checkpoints: tuple[CheckpointSummary, ...]
    incomplete: tuple[IncompleteCheckpoint, ...]
    newest: NewestCheckpoint | None
    markers: tuple[PartitionMarker, ...] | None
    """None when the committed markers were not read (no broker, or it did not answer)."""
    problems: tuple[str, ...]
    """What would make a start fail or lose state: the ERROR lines."""
    notes: tuple[str, ...]
    """What is worth knowing but is no fault of the store."""
    signatures: Signatures | None = None
    """None when there is no complete checkpoint to tell."""


@dataclass(frozen=True)
class StoreReport:
    """The pipelines of one checkpoint root, and where their committed markers were read."""

    root: str
    bootstrap: str | None
    pipelines: tuple[PipelineReport, ...]

    @property
    def problems(self) -> tuple[str, ...]:
        """Every problem of every pipeline, each prefixed with its pipeline's name."""
        return tuple(f"{p.pipeline}: {problem}" for p in self.pipelines for problem in p.problems)

    def to_dict(self) -> dict[str, Any]:
        body = dataclasses.asdict(self)
        body["ok"] = not self.problems
        return body

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)
