"""The cluster's JVMs as processes: process groups, signals, liveness, free ports.

A minimal copy of what `broker/processes.py` does for the broker's JVM (the
two folders sit on one layer and do not import each other), plus what a
cluster needs beyond one process: a whole process group, and a process tree.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

# Daemons this process started, kept until stopped: a Popen dropped while its
# process runs warns (ResourceWarning), and a stop in this process reaps them.
children: dict[int, subprocess.Popen[bytes]] = {}


def settle_child(pid: int) -> None:
    """Let the Popen of a daemon we started notice that its process is gone."""
    proc = children.pop(pid, None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _state(pid: int) -> str | None:
    """The process state letter from /proc (Z: zombie), None if it is gone or unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[0] if fields else None


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (reaping it first if it is our exited child)."""
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _state(pid) != "Z"


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
            fields = (entry / "stat").read_text(encoding="utf-8").rpartition(")")[2].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Signal the process group a daemon leads (it was started in its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def wait_group_exit(pgid: int, timeout_s: float) -> bool:
    """Wait until nothing of process group `pgid` runs; False if some of it still does."""
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        proc = children.get(pgid)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)  # wakes as soon as the leader exits
        else:
            time.sleep(0.05)
    return True


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children...), from /proc; [] without it."""
    parent_of: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = (entry / "stat").read_text(encoding="utf-8")
                    parent_of[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
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


def free_ports(count: int) -> list[int]:
    """Distinct loopback ports that are free right now (held open together while picked)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()
