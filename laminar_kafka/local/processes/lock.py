"""File locks (flock) that make processes take turns: a daemon's home, a download.

Any number of objects in any number of processes may manage one home; its
lock (`<home>/.lock`) makes their starts and stops take turns.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["file_lock", "home_lock", "home_lock_or_raise"]


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created, with its folder, if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def home_lock(home: Path) -> contextlib.AbstractContextManager[None]:
    """Hold the exclusive lock of `home` (created if missing) for the block."""
    return file_lock(home / ".lock")


@contextlib.contextmanager
def home_lock_or_raise(
    home: Path, error: Callable[[str], Exception], message: str
) -> Iterator[None]:
    """`home_lock(home)`; an OSError in it raises `error(f"{message}: {exc}")` instead."""
    try:
        with home_lock(home):
            yield
    except OSError as exc:
        raise error(f"{message}: {exc}") from exc
