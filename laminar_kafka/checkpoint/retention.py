"""Retention: which old checkpoints of a store go, and what a kept one still needs.

The newest `keep` complete checkpoints stay, and everything at or above the
lowest checkpoint a committed offset marker names. With incremental
checkpoints a kept checkpoint's state files may be deltas: each names its base
in its file name (`task-<t>-g<gen>.base-<b>.delta`), and its chain lies between
that base and itself, so keeping every checkpoint back to the oldest base that
a kept manifest needs keeps every file a restore of it reads.
"""

from __future__ import annotations

import re
from typing import Protocol

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.errors import CheckpointError
from laminar_kafka.storage.locations import StorePath, remove_tree


class Checkpoints(Protocol):
    """What retention reads of a checkpoint store (a `CheckpointStore`, which calls it)."""

    @property
    def home(self) -> StorePath: ...

    def complete_ids(self) -> list[int]: ...

    def manifest_ids(self) -> list[int]: ...

    def read_manifest(self, checkpoint_id: int) -> Manifest | None: ...


_DELTA_NAME = re.compile(r"task-\d+-g\d+\.base-(\d+)\.delta")


def delta_base(handle: str) -> int | None:
    """The checkpoint holding the base of the delta state file `handle`; None for a whole one."""
    match = _DELTA_NAME.fullmatch(handle.rstrip("/").rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


def checkpoint_id_of(entry: StorePath) -> int | None:
    """The id of a `chk-<id>` directory; None for any other entry."""
    name = entry.name
    if not name.startswith("chk-") or not name[4:].isdigit():
        return None
    return int(name[4:])


def retain(store: Checkpoints, keep: int, keep_from: int | None = None) -> list[int]:
    """Delete all but the newest `keep` complete checkpoints and older incomplete ones.

    Nothing at or above `keep_from` is deleted, whatever the count: it is the
    lowest checkpoint a committed offset marker still names, which recovery
    needs (a partial one too). Incomplete checkpoints (no manifest, or a
    partial one) newer than the oldest complete one kept stay: one may be in
    flight; older ones go. A kept checkpoint whose state files are deltas
    keeps everything back to their bases: a chain lies between its base and
    its newest file.
    """
    if keep < 1:
        raise CheckpointError(f"cannot retain {keep} checkpoints: keep at least 1")
    complete = store.complete_ids()
    if len(complete) <= keep:
        return []
    oldest_kept = complete[-keep]
    if keep_from is not None:
        oldest_kept = min(oldest_kept, keep_from)
    oldest_kept = min([oldest_kept, *_bases_from(store, oldest_kept)])
    removed = []
    for entry in store.home.iterdir():
        checkpoint_id = checkpoint_id_of(entry)
        if checkpoint_id is not None and checkpoint_id < oldest_kept:
            remove_tree(entry)
            removed.append(checkpoint_id)
    return sorted(removed)


def _bases_from(store: Checkpoints, oldest: int) -> list[int]:
    """The bases that the state files of the manifests from `oldest` on are deltas on."""
    bases = []
    for checkpoint_id in store.manifest_ids():
        if checkpoint_id >= oldest:
            manifest = store.read_manifest(checkpoint_id)
            for handle in manifest.snapshots.values() if manifest else ():
                if (base := delta_base(handle)) is not None:
                    bases.append(base)
    return bases
