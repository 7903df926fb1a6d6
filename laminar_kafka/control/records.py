"""The control records of the checkpoint protocol, as immutable values.

Each class mirrors one schema in `schemas/` field for field. `checkpoint_id`
is the checkpoint number N; `generation` is the worker generation,
incremented each time the worker job is (re)started, so that records written
by zombie tasks of an older generation are recognised as stale and ignored.
The records a task processes between two checkpoints are its epoch.

Values are checked on construction (ranges of Avro int/long, reserved flag
bits, partition keys), so a record that exists can always be encoded and a
decoded record obeys the same rules. Violations raise ControlRecordError.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar

from laminar_kafka.control.checks import (
    LONG_MAX,
    check_bool,
    check_int,
    check_long,
    check_str,
    frozen_map,
    is_int,
)
from laminar_kafka.control.heartbeat import Heartbeat
from laminar_kafka.control.partition_keys import parse_partition_key, partition_key
from laminar_kafka.errors import ControlRecordError

__all__ = [
    "Ack",
    "Announcement",
    "Barrier",
    "BarrierFlags",
    "ControlRecord",
    "Heartbeat",
    "Phase",
    "Watermark",
    "parse_partition_key",
    "partition_key",
]


class BarrierFlags(enum.IntFlag):
    """Behaviour flags of a Barrier (the `flags` int of barrier.avsc)."""

    NONE = 0
    FULL_SNAPSHOT = 1
    """Snapshot all state, not a delta."""
    DRAIN = 2
    """Finish the checkpoint, then stop the pipeline."""
    CANCEL = 4
    """Abandon any in-progress checkpoint with this id."""
    UNALIGNED = 8
    """Checkpoint without waiting for the barrier on every partition."""


_KNOWN_FLAGS = int(
    BarrierFlags.FULL_SNAPSHOT | BarrierFlags.DRAIN | BarrierFlags.CANCEL | BarrierFlags.UNALIGNED
)


class Phase(enum.Enum):
    """Phase of a checkpoint as announced by the coordinator (enum Phase of the schema)."""

    PREPARE = "PREPARE"
    COMMIT = "COMMIT"
    ABORT = "ABORT"


@dataclass(frozen=True)
class Barrier:
    """Barrier(N), written by the coordinator into every source partition.

    In a multi-stage pipeline each upstream task also writes Barrier(N) into
    the internal partitions it writes; `writer` is then its task id (None for
    the coordinator's barriers), as a downstream partition aligns on all writers.
    """

    kind: ClassVar[str] = "barrier"

    pipeline: str
    checkpoint_id: int
    generation: int
    flags: BarrierFlags
    timestamp_ms: int
    writer: int | None = None

    def __post_init__(self) -> None:
        check_str(self, "pipeline")
        check_long(self, "checkpoint_id", minimum=0)
        check_long(self, "generation", minimum=0)
        check_long(self, "timestamp_ms")
        _check_flags(self)
        if self.writer is not None:
            check_int(self, "writer", minimum=0)

    @property
    def is_full_snapshot(self) -> bool:
        """Whether all state is to be snapshotted, not a delta."""
        return BarrierFlags.FULL_SNAPSHOT in self.flags

    @property
    def is_drain(self) -> bool:
        """Whether the pipeline stops after this checkpoint."""
        return BarrierFlags.DRAIN in self.flags

    @property
    def is_cancel(self) -> bool:
        """Whether this barrier cancels the in-progress checkpoint with its id."""
        return BarrierFlags.CANCEL in self.flags

    @property
    def is_unaligned(self) -> bool:
        """Whether this checkpoint is taken without alignment."""
        return BarrierFlags.UNALIGNED in self.flags


@dataclass(frozen=True)
class Watermark:
    """A worker task's event-time watermark, written by an upstream task (`task`, of
    `generation`) into every partition of the internal topics it writes, in order with
    its records: no later record of that writer is expected older than it."""

    kind: ClassVar[str] = "watermark"

    pipeline: str
    generation: int
    task: int
    watermark_ms: int

    def __post_init__(self) -> None:
        check_str(self, "pipeline")
        check_long(self, "generation", minimum=0)
        check_int(self, "task", minimum=0)
        check_long(self, "watermark_ms")


@dataclass(frozen=True)
class Announcement:
    """The coordinator's PREPARE / COMMIT / ABORT of checkpoint N, on the control topic.

    `min_watermark_ms` (the cluster minimum watermark) is set on COMMIT when the
    pipeline tracks event time; `reason` says why, mainly on ABORT. `stage` is
    the pipeline stage concerned: each stage of checkpoint N is prepared and
    decided on its own (0 in a single-stage pipeline).
    """

    kind: ClassVar[str] = "announcement"

    pipeline: str
    checkpoint_id: int
    generation: int
    phase: Phase
    min_watermark_ms: int | None = None
    reason: str | None = None
    flags: BarrierFlags = BarrierFlags.NONE
    stage: int = 0
    skipped: tuple[str, ...] = ()
    """On PREPARE and COMMIT (which opens the next stage, whose tables are source
    partitions too): source partitions (`partition_key`) Barrier(N) was not written into."""
    no_barriers: bool = False
    """On PREPARE and COMMIT: Barrier(N) was written into no source partition (`skipped`
    is empty)."""

    def __post_init__(self) -> None:
        check_str(self, "pipeline")
        check_long(self, "checkpoint_id", minimum=0)
        check_long(self, "generation", minimum=0)
        _check_flags(self)
        check_int(self, "stage", minimum=0)
        if not isinstance(self.skipped, tuple):
            object.__setattr__(self, "skipped", tuple(self.skipped))
        for key in self.skipped:
            parse_partition_key(key)  # raises ControlRecordError for a malformed key
        if not isinstance(self.no_barriers, bool):
            raise ControlRecordError(
                f"Announcement.no_barriers must be a bool, got {self.no_barriers!r}"
            )
        if self.no_barriers and self.skipped:
            raise ControlRecordError("Announcement: no_barriers with a skipped list")
        if not isinstance(self.phase, Phase):
            raise ControlRecordError(f"Announcement.phase must be a Phase, got {self.phase!r}")
        if self.min_watermark_ms is not None:
            check_long(self, "min_watermark_ms")
        if self.reason is not None:
            check_str(self, "reason")

    def skipped_partitions(self, sources: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
        """The source partitions Barrier(N) was not written into, as (topic, partition)
        keys: all of a task's `sources` when `no_barriers`, else those of `skipped`."""
        if self.no_barriers:
            return list(sources)
        return [parse_partition_key(key) for key in self.skipped]

    @property
    def is_commit(self) -> bool:
        """Whether this announces COMMIT."""
        return self.phase is Phase.COMMIT

    @property
    def is_abort(self) -> bool:
        """Whether this announces ABORT."""
        return self.phase is Phase.ABORT


