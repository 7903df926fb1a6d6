"""Which state files of a checkpoint are bases and which deltas, and the chain a restore reads.

Part of `checkpoint.inspection`. A file's kind, task and base come from its name
(`task-<t>-g<gen>.state`, `task-<t>-g<gen>.base-<b>.delta`, checkpoint/store.py),
so listing them for every checkpoint reads no file, only its size. The chain of
a delta of the newest checkpoint is followed through the parents the files
name, as a restore follows it (state/chain.py): each file is verified (a signed
store, given the key; a block at a time), then its parent is read from the head
of its pickle (`state.chain.head_of`): its tables are not unpickled.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from laminar_kafka.checkpoint.inspection_report import BASE, DELTA, ChainLink, CheckpointFile
from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.retention import delta_base
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointIntegrityError
from laminar_kafka.state.chain import MAX_CHAIN, delta_parent, head_of
from laminar_kafka.storage.locations import store_path

_STATE_FILE = re.compile(r"task-([0-9]+)-g([0-9]+)\.(?:state|base-[0-9]+\.delta)")
_CHECKPOINT_DIR = re.compile(r"chk-([0-9]+)")


def name_parts(path: str) -> tuple[int | None, int | None]:
    """The task and generation a state file's name gives (None, None for another name)."""
    match = _STATE_FILE.fullmatch(PurePosixPath(path).name)
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def checkpoint_of(path: str) -> int | None:
    """The checkpoint whose directory holds the state file at `path`."""
    match = _CHECKPOINT_DIR.fullmatch(PurePosixPath(path).parent.name)
    return int(match.group(1)) if match else None


def files_of(manifest: Manifest) -> dict[str, list[str]]:
    """State file path → the partitions whose tables the manifest says it holds."""
    files: dict[str, list[str]] = {}
    for partition, path in sorted(manifest.snapshots.items()):
        files.setdefault(path, []).append(partition)
    return files


def checkpoint_files(manifest: Manifest) -> tuple[CheckpointFile, ...]:
    """The state files a manifest names: each one's kind, base and size, none of them read."""
    found = []
    for path in files_of(manifest):
        task, generation = name_parts(path)
        base = delta_base(path)
        try:
            size: int | None = store_path(path).stat().st_size
        except OSError:  # missing: a problem of its own (`inspection`), or deleted meanwhile
            size = None
        kind = BASE if base is None else DELTA
        found.append(CheckpointFile(path, task, generation, kind, base, size))
    return tuple(sorted(found, key=lambda f: (f.task is None, f.task or 0, f.file)))


def chain_of(
    store: CheckpointStore,
    path: str,
    size: int,
    parent: str | None,
    problems: list[str],
) -> tuple[ChainLink, ...]:
    """The files a restore of the state file `path` reads, its base first and `path` last.

    `parent` is the file that `path` (a delta) names; None for a base, whose chain is
    itself. Each parent is verified and asked for its own parent, back to a base. A
    file missing, refused or unreadable on the way, or a chain that does not start at
    the base the name gives (which retention keeps), is a problem; a chain broken on
    the way is ().
    """
    links = [ChainLink(checkpoint_of(path), path, size)]
    address = parent
    while address is not None:
        if len(links) > MAX_CHAIN:
            problems.append(f"state file {path}: its chain of deltas does not end in a base")
            return ()
        try:
            size = store_path(address).stat().st_size
            found = _parent(store, address)
        except FileNotFoundError:
            problems.append(
                f"state file {path}: its chain needs {address}, which is missing: the state "
                "in it cannot be restored"
            )
            return ()
        except CheckpointIntegrityError as exc:
            problems.append(f"state file {path}: its chain needs a refused file: {exc}")
            return ()
        except Exception as exc:
            problems.append(f"state file {path}: its chain needs {address}, unreadable: {exc}")
            return ()
        links.append(ChainLink(checkpoint_of(address), address, size))
        address = found
    links.reverse()
    named = delta_base(path)
    starts = links[0].checkpoint_id if len(links) > 1 else None
    if named != starts:
        problems.append(
            f"state file {path}: its name gives base {_opt(named)}, but its chain starts at "
            f"{links[0].file}: retention keeps what the name says"
        )
    return tuple(links)


def _parent(store: CheckpointStore, address: str) -> str | None:
    """The parent the state file at `address` names (None: a base), once it is verified,
    read as a restore's walk reads it (`head_of`)."""
    with store.open_snapshot(address) as stream:
        head = head_of(stream)
    if head is None or isinstance(head, str):
        return head
    found = delta_parent(head)
    return found[0] if found is not None else None


def _opt(checkpoint_id: int | None) -> str:
    return "none (a whole file)" if checkpoint_id is None else f"checkpoint {checkpoint_id}"
