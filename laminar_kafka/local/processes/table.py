"""What the OS process table says about a pid: alive, its group, its command, its tree.

Read from /proc where there is one (Linux), else from `kill(pid, 0)` and `ps`;
the broker and the cluster use it to tell their daemons from reused pids.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

__all__ = ["alive", "cmdline", "descendants", "group_alive"]


def _reap(pid: int) -> bool:
    """Reap `pid` if it is our exited child; whether it was."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
    except OSError:  # not our child (ChildProcessError), or already reaped
        return False
    return reaped == pid


def _stat_fields(stat: str) -> list[str]:
    """The fields of a /proc/<pid>/stat line after the parenthesised command name."""
    return stat.rpartition(")")[2].split()


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (reaping it first if it is our exited child)."""
    if _reap(pid):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return True
    # Field 3, after the parenthesised command name, is the state; Z is a zombie.
    return _stat_fields(stat)[:1] != ["Z"]


def group_alive(pgid: int) -> bool:
    """Whether any live (not zombie) process is left in process group `pgid`."""
    _reap(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not Path("/proc/self").exists():
        return True
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            fields = _stat_fields((entry / "stat").read_text(encoding="utf-8"))
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children...), from /proc; [] without it."""
    parent_of: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = (entry / "stat").read_text(encoding="utf-8")
                    parent_of[int(entry.name)] = int(_stat_fields(stat)[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        below = [child for child, parent in parent_of.items() if parent in frontier]
        found.extend(below)
        frontier = below
    return found


def cmdline(pid: int) -> str | None:
    """The command line of `pid` (from /proc, else `ps`), None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None
    except OSError:
        return None
    else:
        return raw.replace(b"\0", b" ").decode("utf-8", errors="replace")
    try:  # no /proc (macOS): ask ps
        done = subprocess.run(
            ["ps", "-ww", "-o", "command=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None
