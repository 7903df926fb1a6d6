"""What a run tells its listeners: typed events, never sentences to parse.

The runner emits them; the CLI prints them, the demo and the chaos rounds act
on them, and `laminar-kafka run --events-file` writes them as JSON lines.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from laminar_kafka import waits


@dataclass(frozen=True)
class RuntimeEvent:
    """Base of every event; `at` is wall-clock seconds since the Unix epoch."""

    name: ClassVar[str] = "event"
    at: float = field(default_factory=waits.wall, kw_only=True)

    def to_json(self) -> str:
        body = {"event": self.name, **dataclasses.asdict(self)}
        return json.dumps(body, sort_keys=True, default=str)


@dataclass(frozen=True)
class ParallelismCapped(RuntimeEvent):
    """A stage runs fewer tasks than asked: it reads fewer partitions than that."""

    name: ClassVar[str] = "parallelism_capped"
    requested: int
    used: int
    partitions: int
    stage: int = 0
    topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class GenerationStarted(RuntimeEvent):
    """Every task of a worker generation recovered and reads."""

    name: ClassVar[str] = "generation_started"
    generation: int
    tasks: int
    start_s: float
    recovery_s: float | None = None
    """Seconds from the loss of the previous generation, after a failure."""
    ready_spread_s: float = 0.0
    """Seconds from the first task's ready to the last's (the first tasks read meanwhile)."""


@dataclass(frozen=True)
class StageProgress:
    """One stage at a checkpoint: what its tasks did since they started, and its commit."""

    stage: int
    tasks: int
    records_in: int
    records_out: int
    dead_letters: int
    duration_s: float
    """From the stage's opening (PREPARE, or the previous stage's Commit) to its Commit."""
    late_records: int = 0
    """Records later than every window they belong to (written to late_to, or dropped)."""
    watermarks: int = 0
    """Tasks that reported a watermark (every partition of theirs had one): when it is
    `tasks`, every task of the stage had one at the checkpoint, and a stateful stage's
    snapshot keeps it for a restore."""
    watermark_ms: int | None = None
    """The stage's event-time watermark (the least of its tasks' local ones), in Unix
    milliseconds; None unless every task of the stage reported one."""
    dead_letter_reasons: Mapping[str, int] = field(default_factory=dict)
    """`dead_letters` per kind of reason (the reason up to its first ': ')."""
    snapshot_bytes: int = 0
    """Bytes of state the stage's tasks wrote for this checkpoint (0: stateless)."""
    alignment_ms: int = 0
    """The longest a task of the stage waited from its first barrier to its snapshot."""
    acks_ms: int = 0
    """From the stage's opening to its last task's Ack; the rest of `duration_s` is the
    decision (manifest written, Commit announced)."""
    last_task: int | None = None
    """The task whose Ack arrived last: the one the stage waited on."""


@dataclass(frozen=True)
class CheckpointCommitted(RuntimeEvent):
    """Every stage of the checkpoint committed; `duration_s` is end to end."""

    name: ClassVar[str] = "checkpoint_committed"
    checkpoint_id: int
    generation: int
    duration_s: float
    unaligned_tasks: tuple[int, ...] = ()
    stages: tuple[StageProgress, ...] = ()
    injection_ms: int = 0
    """Writing Barrier(N) into every source partition (the first part of `duration_s`)."""
    prepare_ms: int = 0
    """Announcing Prepare(N) on the control topic (the second part; the stages follow)."""
    delta_bases: tuple[int, ...] = ()
    """The checkpoints holding the bases of this one's delta state files (none: every
    task wrote its whole state, or keeps none)."""
    removed: tuple[int, ...] = ()
    """The checkpoints retention deleted once this one committed."""
    begun_at: float = 0.0
    """When it began (wall clock; 0: not said). `at` less `duration_s` is later when the
    event was written late (retention ran between the decision and the event)."""


@dataclass(frozen=True)
class CheckpointAborted(RuntimeEvent):
    name: ClassVar[str] = "checkpoint_aborted"
    checkpoint_id: int
    generation: int
    reason: str


@dataclass(frozen=True)
class WorkerLost(RuntimeEvent):
    """The worker job of a generation failed; a restart follows after `backoff_s`."""

    name: ClassVar[str] = "worker_lost"
    generation: int
    reason: str
    restart: int
    backoff_s: float
    detail: str | None = None
    """The failed task's traceback as Spark reported it (or the task thread's own),
    when the job ended with an exception; None for a silent task or a lost checkpoint."""


@dataclass(frozen=True)
class Drained(RuntimeEvent):
    """The final DRAIN checkpoint committed; every task exited."""

    name: ClassVar[str] = "drained"
    checkpoint_id: int


@dataclass(frozen=True)
class BoundedStarted(RuntimeEvent):
    """A bounded run (`--until end`) fixed its sources' end offsets (`driver/bounded.py`)."""

    name: ClassVar[str] = "bounded_started"
    partitions: int
    resumed: bool = False
    """The ends are those recorded at an earlier start of this bounded run (a restart)."""


@dataclass(frozen=True)
class BoundedProgress(RuntimeEvent):
    """A bounded run's committed checkpoint: how much of the sources is left to its ends."""

    name: ClassVar[str] = "bounded_progress"
    checkpoint_id: int
    left: int
    """Offsets between the committed positions and the ends, over every source partition
    (about the records left: transaction markers take offsets too)."""
    partitions_done: int
    partitions: int


@dataclass(frozen=True)
class BoundedFinished(RuntimeEvent):
    """A bounded run reached its ends and its final checkpoint committed: it exits."""

    name: ClassVar[str] = "bounded_finished"
    checkpoint_id: int


@dataclass(frozen=True)
class Stopped(RuntimeEvent):
    name: ClassVar[str] = "stopped"
    committed: int
    aborted: int
    restarts: int


Listener = Callable[[RuntimeEvent], None]


def parse_event_line(line: str) -> dict[str, Any]:
    """One line of an events file, as a dict with its "event" name."""
    body: dict[str, Any] = json.loads(line)
    return body
