"""All keyed state one task holds: per source partition, a table per stateful step name
(and its event-time progress, `operators/event_time.WATERMARK_TABLE`).

With incremental checkpoints (`base_every` > 1) a checkpoint writes a delta
file (state/chain.py) of what changed since the task's previous committed
checkpoint, and a whole file, a new base, every `base_every` checkpoints, when
the barrier asks for one (FULL_SNAPSHOT), and at the first checkpoint after a
restore (a task's chain never spans a recovery or a rollback). The chain is
the task's own: `path_of(checkpoint id, base id)` names its files in the store.

With a `DiskStore` (state/disk.py), running aggregates keep their tables on the
task's local disk instead (`running_table`); a restore loads them there.

The task holds no copy of its committed state: a rollback reads it back from
the store (`restore`), from the files its last committed cut names.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.chain import Opener, Reader, encode_delta_file, read_named
from laminar_kafka.state.delta import ChangeTracking, TrackedTable
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.frames import TableMaker, encode_framed, frame_pieces
from laminar_kafka.state.snapshot import PartitionTables

PathOf = Callable[[int, "int | None"], str]
"""The address of this task's state file of checkpoint N, a delta on base B (or None)."""


@dataclass(frozen=True)
class StateFile:
    """A checkpoint's state file: its bytes a piece at a time, as the store writes them
    (`CheckpointStore.write_snapshot`), and the base it is a delta on (None: whole).

    A whole file's pieces are made from the tables while it is written, a chunk of keys
    at a time (state/frames.py), so the tables must not change until it is written.
    """

    pieces: Iterable[bytes]
    base: int | None = None


class TaskState:
    """The tables of a task's partitions; snapshots only when its stage keeps state
    (`Stage.keeps_state`)."""

    def __init__(
        self,
        stateful: bool,
        base_every: int = 1,
        path_of: PathOf | None = None,
        read: Reader | None = None,
        disk: DiskStore | None = None,
        open_file: Opener | None = None,
    ) -> None:
        self.stateful = stateful
        self.partitions: dict[PartitionKey, PartitionTables] = {}
        readable = read is not None or open_file is not None
        self.base_every = base_every if path_of is not None and readable else 1
        self._path_of, self._read, self._open = path_of, read, open_file
        self._chain: tuple[int, ...] = ()
        """The checkpoints of the last committed chain: its base, then its deltas."""
        self._pending: tuple[int, ...] = ()
        self.disk = disk

    @property
    def makes_tables(self) -> bool:
        """Whether running aggregates get their tables from `running_table`."""
        return self.incremental or self.disk is not None

    def running_table(
        self, key: PartitionKey, step: str, contents: dict[Any, Any]
    ) -> dict[Any, Any]:
        """The table of running aggregate `step` of partition `key`, holding `contents`: on
        disk with a `DiskStore`, else in memory; either records its changes with
        incremental checkpoints (the disk's only then: a whole file reads none)."""
        if self.disk is not None:
            table = self.disk.table(f"{key[0]}:{key[1]}/{step}", contents, self.incremental)
            return cast("dict[Any, Any]", table)  # a dict's interface, not a dict
        return TrackedTable(contents)

    def restored_table(self, key: PartitionKey) -> TableMaker | None:
        """What a restore of partition `key` loads a running aggregate's table into a chunk
        at a time: an empty table on disk with a `DiskStore`, a `TrackedTable` with
        incremental checkpoints (not a dict copied into one at first use), else None."""
        disk = self.disk
        if disk is None:
            return (lambda step: TrackedTable()) if self.incremental else None
        track = self.incremental
        return lambda step: disk.table(f"{key[0]}:{key[1]}/{step}", {}, track)

    def close(self) -> None:
        """Remove the local store, if any (the task ends)."""
        if self.disk is not None:
            self.disk.close()

    @property
    def incremental(self) -> bool:
        """Whether running aggregates record their changes (`TrackedTable`)."""
        return self.stateful and self.base_every > 1

    def load(self, tables: Mapping[PartitionKey, PartitionTables]) -> None:
        self.partitions = dict(tables)
        self._chain = ()

    def of(self, key: PartitionKey) -> PartitionTables:
        """Partition `key`'s tables, step name → table; steps add theirs on first use."""
        return self.partitions[key]

    def snapshot(self) -> bytes | None:
        """The task's whole state file, or None for a stage that keeps no state."""
        return encode_framed(self.partitions) if self.stateful else None

    def checkpoint(self, checkpoint_id: int, full: bool = False) -> StateFile | None:
        """The state file of checkpoint N: a delta on the committed chain, or a new base
        when `full` (the barrier's FULL_SNAPSHOT), every `base_every`, or with no chain."""
        if not self.stateful:
            return None
        chain = self._chain
        if not self.incremental or full or not chain or len(chain) >= self.base_every:
            self._pending = (checkpoint_id,)
            made = StateFile(frame_pieces(self.partitions))
        else:
            assert self._path_of is not None
            parent = self._path_of(chain[-1], chain[0] if len(chain) > 1 else None)
            self._pending = (*chain, checkpoint_id)
            delta = encode_delta_file(parent, self.partitions)  # before the resets below
            made = StateFile((delta,), base=chain[0])
        for tables in self.partitions.values():
            for state in tables.values():
                if isinstance(state.table, ChangeTracking):
                    state.table.reset()
        return made

    def committed(self) -> None:
        """The checkpoint of the last `checkpoint` committed: the next delta builds on it."""
        if self.incremental:
            self._chain = self._pending

    def restore(self, files: Mapping[PartitionKey, str], keys: Collection[PartitionKey]) -> None:
        """Back to the last committed state, read back from the store: each partition's as
        the state file `files` names for it holds it (its chain followed), empty for a
        partition it does not name. The next checkpoint is a new base."""
        if not self.stateful:
            return
        self._chain = ()
        named = {key: files[key] for key in keys if key in files}
        for key in keys:
            self.partitions[key] = {}
        self.partitions.update(read_named(self._read, named, self.restored_table, self._open))
