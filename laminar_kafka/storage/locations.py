"""Where checkpoints and file sinks live: a local directory, or an object store (fsspec).

A location is a path or a URL (`file://`, `s3://`, any protocol fsspec
knows). Reading and listing look the same everywhere (pathlib's API, through
universal-pathlib); writing and deleting differ:

- on a local disk a file is written to a temporary name, synced and renamed, so a
  crash never leaves a torn file;
- on an object store one PUT makes the whole object visible or nothing (S3 has
  read-after-write consistency), so it is written in place; there are no
  directories to create or sync. A file written a piece at a time
  (`write_streamed`: a state file) is spooled to a local file (on Linux one
  without a name, freed however the process ends: `spool`) and uploaded from
  there, in parts of `PART_BYTES` (a multipart upload, visible once complete)
  when it is large.

A file that must be created once and never replaced (`create_whole`) is linked
into place locally, which fails if the name exists, and on S3 put with
`If-None-Match: *`, which S3 refuses (412) if the object exists.

Credentials and endpoints of object stores come from the environment, as every
AWS tool reads them (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_ENDPOINT_URL`...): the Spark executors that write state snapshots inherit it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeAlias, TypeVar

from upath import UPath

from laminar_kafka.errors import CheckpointError, LaminarError
from laminar_kafka.storage.files import create_exclusive, write_atomic, write_filled
from laminar_kafka.storage.spool import spool_file

StorePath: TypeAlias = "Path | UPath"
T = TypeVar("T")

PART_BYTES = 8 << 20
"""An upload's part (S3's least is 5 MiB): what an upload holds in memory, twice over
(`_UPLOADS` parts in flight)."""
_UPLOADS = 2
_MAX_PARTS = 10_000  # S3's most parts in one upload


def store_path(
    location: str, what: str = "checkpoint directory", error: type[LaminarError] = CheckpointError
) -> StorePath:
    """The path of a location: a local Path, or a UPath for a URL; `what` names it in errors."""
    if location.startswith("file://"):
        return Path(location[len("file://") :]).expanduser().resolve()
    if "://" not in location:
        return Path(location).expanduser().resolve()
    protocol = location.split("://", 1)[0]
    # The driver lists what executors wrote: a cached listing would hide their files.
    options: dict[str, Any] = {}
    if protocol in ("s3", "s3a", "gs", "gcs"):
        options["use_listings_cache"] = False
    try:
        path: UPath = UPath(location, protocol=protocol, **options)
        return path
    except (ImportError, ValueError) as exc:
        hint = " (pip install s3fs)" if protocol in ("s3", "s3a") else ""
        raise error(
            f"{what} {location!r}: protocol {protocol!r} is not usable: {exc}{hint}"
        ) from None


def is_local(path: StorePath) -> bool:
    return isinstance(path, Path)


def write_whole(path: StorePath, data: bytes) -> None:
    """Replace the file at `path` with `data`: readers see the old file or all of the new one."""
    if isinstance(path, Path):
        write_atomic(path, data)
    else:
        path.write_bytes(data)


def write_streamed(
    path: StorePath, fill: Callable[[IO[bytes]], T], spool_dir: str | None = None
) -> T:
    """Replace the file at `path` with what `fill` writes into a new file, open for reading and
    writing (it may seek back); what `fill` returns. Readers see the old file or all of the
    new one; memory holds what `fill` holds, and on an object store an upload's parts.

    Locally the file is written under a temporary name and renamed (`write_filled`); on
    an object store it is written to a local file in `spool_dir` first, then uploaded: on
    Linux a file without a name, which a killed process does not leave behind (`spool`).
    """
    if isinstance(path, Path):
        return write_filled(path, fill)
    with spool_file(spool_dir) as (out, local):
        made = fill(out)
        out.flush()
        size = os.fstat(out.fileno()).st_size
        path.fs.put_file(local, path.path, **_upload_options(path, size))
    return made


def _upload_options(path: UPath, size: int) -> dict[str, int]:
    """S3's upload in parts of `PART_BYTES` (s3fs sends 50 MiB parts, ten at a time); any
    other store's `put_file` copies a block at a time anyway."""
    protocols = path.fs.protocol
    if "s3" not in (protocols if isinstance(protocols, tuple) else (protocols,)):
        return {}
    return {"chunksize": max(PART_BYTES, -(-size // _MAX_PARTS)), "max_concurrency": _UPLOADS}


def create_whole(path: StorePath, data: bytes) -> None:
    """Create the file at `path` with `data`; FileExistsError if it exists, whoever wrote it.

    The check and the write are one step: locally a hard link, on S3 a conditional
    PUT (s3fs sends `If-None-Match: *` for mode "create"). Another fsspec store
    checks first and then writes, which is no better than its own guarantees.
    """
    if isinstance(path, Path):
        create_exclusive(path, data)
    else:
        path.fs.pipe_file(path.path, data, mode="create")


def remove_tree(path: StorePath) -> None:
    """Delete a directory and everything under it; a missing one is no error."""
    if isinstance(path, Path):
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.fs.rm(path.path, recursive=True)


def remove_file(path: StorePath) -> None:
    if isinstance(path, Path):
        path.unlink(missing_ok=True)
    elif path.exists():
        path.fs.rm(path.path)


def copy_whole(source: StorePath, target: StorePath) -> None:
    """Copy a file so that readers of `target` see nothing or all of it.

    On an object store this is one server-side copy; locally, an atomic write.
    Copying again over an earlier copy of the same bytes changes nothing.
    """
    if isinstance(source, Path) and isinstance(target, Path):
        write_atomic(target, source.read_bytes())
    elif not isinstance(source, Path) and not isinstance(target, Path):
        source.fs.copy(source.path, target.path)
    else:
        write_whole(target, source.read_bytes())


def files_under(directory: StorePath) -> list[StorePath]:
    """Every file below `directory`, at any depth, sorted; none when it does not exist."""
    if not directory.exists():
        return []
    return sorted((p for p in directory.rglob("*") if p.is_file()), key=str)


def children(directory: StorePath) -> list[StorePath]:
    """The entries of `directory`, by name; none when it does not exist.

    On an object store a directory is only a prefix of the objects below it: it
    vanishes when another process deletes its last object, even between the
    existence check and the listing, so that race reads as "does not exist".
    """
    if not directory.exists():
        return []
    try:
        found: list[StorePath] = list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(found, key=lambda p: p.name)
