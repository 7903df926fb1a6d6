"""Resident memory of a process tree, sampled on a thread while a benchmark runs.

The systems compared start children (a Spark JVM, Python workers), so what a
system costs is the RSS of its whole process tree, not of one process.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["RSS_INTERVAL_S", "PeakRss", "process_rss_bytes", "tree_rss_bytes", "tree_sum"]

RSS_INTERVAL_S: Final = 0.5
"""Default sampling interval of `PeakRss`."""


def tree_rss_bytes(root: int) -> int:
    """Summed RSS of process `root` and all its descendants, from /proc (Linux)."""
    return tree_sum(root, lambda fields: int(fields[21])) * os.sysconf("SC_PAGE_SIZE")


def tree_sum(root: int, value: Callable[[list[bytes]], int]) -> int:
    """`value` of each /proc/<pid>/stat (its fields after the command name, so field 3
    of stat is index 0) summed over process `root` and all its descendants."""
    parents: dict[int, int] = {}
    values: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])  # field 4 of stat: ppid
        values[pid] = value(fields)
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += values.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


def process_rss_bytes(pid: int) -> int:
    """RSS of process `pid` alone, without its children."""
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    """Samples `measure(root)` (default: the process tree's RSS) every `interval_s` on a
    thread, with their times."""

    def __init__(
        self,
        root: int,
        interval_s: float = RSS_INTERVAL_S,
        measure: Callable[[int], int] = tree_rss_bytes,
    ) -> None:
        self._root = root
        self._measure = measure
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-rss", daemon=True)
        self.samples: list[tuple[float, int]] = []

    def _run(self) -> None:
        while True:
            self.samples.append((time.monotonic(), self._measure(self._root)))
            if self._stop.wait(self._interval_s):
                return

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def peak_mib(self, until: float | None = None) -> float:
        """The largest sample taken up to `until` (a `time.monotonic()` stamp; None: all)."""
        end = math.inf if until is None else until
        return max((size for at, size in self.samples if at <= end), default=0) / 2**20
