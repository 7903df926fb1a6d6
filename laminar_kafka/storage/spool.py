"""A local file to spool an upload in, which a killed process does not leave behind.

A task writes a state file for an object store into a local file first and uploads
it from there; a task killed with SIGKILL runs no `finally`, so a named spool file
would stay on the disk for good, hundreds of MiB a checkpoint. On Linux the file
has no name at all (`tempfile.TemporaryFile`: O_TMPFILE, or a name unlinked at once)
and the upload opens it again as `/proc/self/fd/<fd>`: the kernel frees its blocks
when its last descriptor closes, however the process ends. Where `/proc` cannot
open it again (not Linux), the file is named `.laminar-upload-*` and removed when
the write ends, which a killed process does not do.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

PREFIX = ".laminar-upload-"
"""The start of a named spool file's name (where /proc cannot open an unnamed one)."""


@contextmanager
def spool_file(directory: str | None = None) -> Iterator[tuple[IO[bytes], str]]:
    """A new empty file in `directory` (None: the temp directory), open for reading and
    writing, and a path that opens it again for an upload; gone when the block exits."""
    with tempfile.TemporaryFile(dir=directory) as out:
        again = f"/proc/self/fd/{out.fileno()}"
        if _opens_again(again, out.fileno()):
            yield out, again
            return
    handle, name = tempfile.mkstemp(prefix=PREFIX, dir=directory)
    try:
        with os.fdopen(handle, "w+b") as named:
            yield named, name
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _opens_again(path: str, fd: int) -> bool:
    """Whether opening `path` gives the file open as `fd`."""
    try:
        again = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        seen, mine = os.fstat(again), os.fstat(fd)
    finally:
        os.close(again)
    return (seen.st_dev, seen.st_ino) == (mine.st_dev, mine.st_ino)