@dataclass(frozen=True)
class Ack:
    """A worker task's answer to checkpoint N, on the control topic.

    The maps are copied into read-only views on construction: `positions` and
    `snapshot_handles` are keyed by `partition_key(topic, partition)`,
    `sink_handles` by sink name. `positions` holds the next offset to read.
    `stage` is the task's pipeline stage; `records_in`, `records_out` and
    `dead_letters` count what the task processed, wrote and dead-lettered since
    it started (cumulative, so a lost ack loses no count), `dead_letter_reasons`
    the dead letters per kind of reason; `late_records` the records too late for
    their windows; `snapshot_bytes` the size of the snapshot written for N.
    """

    kind: ClassVar[str] = "ack"

    pipeline: str
    checkpoint_id: int
    generation: int
    task: int
    ok: bool
    error: str | None = None
    local_watermark_ms: int | None = None
    positions: Mapping[str, int] = field(default_factory=lambda: _EMPTY_INTS)
    snapshot_handles: Mapping[str, str] = field(default_factory=lambda: _EMPTY_STRS)
    sink_handles: Mapping[str, str] = field(default_factory=lambda: _EMPTY_STRS)
    alignment_ms: int = 0
    unaligned: bool = False
    stage: int = 0
    records_in: int = 0
    records_out: int = 0
    dead_letters: int = 0
    late_records: int = 0
    dead_letter_reasons: Mapping[str, int] = field(default_factory=lambda: _EMPTY_INTS)
    snapshot_bytes: int = 0

    def __post_init__(self) -> None:
        check_str(self, "pipeline")
        check_long(self, "checkpoint_id", minimum=0)
        check_long(self, "generation", minimum=0)
        check_int(self, "task", minimum=0)
        check_bool(self, "ok")
        if self.error is not None:
            check_str(self, "error")
        if self.local_watermark_ms is not None:
            check_long(self, "local_watermark_ms")
        positions = frozen_map(self, "positions")
        for key, offset in positions.items():
            parse_partition_key(key)
            if type(offset) is not int or not 0 <= offset <= LONG_MAX:
                raise ControlRecordError(f"Ack.positions[{key!r}] must be an offset >= 0")
        for key in frozen_map(self, "snapshot_handles", values=str):
            parse_partition_key(key)
        frozen_map(self, "sink_handles", values=str)
        check_bool(self, "unaligned")
        check_int(self, "stage", minimum=0)
        counts = ("records_in", "records_out", "dead_letters", "late_records", "snapshot_bytes")
        for name in ("alignment_ms", *counts):
            check_long(self, name, minimum=0)
        for kind, count in frozen_map(self, "dead_letter_reasons").items():
            if type(count) is not int or not 0 <= count <= LONG_MAX:
                raise ControlRecordError(f"Ack.dead_letter_reasons[{kind!r}] must be a count >= 0")

    def __reduce__(self) -> tuple[Any, ...]:
        # Read-only map views cannot be pickled; rebuild from plain dicts.
        values = tuple(
            dict(v) if isinstance(v, MappingProxyType) else v
            for v in (getattr(self, f.name) for f in fields(self))
        )
        return (type(self), values)


ControlRecord = Barrier | Watermark | Announcement | Ack | Heartbeat
"""Any control record; `codec.decode` returns one of these."""

_EMPTY_INTS: Mapping[str, int] = MappingProxyType({})
_EMPTY_STRS: Mapping[str, str] = MappingProxyType({})


def _check_flags(record: Barrier | Announcement) -> None:
    flags = record.flags
    if not is_int(flags) or flags & ~_KNOWN_FLAGS:
        raise ControlRecordError(
            f"{type(record).__name__}.flags must combine {_KNOWN_FLAGS:#x} (FULL_SNAPSHOT|DRAIN|"
            f"CANCEL|UNALIGNED), got {flags!r}"
        )
    if type(flags) is not BarrierFlags:
        object.__setattr__(record, "flags", BarrierFlags(flags))
