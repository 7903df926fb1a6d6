"""A cgroup v1 memory controller that caps one worker task's memory.

Why a cgroup and not `RLIMIT_AS` (`ulimit -v`): the disk state store is LMDB,
which maps its whole file (a map of 1 TiB) into the task's address space, so an
address-space cap counts the map and refuses the store at once, whatever the
task really uses. A memory cgroup counts the pages the task has, anonymous or of
files: its anonymous memory over the limit gets the task OOM-killed (there is no
swap to push it to), while the LMDB file's pages in the page cache, also counted,
are reclaimed by the kernel when the group reaches its limit (each reclaim adds
to `memory.failcnt`).

The cap is a child of this process's own memory cgroup (the `memory:` line of
/proc/self/cgroup), which the harness may write to; processes are moved in by
pid and back to the parent before the child is removed.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "CGROUP_V1_MEMORY",
    "CapUsage",
    "MemoryCap",
    "memory_cgroup_path",
    "oom_kills",
    "stat_value",
]

CGROUP_V1_MEMORY: Final = Path("/sys/fs/cgroup/memory")


def memory_cgroup_path(proc_cgroup: str) -> str | None:
    """The memory controller's cgroup of a /proc/<pid>/cgroup text, or None when no
    v1 hierarchy has it ("4:memory:/process_api/ab" -> "/process_api/ab")."""
    for line in proc_cgroup.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) == 3 and "memory" in parts[1].split(","):
            return parts[2]
    return None


def oom_kills(oom_control: str) -> int:
    """The `oom_kill` count of a `memory.oom_control` text (0 when the kernel has none)."""
    for line in oom_control.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


def stat_value(memory_stat: str, name: str) -> int:
    """One counter of a `memory.stat` text ("rss": anonymous memory charged, "cache":
    page cache), 0 when absent."""
    for line in memory_stat.splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return int(value)
    return 0


@dataclass(frozen=True)
class CapUsage:
    """What a cap's group used: its peak (anonymous and page cache), how often it hit the
    limit, and how many of its processes the kernel killed for memory."""

    max_usage_bytes: int
    failcnt: int
    oom_kills: int


class MemoryCap:
    """A memory cgroup of `limit_bytes` under `parent`; `add(pid)` moves a process in."""

    def __init__(self, parent: Path, name: str, limit_bytes: int) -> None:
        self.parent = parent
        self.path = parent / name
        self.limit_bytes = limit_bytes
        self.path.mkdir()
        try:
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
            # Charge what a moved process already has to the cap too (deprecated in
            # newer kernels, where moving leaves the charge behind: tolerated).
            with contextlib.suppress(OSError):
                (self.path / "memory.move_charge_at_immigrate").write_text("1")
        except BaseException:
            self.path.rmdir()
            raise

    @classmethod
    def under_own(
        cls,
        label: str,
        limit_bytes: int,
        root: Path = CGROUP_V1_MEMORY,
        proc_cgroup: str | None = None,
    ) -> MemoryCap:
        """A new cap `<label>-<random>` under this process's memory cgroup."""
        text = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
        own = memory_cgroup_path(text)
        if own is None or not (root / own.lstrip("/")).is_dir():
            raise OSError("no cgroup v1 memory controller to cap the tasks with")
        return cls(root / own.lstrip("/"), f"{label}-{uuid.uuid4().hex[:8]}", limit_bytes)

    def add(self, pid: int) -> bool:
        """Move process `pid` (all its threads) into the cap; False if it has ended."""
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
        except ProcessLookupError:
            return False
        except OSError as exc:
            if exc.errno == 3:  # ESRCH, reported as a plain OSError by some kernels
                return False
            raise
        return True

    def pids(self) -> list[int]:
        """The processes in the cap now."""
        return [int(p) for p in self._read("cgroup.procs").split()]

    def anon_bytes(self) -> int:
        """The anonymous memory charged to the cap now (memory.stat `rss`): what the kernel
        cannot reclaim without swap, where the usage also counts page cache."""
        return stat_value(self._read("memory.stat"), "rss")

    def usage(self) -> CapUsage:
        return CapUsage(
            int(self._read("memory.max_usage_in_bytes") or 0),
            int(self._read("memory.failcnt") or 0),
            oom_kills(self._read("memory.oom_control")),
        )

    def remove(self) -> None:
        """Move what is still inside back to the parent, then remove the cap."""
        for pid in self.pids():
            with contextlib.suppress(OSError):
                (self.parent / "cgroup.procs").write_text(str(pid))
        with contextlib.suppress(FileNotFoundError):
            self.path.rmdir()

    def _read(self, name: str) -> str:
        try:
            return (self.path / name).read_text()
        except FileNotFoundError:
            return ""
