"""The checkpoint store: a directory per pipeline with generations, snapshots, manifests.

Layout under `<root>/<pipeline>/`:

    LOCK                               held by the one running application
    generation.json                    last worker generation, widest parallelism used
    checkpoint_ids.json                the highest checkpoint id before the last reset
    MARKERS_SEEN                       Kafka held committed offset markers once
    chk-<id>/RESERVED.json             the id taken by a driver before Prepare(id)
    chk-<id>/task-<t>-g<gen>.state     state snapshots written by tasks before Ack
    chk-<id>/task-<t>-g<gen>.base-<b>.delta
                                       with incremental checkpoints: what changed since
                                       the task's previous file, in a chain whose base
                                       is in chk-<b> (state/chain.py)
    chk-<id>/MANIFEST.json             written by the coordinator: the Commit decision
                                       (created once, then rewritten per stage by the
                                       same driver; partial until the last)

The root is a local path, a `file://` URL or an object store URL such as
`s3://bucket/checkpoints` (see `locations`); on a cluster it must be reachable
from the driver and every executor. On an object store there is no LOCK file:
the runner's Kafka lease keeps a second driver out (`kafka/group_lease.py`).
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.retention import checkpoint_id_of, retain
from laminar_kafka.checkpoint.signing import MANIFEST, Signer
from laminar_kafka.errors import CheckpointError, FencedError
from laminar_kafka.state.disk import local_dir
from laminar_kafka.storage.files import make_dirs
from laminar_kafka.storage.locations import (
    StorePath,
    create_whole,
    remove_file,
    remove_tree,
    store_path,
    write_streamed,
    write_whole,
)

_IDS_FILE = "checkpoint_ids.json"


@dataclass(frozen=True)
class GenerationInfo:
    generation: int
    max_parallelism: int


class CheckpointStore:
    """Reads and writes one pipeline's checkpoints under a root directory; a `signer`
    with a key signs the state files and manifests written and verifies those read."""

    def __init__(self, root: str, pipeline: str, signer: Signer | None = None) -> None:
        self.root = store_path(root)
        self.pipeline = pipeline
        self.signer = signer or Signer(pipeline)
        self.home = self.root / pipeline
        self._lock_file: IO[bytes] | None = None
        self._fence: Callable[[], None] | None = None

    # -- application lock -------------------------------------------------
    def lock(self) -> None:
        """Refuse to run two applications of one pipeline on one store.

        An flock on `LOCK`: released by the kernel when the holder exits, however it
        exits. An object store has no such lock: there the Kafka lease does it alone.
        """
        if not isinstance(self.home, Path):
            return
        make_dirs(self.home)
        handle = open(self.home / "LOCK", "ab")  # noqa: SIM115 - held for the run
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise CheckpointError(
                f"pipeline {self.pipeline!r} is already running on {self.home} "
                "(another application holds its lock)"
            ) from None
        self._lock_file = handle

    def unlock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def fence_manifests(self, check: Callable[[], None]) -> None:
        """Call `check` before every manifest write: it raises once this driver lost its lease."""
        self._fence = check

    def check_fence(self) -> None:
        """Raise FencedError if this driver may no longer write (the check of `fence_manifests`)."""
        if self._fence is not None:
            self._fence()

    # -- generations ------------------------------------------------------
    def read_generation(self) -> GenerationInfo:
        path = self.home / "generation.json"
        try:
            body = json.loads(path.read_bytes())
            return GenerationInfo(int(body["generation"]), int(body["max_parallelism"]))
        except FileNotFoundError:
            return GenerationInfo(0, 0)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{path}: unreadable: {exc}") from None

    def next_generation(self, parallelism: int) -> GenerationInfo:
        """Start a new worker generation, durably, before any of its tasks runs."""
        old = self.read_generation()
        new = GenerationInfo(old.generation + 1, max(old.max_parallelism, parallelism))
        body = {"generation": new.generation, "max_parallelism": new.max_parallelism}
        path = self.home / "generation.json"
        try:
            write_whole(path, json.dumps(body).encode())
        except OSError as exc:
            raise CheckpointError(f"{path}: cannot be written: {exc}") from None
        return new

    # -- offset markers ---------------------------------------------------
    def note_markers_seen(self) -> None:
        """Record that Kafka held committed offset markers for this pipeline."""
        path = self.home / "MARKERS_SEEN"
        if not path.exists():
            write_whole(path, b"offset markers were committed for this pipeline\n")

    def markers_seen(self) -> bool:
        """Whether Kafka ever held committed offset markers for this pipeline."""
        return (self.home / "MARKERS_SEEN").exists()

    # -- snapshots (written by tasks) -------------------------------------
    def checkpoint_dir(self, checkpoint_id: int) -> StorePath:
        return self.home / f"chk-{checkpoint_id:012d}"

    def snapshot_path(
        self, checkpoint_id: int, task: int, generation: int, base: int | None = None
    ) -> StorePath:
        """A task's state file: whole, or (`base` given) a delta on the base in chk-<base>."""
        # The generation in the name keeps a zombie task of an older generation
        # from overwriting the snapshot that the current one acknowledged.
        name = f"task-{task}-g{generation}"
        if base is not None:
            return self.checkpoint_dir(checkpoint_id) / f"{name}.base-{base:012d}.delta"
        return self.checkpoint_dir(checkpoint_id) / f"{name}.state"

    def write_snapshot(self, path: StorePath, data: bytes | Iterable[bytes]) -> int:
        """Write a state file durably from its bytes or its pieces as they come, signed on the
        way; a crash leaves no torn file. The bytes of its state (without a signature)."""
        fill = partial(self.signer.seal_into, path, (data,) if isinstance(data, bytes) else data)
        try:
            return write_streamed(path, fill, spool_dir=local_dir())
        except OSError as exc:
            raise CheckpointError(f"state snapshot {path} cannot be written: {exc}") from None

    def read_snapshot(self, path: str) -> bytes:
        """A state file's pickle or frames, whole, once verified (see `open_snapshot`)."""
        with self.open_snapshot(path) as stream:
            return stream.read()

    @contextmanager
    def open_snapshot(self, path: str) -> Iterator[IO[bytes]]:
        """A state file open for reading a chunk at a time, its signature verified first
        (the whole file, a block at a time), at the start of its pickle or frames."""
        where = f"state snapshot {path}"
        try:
            stream = store_path(path).open("rb")
        except OSError as exc:
            raise CheckpointError(f"{where} is unreadable: {exc}") from None
        with stream:
            try:
                self.signer.open_stream(path, stream, where)
                yield stream
            except OSError as exc:
                raise CheckpointError(f"{where} is unreadable: {exc}") from None

    # -- manifests (written by the coordinator) ---------------------------
    def write_manifest(self, manifest: Manifest) -> StorePath:
        """Write the decision of `manifest.decided_stages`, after the fence's check.

        The first decision (stage 0) creates the manifest and fails if one exists,
        in one step (see `create_whole`): the id was reserved by this driver, so a
        manifest there was written by another driver, and this one stops
        (FencedError). The decisions of later stages replace it.
        """
        self.check_fence()
        path = self.checkpoint_dir(manifest.checkpoint_id) / "MANIFEST.json"
        data = self.signer.seal(path, MANIFEST, manifest.to_json())
        try:
            if manifest.decided_stages == (0,):
                create_whole(path, data)
            else:
                write_whole(path, data)
        except FileExistsError:
            raise FencedError(
                f"pipeline {self.pipeline!r}: the manifest of checkpoint "
                f"{manifest.checkpoint_id} exists already ({path}): another driver decided "
                f"that checkpoint while this one ran generation {manifest.generation}; "
                "this one stops"
            ) from None
        except OSError as exc:
            raise CheckpointError(f"{path}: cannot be written: {exc}") from None
        return path

    def read_manifest(self, checkpoint_id: int) -> Manifest | None:
        path = self.checkpoint_dir(checkpoint_id) / "MANIFEST.json"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CheckpointError(f"{path}: unreadable: {exc}") from None
        return Manifest.from_json(self.signer.open(path, MANIFEST, data, path), str(path))

    def manifest_ids(self) -> list[int]:
        """Ids of the checkpoints whose manifest exists, complete or partial, oldest first."""
        entries = self.home.iterdir() if self.home.exists() else ()
        ids = ((checkpoint_id_of(e), e) for e in entries)
        return sorted(n for n, e in ids if n is not None and (e / "MANIFEST.json").exists())

    def complete_ids(self) -> list[int]:
        """Ids of the complete checkpoints (every stage decided), oldest first.

        A partial manifest (a later stage not decided, or aborted) is left out:
        nothing can resume from it as a whole. An unreadable manifest is listed,
        so that whoever reads it meets the error instead of an older checkpoint.
        """
        ids = []
        for checkpoint_id in self.manifest_ids():
            try:
                manifest = self.read_manifest(checkpoint_id)
            except CheckpointError:
                ids.append(checkpoint_id)
                continue
            if manifest is not None and manifest.complete:  # None: deleted meanwhile
                ids.append(checkpoint_id)
        return ids

    def latest_complete(self) -> Manifest | None:
        """The newest complete checkpoint's manifest (raises if that one is unreadable)."""
        ids = self.complete_ids()
        return self.read_manifest(ids[-1]) if ids else None

    def highest_id(self) -> int:
        """The highest checkpoint id ever started here, complete or not, resets included.

        Ids never repeat for a pipeline: a file sink names published files and
        commit records by checkpoint id, so a reused id would overwrite an epoch.
        """
        if not self.home.exists():
            return 0
        ids = [checkpoint_id_of(e) for e in self.home.iterdir()]
        return max([self._highest_before_reset(), *(i for i in ids if i is not None)])

    def _highest_before_reset(self) -> int:
        path = self.home / _IDS_FILE
        try:
            return int(json.loads(path.read_bytes())["highest"])
        except FileNotFoundError:
            return 0
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{path}: unreadable: {exc}") from None

    def retain(self, keep: int, keep_from: int | None = None) -> list[int]:
        """Delete old checkpoints, keeping what a kept one needs (checkpoint/retention.py)."""
        return retain(self, keep, keep_from)

    def clear(self) -> None:
        """Delete every checkpoint (a reset); keep the lock, generations and checkpoint ids.

        Generations stay monotonic across a reset: barriers of the old run are still
        in the source topics, and only their older generation marks them stale.
        Checkpoint ids go on counting (the highest is recorded before anything is
        deleted): the old run's published files keep their names.
        """
        if not self.home.exists():
            return
        highest = self.highest_id()
        if highest:
            write_whole(self.home / _IDS_FILE, json.dumps({"highest": highest}).encode())
        for entry in self.home.iterdir():
            if entry.name in ("LOCK", "generation.json", _IDS_FILE):
                continue
            if entry.is_dir():
                remove_tree(entry)
            else:
                remove_file(entry)
