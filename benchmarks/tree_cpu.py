"""CPU time of a process tree over a benchmark's timed span, from /proc (Linux).

The ceiling loops time their own CPU (`time.process_time`); laminar, Quix Streams
and Spark run children (a JVM, Python workers) whose CPU a process's own clock
misses. So the tree's CPU (user + system, with that of reaped children) is sampled
on a thread, and the span's share is read off the samples by linear
interpolation: within a sample interval (0.2 s) times the cores at each end.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from typing import Final

from benchmarks.memory import PeakRss, tree_sum

__all__ = ["CPU_INTERVAL_S", "cpu_in_span", "sample_tree_cpu", "tree_cpu_ticks"]

CPU_INTERVAL_S: Final = 0.2
TICKS_PER_S: Final = os.sysconf("SC_CLK_TCK")


def tree_cpu_ticks(root: int) -> int:
    """Clock ticks of CPU used by `root` and its descendants, the reaped ones included."""
    # Fields 14-17 of stat: utime, stime, and cutime, cstime of waited-for children.
    return tree_sum(root, lambda fields: sum(int(f) for f in fields[11:15]))


def sample_tree_cpu(root: int) -> PeakRss:
    """A sampler of `root`'s tree CPU ticks (use it as a context manager)."""
    return PeakRss(root, interval_s=CPU_INTERVAL_S, measure=tree_cpu_ticks)


def cpu_in_span(samples: Sequence[tuple[float, int]], start: float, end: float) -> float | None:
    """CPU seconds between the monotonic stamps `start` and `end` (None: not covered)."""
    if not samples or start < samples[0][0] or end > samples[-1][0] or end <= start:
        return None
    return (_at(samples, end) - _at(samples, start)) / TICKS_PER_S


def _at(samples: Sequence[tuple[float, int]], when: float) -> float:
    for (t0, v0), (t1, v1) in itertools.pairwise(samples):
        if t0 <= when <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (when - t0) / (t1 - t0)
    return float(samples[-1][1])
