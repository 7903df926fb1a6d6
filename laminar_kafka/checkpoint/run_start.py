"""The checkpoint a run resumed from after Kafka lost the offset markers: `<home>/run_start.json`.

`--from-checkpoint latest` chooses where to resume once, before the first
generation of a run, and only when no partition holds a committed marker
(`runtime/task/recovery.py`, `choose_run_start`). The choice is recorded here, and
from then on every task of every generation, of this run and of later ones,
restores a partition without a marker from it, never from a newer checkpoint:
a newer manifest is a decision, and a task killed before it committed that
decision left its partitions without a marker and their epoch uncommitted.

The record is written by the driver only: at the start of a run, and after it
reads the markers for retention (`follow_markers`), which keeps the recorded
checkpoints while any partition may resume from them and removes the record
once every partition has a marker of its own. A reset deletes it with the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.storage.locations import StorePath, remove_file, write_whole

RUN_START_FILE = "run_start.json"


@dataclass(frozen=True)
class RunStart:
    """Where partitions without a committed marker resume."""

    checkpoint_id: int
    """The newest complete checkpoint when the run started."""
    partial_ids: tuple[int, ...] = ()
    """Newer partial checkpoints, newest first: a partition of a stage one of them decided
    resumes from it (its stage already committed that cut downstream), else from
    `checkpoint_id`."""
    committed_since: bool = False
    """Some partition committed a marker since: a later loss of every marker is a new
    loss, not this start unfinished."""

    @property
    def checkpoint_ids(self) -> tuple[int, ...]:
        """The recorded checkpoints, newest first: where a partition looks for its position."""
        return (*self.partial_ids, self.checkpoint_id)


def _path(store: CheckpointStore) -> StorePath:
    return store.home / RUN_START_FILE


def read_run_start(store: CheckpointStore) -> RunStart | None:
    path = _path(store)
    try:
        body = json.loads(path.read_bytes())
        return RunStart(
            int(body["checkpoint_id"]),
            tuple(int(i) for i in body.get("partial_ids", ())),
            bool(body["committed_since"]),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path}: unreadable: {exc}") from None


def write_run_start(store: CheckpointStore, start: RunStart | None) -> None:
    """Record `start` durably (None: remove the record)."""
    path = _path(store)
    try:
        if start is None:
            remove_file(path)
            return
        body = {
            "checkpoint_id": start.checkpoint_id,
            "partial_ids": list(start.partial_ids),
            "committed_since": start.committed_since,
        }
        write_whole(path, json.dumps(body).encode())
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot be written: {exc}") from None


def follow_markers(
    store: CheckpointStore, markers: Mapping[PartitionKey, OffsetMarker | None]
) -> int | None:
    """After the driver read every partition's marker: the checkpoint retention must keep
    for the record (None: no record, nothing to keep).

    1. every partition has a marker: none resumes from the record again; it is removed;
    2. some have: the record stays for the others, noted as `committed_since`.
    """
    start = read_run_start(store)
    if start is None:
        return None
    found = sum(1 for m in markers.values() if m is not None)
    if markers and found == len(markers):  # 1.
        write_run_start(store, None)
        return None
    if found and not start.committed_since:  # 2.
        write_run_start(store, replace(start, committed_since=True))
    return start.checkpoint_id
