"""Where checkpoints live: a local directory, or an object store through fsspec.

A checkpoint directory is a path or a URL (`file://`, `s3://`, any protocol fsspec
knows). Reading and listing look the same everywhere (pathlib's API, through
universal-pathlib); writing and deleting differ:

- on a local disk a file is written to a temporary name, synced and renamed, so a
  crash never leaves a torn file;
- on an object store one PUT makes the whole object visible or nothing (S3 has
  read-after-write consistency), so it is written in place; there are no
  directories to create or sync.

Credentials and endpoints of object stores come from the environment, as every
AWS tool reads them (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_ENDPOINT_URL`...): the Spark executors that write state snapshots inherit it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, TypeAlias

from upath import UPath

from laminar_kafka.checkpoint.files import write_atomic
from laminar_kafka.errors import CheckpointError

StorePath: TypeAlias = "Path | UPath"


def store_path(location: str) -> StorePath:
    """The path of a checkpoint location: a local Path, or a UPath for a URL."""
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
        raise CheckpointError(
            f"checkpoint directory {location!r}: protocol {protocol!r} is not usable: {exc}{hint}"
        ) from None


def is_local(path: StorePath) -> bool:
    return isinstance(path, Path)


def write_whole(path: StorePath, data: bytes) -> None:
    """Replace the file at `path` with `data`: readers see the old file or all of the new one."""
    if isinstance(path, Path):
        write_atomic(path, data)
    else:
        path.write_bytes(data)


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
