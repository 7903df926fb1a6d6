"""Durable file writes: write a temporary file, fsync it, rename, fsync the directory.

A reader sees either the old file or the whole new one, never a torn write, and a
rename that returned survives a power cut once the directory is synced. Directories
created on the way are made durable too (their parent is synced), or a power cut
could lose a new `chk-<id>` directory with the manifest inside it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

T = TypeVar("T")


def _writer() -> str:
    """This process and thread: two writers of one name never share a temporary file."""
    return f"{os.getpid()}-{threading.get_ident()}"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically and durably."""
    write_filled(path, lambda out: out.write(data))


def write_filled(path: Path, fill: Callable[[IO[bytes]], T]) -> T:
    """Replace `path` atomically and durably with what `fill` writes into a new file (open
    for reading and writing, so `fill` may seek back); what `fill` returns."""
    make_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{_writer()}.tmp")
    try:
        with open(tmp, "w+b") as out:
            made = fill(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)
    return made


def create_exclusive(path: Path, data: bytes) -> None:
    """Create `path` holding `data`, durably; FileExistsError if it exists already.

    The whole file is written under a temporary name first and then hard-linked to
    `path`: the link fails if `path` exists (as O_EXCL would), and a reader never
    sees a file without all of its bytes.
    """
    make_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{_writer()}.new")
    try:
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    fsync_dir(path.parent)


def make_dirs(directory: Path) -> None:
    """Create `directory` and its missing parents, syncing each new entry's parent."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for new in reversed(missing):
        with contextlib.suppress(FileExistsError):  # a concurrent writer made it first
            new.mkdir()
        fsync_dir(new.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
