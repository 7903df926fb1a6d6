"""A daemon home's small text files: replaced whole, and the tail of its logs.

State files (pids, ports, addresses) are read by other processes at any
time, so they are replaced atomically; errors quote the last lines of a log.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TAIL_LINES", "tail_text", "write_atomic"]

TAIL_LINES = 25


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` at once: a reader sees the old file or the new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def tail_text(text: str, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of `text`, without its trailing blank ones."""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def daemon_home(variable: str, name: str) -> Path:
    """`$variable`, else `~/.cache/laminar-kafka/<name>`: where a local daemon lives."""
    env = os.environ.get(variable)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "laminar-kafka" / name
